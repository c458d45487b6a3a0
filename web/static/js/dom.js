// dom.js: building elements. Text always goes in as text nodes, never as
// HTML, so nothing an agent or a user wrote is ever parsed as markup.

/**
 * el makes an element. props: "class", "text" (textContent), "dataset",
 * on<event> (a function, added as a listener), anything else as an
 * attribute (true for a bare attribute, false/null/undefined to leave it
 * out). children: nodes or strings (strings become text nodes).
 */
export function el(tag, props, ...children) {
  const node = document.createElement(tag);
  if (props) {
    for (const [key, value] of Object.entries(props)) {
      if (value === undefined || value === null || value === false) continue;
      if (key === 'class') node.className = value;
      else if (key === 'text') node.textContent = value;
      else if (key === 'dataset') Object.assign(node.dataset, value);
      else if (key.startsWith('on')) {
        // Only functions: an "on…" attribute from a string would be
        // inline script, which the page's policy forbids anyway.
        if (typeof value === 'function') node.addEventListener(key.slice(2), value);
      } else node.setAttribute(key, value === true ? '' : String(value));
    }
  }
  append(node, children);
  return node;
}

/** append adds children (nodes, strings as text, nested arrays) to node. */
export function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child); // a string is appended as a text node
  }
  return node;
}

/** clear removes every child of node. */
export function clear(node) {
  node.replaceChildren();
  return node;
}

/** $ returns the element with id, and throws when the page lacks it. */
export function $(id) {
  const node = document.getElementById(id);
  if (!node) throw new Error(`pilotdesk: the page has no #${id}`);
  return node;
}
