// route.js: the page's address. A conversation's link is #/c/<conversationId>;
// #/ is the list. The token is never part of it: it comes once, in the
// first link's fragment (token.js).

const LINK = /^#\/c\/(.+)$/;

/** linkedId returns the conversation the address names, or ''. */
export function linkedId() {
  const m = LINK.exec(location.hash);
  if (!m) return '';
  try {
    return decodeURIComponent(m[1]);
  } catch {
    return '';
  }
}

/** linkOf is the address of conversation id. */
export function linkOf(id) {
  return `#/c/${encodeURIComponent(id)}`;
}
