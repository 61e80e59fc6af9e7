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

// A clock face drawn as SVG, for the history button: an emoji (🕘) is an empty box on a machine
// without an emoji font (a stock Debian desktop). Hidden from screen readers, whose name for
// the button is its label.
export function clockIcon() {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  for (const [k, v] of Object.entries({ viewBox: '0 0 16 16', width: '1em', height: '1em', 'aria-hidden': 'true', focusable: 'false', class: 'icon' })) svg.setAttribute(k, v);
  const face = document.createElementNS(ns, 'circle');
  for (const [k, v] of Object.entries({ cx: '8', cy: '8', r: '6.5', fill: 'none', stroke: 'currentColor', 'stroke-width': '1.5' })) face.setAttribute(k, v);
  const hands = document.createElementNS(ns, 'path');
  for (const [k, v] of Object.entries({ d: 'M8 4v4H5', fill: 'none', stroke: 'currentColor', 'stroke-width': '1.5', 'stroke-linecap': 'round' })) hands.setAttribute(k, v);
  svg.append(face, hands);
  return svg;
}

// Shows `text` in the status line (an error in red); `action` adds a button to it (Undo).
export function say(text, isError = false, action) {
  const message = document.querySelector('#message');
  message.replaceChildren(text);
  message.classList.toggle('error', isError);
  if (action) message.append(' ', button(action.label, action.label, action.run));
}
