// Small DOM helpers the views share, and the status line.

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

// Shows `text` in the status line (an error in red); `action` adds a button to it (Undo).
export function say(text, isError = false, action) {
  const message = document.querySelector('#message');
  message.replaceChildren(text);
  message.classList.toggle('error', isError);
  if (action) message.append(' ', button(action.label, action.label, action.run));
}
