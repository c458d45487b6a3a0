// token.js: the relay's token. It arrives once in the URL's fragment
// (/#token=…), which browsers never send to a server, is kept in this
// origin's localStorage, and is taken out of the address bar at once so
// that it is not bookmarked, shared or shown over a shoulder.

import { load, store } from './storage.js';

const KEY = 'pilotdesk.token';
let memory = ''; // when storage is not available (some private modes)

/** takeToken returns the token: from the fragment (stored), else stored. */
export function takeToken() {
  const hash = location.hash.replace(/^#/, '');
  // Parsed by hand: URLSearchParams would turn a "+" of the token into a space.
  const parts = hash ? hash.split('&') : [];
  const at = parts.findIndex((p) => p.startsWith('token='));
  if (at >= 0) {
    const fromURL = safeDecode(parts[at].slice('token='.length));
    parts.splice(at, 1);
    const rest = parts.join('&');
    history.replaceState(history.state, '', location.pathname + location.search + (rest ? `#${rest}` : ''));
    if (fromURL) saveToken(fromURL);
  }
  return load(KEY) || memory;
}

function safeDecode(s) {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** saveToken keeps a token for this origin. */
export function saveToken(token) {
  memory = token; // for this page only when storage is not available
  store(KEY, token);
}

/** tokenFromInput accepts a bare token or a whole link with #token=…. */
export function tokenFromInput(text) {
  const t = text.trim();
  const m = /[#&]token=([^&\s]+)/.exec(t);
  return m ? safeDecode(m[1]) : t;
}

/** forgetDevice removes everything this page stored for this origin. */
export function forgetDevice() {
  memory = '';
  try {
    for (const k of Object.keys(localStorage)) if (k.startsWith('pilotdesk.')) localStorage.removeItem(k);
  } catch {
    // nothing stored
  }
}

/**
 * tokenCheck asks the relay whether it would let token in (GET token:
 * {valid, required}); null when it cannot tell (no answer, an older
 * relay).
 */
export async function tokenCheck(token) {
  try {
    const res = await fetch(new URL('token', new URL('.', location.href)), {
      cache: 'no-store', headers: token ? { Authorization: `Bearer ${token}` } : {},
    });
    if (!res.ok) return null;
    const t = await res.json();
    return typeof t.valid === 'boolean' ? t : null;
  } catch {
    return null;
  }
}
