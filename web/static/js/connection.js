// connection.js: one WebSocket to the relay that survives drops, as the Go
// client (client/) does: it connects with ?token=…&client=web, sends ping
// after 30 s of silence and gives up on the socket 20 s after a ping that
// got nothing back (5 s and 10 s while a conversation it follows runs a
// turn: then events are due, and silence is most likely a relay that
// stopped, which it leaves in about 15 s), reconnects with a backoff from 0.5 s to 15 s (doubling,
// ±20 % jitter), and re-subscribes to every conversation it follows with
// sinceSeq (the last seq it delivered) and the epoch it holds. Events reach
// the page once and in order: while a resubscription replays, they are
// held, then sorted and stripped of what was already delivered. A first
// subscription has no copy a reset could replace, so its replay reaches
// the page as it comes, in order: a long conversation is drawn while it
// streams in, not after its end.
//
// A prompt sent on a socket that then dropped may never have reached the
// relay (docs/protocol.md, Lost sends). Each copilot:send carries a
// clientId; its echo (copilot:user_message with it) says it arrived, and
// after a reconnect copilot:subscribed says whether the relay still holds
// it (starting). One sent on an earlier socket that neither names is
// reported to the page as {type: 'lost', data: {conversationId,
// clientId}}, which gives the prompt back to the user: it is never sent
// again from here. The prompts waited for are kept in the tab's
// sessionStorage too, so that a reload (or a phone's browser dropping the
// tab) right after a send asks the relay about them all the same: the new
// page follows their conversations and reports them lost alike.

import { load, store } from './storage.js';

// The heartbeat, the Go client's numbers (client.DefaultPingInterval…):
// web/unit/connection.test.mjs checks them against
// client/testdata/heartbeat.json, which Go writes from its own.
export const PING_AFTER = 30_000;
export const PONG_WITHIN = 20_000;
export const STREAMING_PING_AFTER = 5_000;
export const STREAMING_PONG_WITHIN = 10_000;
const BACKOFF_MIN = 500;
const BACKOFF_MAX = 15_000;
const PROBE_WITHIN = 5_000; // a pong after coming back, or the socket is dead

// UNSENT_KEY is where the tab's sessionStorage keeps the prompts sent whose
// echo has not come ([{conversationId, clientId, prompt}], oldest first),
// at most UNSENT_KEPT of them, the newest, and UNSENT_CHARS of text in all
// (the browser allows a few MB an origin): a longer prompt is waited for
// in memory only.
export const UNSENT_KEY = 'pilotdesk.unsent';
export const UNSENT_KEPT = 16;
export const UNSENT_CHARS = 1_000_000;

// keptSends are the prompts an earlier page of this tab sent and kept
// (UNSENT_KEY); what is not one is left out.
function keptSends() {
  let list;
  try {
    list = JSON.parse(load(UNSENT_KEY, { session: true }) || '[]');
  } catch {
    return [];
  }
  if (!Array.isArray(list)) return [];
  return list.filter((u) => u && typeof u.conversationId === 'string' && u.conversationId !== ''
    && typeof u.clientId === 'string' && u.clientId !== '' && typeof u.prompt === 'string').slice(-UNSENT_KEPT);
}

// Messages about a conversation that are not events: they have no seq of
// their own to order or de-duplicate by.
const NOT_EVENTS = new Set(['copilot:subscribed', 'copilot:deleted', 'copilot:conversation', 'error']);

export class Connection {
  /**
   * @param {object} o
   * @param {string} o.url the relay's /ws URL, without token
   * @param {string} o.token the token ('' when the relay has none)
   * @param {(msg: {type: string, data: object}) => void} o.onMessage
   * @param {(state: string, info?: object) => void} o.onState states:
   *   connecting, live, reconnecting ({inMs}), refused ({reason}), closed
   */
  constructor({ url, token, onMessage, onState }) {
    this.url = url;
    this.token = token;
    this.onMessage = onMessage;
    this.onState = onState;
    this.ws = null;
    this.subs = new Map(); // conversationId → {lastSeq, epoch, syncing, fresh, buf, streaming}
    this.backoff = BACKOFF_MIN;
    this.failures = 0; // connections that failed before opening, in a row
    this.stopped = false;
    this.silence = null;
    this.retry = null;
    this.connects = 0; // how many times a socket opened (the tests read it)
    this.attempts = 0; // how many times a socket was tried
    this.gaveUp = false; // the token was revoked: no retry
    // Prompts sent whose echo has not come: clientId → {conversationId,
    // prompt, socket (the value of connects when the relay was last known to hold
    // it: the socket it went on, or one whose copilot:subscribed named it
    // starting)}. Those an earlier page of this tab kept went on a socket
    // before any of this page's (0); their conversations are followed, so
    // that the first subscription says whether the relay has them.
    this.unechoed = new Map();
    this.restored = keptSends(); // [{conversationId, clientId, prompt}], for the page's own records
    for (const u of this.restored) this.unechoed.set(u.clientId, { conversationId: u.conversationId, prompt: u.prompt, socket: 0 });
    for (const u of this.restored) this.follow(u.conversationId);
  }

