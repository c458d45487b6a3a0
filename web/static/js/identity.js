// identity.js: who this page is on the relay, as answeredBy, sentBy and
// changedBy name it ({device, client}). The relay does not say so to a
// connection; the page learns it from the echo of what it sent itself (its
// prompt's sentBy, its answer's answeredBy, its switch's changedBy) and
// keeps it for its token, so that after a reload its own earlier prompts
// and answers are "You" again, as the window's are after a restart.

import { load, store } from './storage.js';

const PREFIX = 'pilotdesk.self.';

export class Identity {
  /** @param {string} token the token this page connects with */
  constructor(token) {
    this.key = PREFIX + hash(token || '');
    this.self = null;
    try {
      const v = JSON.parse(load(this.key) || 'null');
      if (valid(v)) this.self = { device: v.device, client: v.client };
    } catch {
      // nothing kept, or not readable
    }
  }

  /** learn records by as this page's identity (from an echo of its own). */
  learn(by) {
    if (!valid(by) || this.is(by)) return;
    this.self = { device: by.device, client: by.client };
    store(this.key, JSON.stringify(this.self)); // else known until the page closes
  }

  /** is reports whether by names this page's device and kind of client. */
  is(by) {
    return !!this.self && valid(by) && by.device === this.self.device && by.client === this.self.client;
  }
}

function valid(by) {
  return !!by && typeof by.device === 'string' && typeof by.client === 'string';
}

// hash names a token's entry without keeping the token a second time
// (FNV-1a, 32 bits: a key, not a secret).
function hash(s) {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16);
}
