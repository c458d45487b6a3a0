// storage.js: what the page keeps across reloads in this origin's
// localStorage (every tab of the browser), or, with session, in this tab's
// sessionStorage. Storage may be missing (some private modes) or full:
// then nothing is kept, and nothing fails.

// area is where key lives; it throws where the browser refuses storage.
function area(session) {
  return session ? sessionStorage : localStorage;
}

/** load returns what key holds, '' for nothing. */
export function load(key, { session = false } = {}) {
  try {
    return area(session).getItem(key) || '';
  } catch {
    return '';
  }
}

/**
 * store keeps value under key; an empty value removes the key. It returns
 * false when the browser did not (no storage, or full): the key then
 * holds what it held before.
 */
export function store(key, value, { session = false } = {}) {
  try {
    if (value) area(session).setItem(key, value);
    else area(session).removeItem(key);
    return true;
  } catch {
    return false; // not kept across reloads
  }
}