  /**
   * retryNow tries the relay at once instead of waiting out the backoff
   * (the page came back into view, the browser came online, or the user
   * asked); a socket that looks open is asked for a pong within a few
   * seconds, since a phone may have suspended it without a close.
   */
  retryNow() {
    if (this.stopped || this.gaveUp) return;
    if (this.ws) {
      if (!this.live) return; // a connection being made
      if (this.send('ping')) {
        clearTimeout(this.silence);
        this.silence = setTimeout(() => {
          if (this.ws) this.ws.close(4000, 'no answer to ping');
        }, PROBE_WITHIN);
      }
      return;
    }
    this.backoff = BACKOFF_MIN;
    this.open('reconnecting');
  }

  start() {
    this.stopped = false;
    this.gaveUp = false;
    this.open('connecting');
  }

  /** stop closes the socket for good. */
  stop() {
    this.stopped = true;
    clearTimeout(this.retry);
    clearTimeout(this.silence);
    if (this.ws) this.ws.close(1000, 'closed by the page');
    this.ws = null;
    this.onState('closed');
  }

  get live() {
    return !!this.ws && this.ws.readyState === WebSocket.OPEN && this.ready;
  }

  /** send sends one message; false when there is no live socket. */
  send(type, data) {
    if (!this.live) return false;
    this.ws.send(JSON.stringify(data === undefined ? { type } : { type, data }));
    return true;
  }

  /**
   * sendPrompt sends copilot:send (data names its clientId) and watches
   * for its echo; false when there is no live socket.
   */
  sendPrompt(data) {
    if (!this.send('copilot:send', data)) return false;
    if (typeof data.clientId === 'string') {
      this.unechoed.set(data.clientId, { conversationId: data.conversationId, prompt: data.prompt, socket: this.connects });
      this.keepSends();
    }
    return true;
  }

  // settle stops waiting for the echo of clientId (it came, the relay
  // refused the send, or it is reported lost).
  settle(clientId) {
    if (this.unechoed.delete(clientId)) this.keepSends();
  }

  // keepSends writes the prompts waited for to the tab's sessionStorage
  // (the newest that fit UNSENT_KEPT and UNSENT_CHARS), for a page loaded
  // after this one. Where the browser does not keep the list, it keeps
  // none rather than an old one, whose prompts may have come since.
  keepSends() {
    const list = [];
    let chars = 0;
    for (const [clientId, u] of [...this.unechoed].reverse()) {
      if (list.length === UNSENT_KEPT) break;
      const n = u.prompt.length + u.conversationId.length + clientId.length;
      if (chars + n > UNSENT_CHARS) continue;
      chars += n;
      list.unshift({ conversationId: u.conversationId, clientId, prompt: u.prompt });
    }
    if (!store(UNSENT_KEY, list.length ? JSON.stringify(list) : '', { session: true })) store(UNSENT_KEY, '', { session: true });
  }

  // lostSends are the prompts for conversation id sent on an earlier
  // socket than this one, whose echo has not come, and which d (the
  // copilot:subscribed of this socket) does not name as starting: the
  // relay does not have them. One it names is held now by this socket.
  lostSends(id, d) {
    const lost = [];
    const starting = d.starting && typeof d.starting === 'object' ? d.starting.clientId : undefined;
    for (const [clientId, u] of this.unechoed) {
      if (u.conversationId !== id || u.socket >= this.connects) continue;
      if (clientId === starting) {
        u.socket = this.connects;
        continue;
      }
      this.settle(clientId);
      lost.push({ type: 'lost', data: { conversationId: id, clientId } });
    }
    return lost;
  }

