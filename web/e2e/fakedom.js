// fakedom.js: the little of the DOM that dom.js and markdown.js use, for
// tests that run in Node without a browser: elements with attributes,
// children and text.

class Node_ {
  constructor(tag) {
    this.tagName = tag;
    this.childNodes = [];
    this.attributes = {};
    this.dataset = {};
    this.className = '';
  }

  // append moves nodes here, as the DOM's does: a node leaves its parent.
  append(...nodes) {
    for (const n of nodes) {
      const moved = n instanceof Fragment ? [...n.childNodes] : [typeof n === 'string' ? new Text(n) : n];
      for (const m of moved) {
        if (m.parent) m.parent.childNodes = m.parent.childNodes.filter((x) => x !== m);
        m.parent = this;
        this.childNodes.push(m);
      }
    }
  }

  get lastChild() { return this.childNodes[this.childNodes.length - 1] ?? null; }

  setAttribute(k, v) { this.attributes[k] = String(v); }

  addEventListener() {}

  replaceChildren(...nodes) {
    for (const n of this.childNodes) n.parent = null;
    this.childNodes = [];
    this.append(...nodes);
  }

  // querySelectorAll finds the descendants of one class ('.name'), the
  // only selector this fake knows.
  querySelectorAll(selector) {
    const m = /^\.([\w-]+)$/.exec(selector);
    if (!m) throw new Error(`fakedom: ${selector} is not one class`);
    const out = [];
    const walk = (n) => {
      for (const c of n.childNodes ?? []) {
        if (c.className?.split(' ').includes(m[1])) out.push(c);
        walk(c);
      }
    };
    walk(this);
    return out;
  }

  querySelector(selector) { return this.querySelectorAll(selector)[0] ?? null; }

  set textContent(t) {
    this.childNodes = [];
    this.append(String(t));
  }

  get textContent() { return this.childNodes.map((n) => n.textContent).join(''); }

  // html is a plain rendering for assertions: <tag>children</tag>.
  get html() {
    const inner = this.childNodes.map((n) => n.html).join('');
    return this.tagName ? `<${this.tagName}>${inner}</${this.tagName}>` : inner;
  }
}

class Fragment extends Node_ {
  constructor() { super(''); }
}

class Text {
  constructor(t) { this.textContent = t; }

  get html() { return this.textContent; }
}

/** install puts a fake document on globalThis, once. */
export function install() {
  globalThis.document ??= {
    createElement: (tag) => new Node_(tag),
    createDocumentFragment: () => new Fragment(),
  };
}
