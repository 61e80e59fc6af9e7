// Small DOM helpers the views share.

export function element(tag, text, attributes = {}) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  for (const [k, v] of Object.entries(attributes)) e.setAttribute(k, v);
  return e;
}

// A button named for screen readers by `label`; `kind` is its class (`danger`).
export function button(text, label, action, kind) {
  const b = element('button', text, { type: 'button', 'aria-label': label, title: label });
  if (kind) b.className = kind;
  b.addEventListener('click', action);
  return b;
}