  /**
   * follow subscribes to a conversation and replays its whole history (or,
   * when it is followed already, does nothing). Its events then flow to
   * onMessage, and a reconnect resumes it where it stood.
   */
  follow(id) {
    if (this.subs.has(id)) return;
    // fresh: no copilot:subscribed has come yet (the first replay).
    this.subs.set(id, { lastSeq: 0, epoch: '', syncing: false, fresh: true, buf: [] });
    this.subscribe(id);
  }

  /** forget drops a conversation that is gone (deleted). */
  forget(id) {
    this.subs.delete(id);
  }

  following(id) {
    return this.subs.has(id);
  }

  subscribe(id) {
    const s = this.subs.get(id);
    if (!s || !this.live) return;
    if (s.fresh && s.lastSeq > 0) {
      // A first replay cut short (the socket dropped): what it delivered
      // names no epoch, so nothing tells it from another history's. The
      // copy starts over.
      s.lastSeq = 0;
      this.onMessage({ type: 'reset', data: { conversationId: id, epoch: '' } });
    }
    s.syncing = true;
    s.buf = [];
    const data = { conversationId: id, sinceSeq: s.lastSeq };
    if (s.epoch) data.epoch = s.epoch;
    this.send('copilot:subscribe', data);
  }

  // ---- the socket ----

  open(state) {
    clearTimeout(this.retry);
    if (this.stopped) return;
    this.attempts++;
    this.onState(state);
    const u = new URL(this.url);
    if (this.token) u.searchParams.set('token', this.token);
    u.searchParams.set('client', 'web');
    let ws;
    try {
      ws = new WebSocket(u.href);
    } catch (err) {
      this.scheduleRetry(String(err));
      return;
    }
    this.ws = ws;
    this.ready = false;
    let opened = false;
    ws.addEventListener('open', () => {
      if (ws !== this.ws) return;
      opened = true;
      this.ready = true;
      this.failures = 0;
      this.backoff = BACKOFF_MIN;
      this.connects++;
      this.heard();
      this.onState('live');
      for (const id of this.subs.keys()) this.subscribe(id);
    });
    ws.addEventListener('message', (ev) => {
      if (ws !== this.ws) return;
      try {
        this.receive(ev.data);
      } finally {
        // After receive: the message may have started or ended a turn,
        // which sets how long the next silence may be.
        if (ws === this.ws) this.heard();
      }
    });
    ws.addEventListener('close', (ev) => {
      if (ws !== this.ws) return;
      this.ws = null;
      this.ready = false;
      clearTimeout(this.silence);
      if (this.stopped) return;
      if (ev.code === 4003) {
        // The token was revoked: trying again would only be refused.
        this.gaveUp = true;
        this.onState('refused', { reason: 'revoked' });
        return;
      }
      if (!opened) this.failures++;
      this.scheduleRetry(ev.reason || `closed (${ev.code})`);
    });
  }

  async scheduleRetry(why) {
    if (this.stopped) return;
    const jitter = 1 + (Math.random() * 0.4 - 0.2);
    const wait = Math.round(this.backoff * jitter);
    this.backoff = Math.min(this.backoff * 2, BACKOFF_MAX);
    this.retry = setTimeout(() => this.open('reconnecting'), wait);
    let refused = false;
    if (this.failures >= 2) {
      // A browser does not show why an upgrade failed. When the relay
      // answers /healthz but refuses the socket, the token is the likely
      // reason (or this page's origin), not the network.
      refused = await this.relayAnswers();
    }
    if (this.stopped || this.ws) return;
    if (refused) this.onState('refused', { reason: 'token', inMs: wait });
    else this.onState('reconnecting', { inMs: wait, why, failures: this.failures });
  }

  async relayAnswers() {
    try {
      const res = await fetch(new URL('healthz', new URL('.', location.href)), { cache: 'no-store' });
      return res.ok;
    } catch {
      return false;
    }
  }

  // heard restarts the silence timer: ping after PING_AFTER without a
  // message, drop the socket PONG_WITHIN after that; while a followed
  // conversation streams, after the STREAMING ones.
  heard() {
    clearTimeout(this.silence);
    this.silence = setTimeout(() => {
      if (!this.send('ping')) return;
      this.silence = setTimeout(() => {
        if (this.ws) this.ws.close(4000, 'no answer to ping');
      }, this.silenceLimits().pongWithin);
    }, this.silenceLimits().pingAfter);
  }

  // silenceLimits are how long the socket may be silent before a ping, and
  // after it: shorter while a conversation followed runs a turn (from
  // copilot:subscribed streaming or copilot:user_message to copilot:idle).
  silenceLimits() {
    for (const s of this.subs.values()) {
      if (s.streaming) return { pingAfter: STREAMING_PING_AFTER, pongWithin: STREAMING_PONG_WITHIN };
    }
    return { pingAfter: PING_AFTER, pongWithin: PONG_WITHIN };
  }

