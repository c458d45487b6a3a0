// storage.js: what the page keeps across reloads in this origin's
// localStorage. Storage may be missing (some private modes) or full: then
// nothing is kept, and nothing fails.

/** load returns what key holds, '' for nothing. */
export function load(key) {
  try {
    return localStorage.getItem(key) || '';
  } catch {
    return '';
  }
}

/** store keeps value under key; an empty value removes the key. */
export function store(key, value) {
  try {
    if (value) localStorage.setItem(key, value);
    else localStorage.removeItem(key);
  } catch {
    // not kept across reloads
  }
}
