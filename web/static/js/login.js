// login.js: the page's login box, shown when the relay needs a token this
// page does not have, or refuses the one it has.

import { $ } from './dom.js';

/** showLogin shows the login box, saying why (a refusal's reason). */
export function showLogin(reason) {
  const why = {
    token: 'The relay is up but refused this page: the token is wrong or was revoked.',
    revoked: "This device's token was revoked or expired; ask for a new one.",
    forgotten: 'This device is forgotten: the token is no longer stored here.',
    missing: 'This page needs the token of the relay that served it.',
  }[reason] || '';
  $('login-why').textContent = why;
  $('login').hidden = false;
  if (reason !== 'token') $('login-token').focus();
}