  receive(raw) {
    let msg;
    try {
      msg = JSON.parse(raw);
    } catch {
      console.warn('pilotdesk: the relay sent a frame that is not JSON');
      return;
    }
    if (!msg || typeof msg.type !== 'string') return;
    const d = msg.data && typeof msg.data === 'object' ? msg.data : {};
    msg.data = d;
    if (msg.type === 'ping') {
      this.send('pong');
      return;
    }
    if (msg.type === 'pong') return;
    const id = d.conversationId;
    const s = typeof id === 'string' ? this.subs.get(id) : undefined;

    // An echo says its prompt arrived, whether it comes live, in a
    // replay, or held until copilot:subscribed. A relay that echoes no
    // clientId (an older one) is matched by the prompt's text, the
    // oldest first: else every prompt would look lost after a reconnect.
    if (msg.type === 'copilot:user_message') {
      if (typeof d.clientId === 'string') this.settle(d.clientId);
      else {
        for (const [clientId, u] of this.unechoed) {
          if (u.conversationId === id && u.prompt === d.content) {
            this.settle(clientId);
            break;
          }
        }
      }
    }
    if (msg.type === 'error' && d.type === 'copilot:send') {
      // A refusal (the page shows it and gives the prompt back): nothing
      // more to wait for. The relay names the send refused; an older one
      // does not, and every send of this socket to the conversation is
      // taken as refused.
      if (typeof d.clientId === 'string' && d.clientId !== '') {
        if (this.unechoed.get(d.clientId)?.conversationId === id) this.settle(d.clientId);
      } else {
        for (const [clientId, u] of this.unechoed) if (u.conversationId === id && u.socket === this.connects) this.settle(clientId);
      }
    }
    if (s && msg.type === 'copilot:user_message') s.streaming = true;
    if (s && msg.type === 'copilot:idle') s.streaming = false;
    if (msg.type === 'copilot:subscribed' && s) {
      s.streaming = d.streaming === true;
      const out = [];
      if (d.reset || (s.epoch && d.epoch !== s.epoch)) {
        // The relay's history of this conversation is not the one held
        // here. Given our epoch it replayed from seq 0 and said reset, so
        // what it just replayed replaces the copy, with no second trip.
        s.lastSeq = 0;
        out.push({ type: 'reset', data: { conversationId: id, epoch: d.epoch } });
      }
      s.epoch = d.epoch || '';
      s.fresh = false;
      out.push(...this.flush(s));
      s.lastSeq = Math.max(s.lastSeq, Number(d.seq) || 0);
      out.push(msg);
      out.push(...this.lostSends(id, d));
      for (const m of out) this.onMessage(m);
      return;
    }
    if (msg.type === 'error' && d.type === 'copilot:subscribe' && s && s.syncing) {
      for (const m of this.flush(s)) this.onMessage(m);
      this.onMessage(msg);
      return;
    }
    if (msg.type === 'copilot:deleted' && s) {
      this.subs.delete(id);
      for (const [clientId, u] of this.unechoed) if (u.conversationId === id) this.settle(clientId);
      this.onMessage(msg);
      return;
    }
    if (s && !NOT_EVENTS.has(msg.type)) {
      const seq = Number(d.seq) || 0;
      if (s.syncing) {
        // The first replay's next event goes on at once; anything else
        // waits for copilot:subscribed.
        if (s.fresh && seq === s.lastSeq + 1 && s.buf.length === 0) {
          s.lastSeq = seq;
          this.onMessage(msg);
          return;
        }
        s.buf.push(msg);
        return;
      }
      if (seq > 0) {
        if (seq <= s.lastSeq) return; // delivered already
        s.lastSeq = seq;
      }
    }
    this.onMessage(msg);
  }

  // flush ends a resync: the held events in seq order, without the ones
  // delivered already.
  flush(s) {
    const buf = s.buf;
    s.buf = [];
    s.syncing = false;
    buf.sort((a, b) => (Number(a.data.seq) || 0) - (Number(b.data.seq) || 0));
    const out = [];
    for (const m of buf) {
      const seq = Number(m.data.seq) || 0;
      if (seq > 0 && seq <= s.lastSeq) continue;
      if (seq > 0) s.lastSeq = seq;
      out.push(m);
    }
    return out;
  }
}
