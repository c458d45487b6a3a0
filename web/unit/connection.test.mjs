// The web client's connection (web/static/js/connection.js) on a fake
// WebSocket: a first subscription's replay reaches the page as it comes,
// in order, before copilot:subscribed (a long conversation is drawn while
// it streams in); an event out of order waits for the end; a
// resubscription's replay is held until copilot:subscribed, as before; a
// first replay cut short by a dropped socket starts the copy over, since
// nothing names the history it came from. A prompt sent is waited for
// until its echo, its refusal (the one the relay's error names) or its
// loss, in the tab's sessionStorage too, so that a page loaded after it
// asks the relay about it and reports it lost alike. Its heartbeat is the Go
// client's: the numbers of client/testdata/heartbeat.json (which Go's
// TestHeartbeatFile writes from client.DefaultPingInterval…), and while a
// followed conversation runs a turn, a silent socket is pinged after 5 s
// and given up 10 s later. Run by scripts/web-unit.sh.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import {
  Connection,
  PING_AFTER,
  PONG_WITHIN,
  STREAMING_PING_AFTER,
  STREAMING_PONG_WITHIN,
  UNSENT_CHARS,
  UNSENT_KEY,
  UNSENT_KEPT,
} from '../static/js/connection.js';

// FakeSocket plays the browser's WebSocket: the test opens, sends
// messages to, and closes it.
class FakeSocket {
  static OPEN = 1;
  static all = [];

  constructor(url) {
    this.url = url;
    this.readyState = 0;
    this.sent = [];
    this.listeners = { open: [], message: [], close: [] };
    FakeSocket.all.push(this);
  }

  addEventListener(type, fn) {
    this.listeners[type].push(fn);
  }

  send(raw) {
    this.sent.push(JSON.parse(raw));
  }

  close(code = 1000, reason = '') {
    this.readyState = 3;
    for (const fn of this.listeners.close) fn({ code, reason });
  }

  emit(type, ev = {}) {
    if (type === 'open') this.readyState = FakeSocket.OPEN;
    for (const fn of this.listeners[type]) fn(ev);
  }

  deliver(type, data) {
    this.emit('message', { data: JSON.stringify({ type, data }) });
  }
}

globalThis.WebSocket = FakeSocket;
globalThis.location = { href: 'http://127.0.0.1/' };

function connect() {
  FakeSocket.all = [];
  const got = [];
  const conn = new Connection({ url: 'ws://127.0.0.1/ws', token: 't', onMessage: (m) => got.push(m), onState: () => {} });
  conn.open('connecting');
  const ws = FakeSocket.all[0];
  ws.emit('open');
  return { conn, ws, got };
}

const ev = (seq) => ({ conversationId: 'c', seq });
const seqs = (got) => got.filter((m) => m.type === 'copilot:delta').map((m) => m.data.seq);

test('a first replay reaches the page as it comes, in order', () => {
  const { conn, ws, got } = connect();
  conn.follow('c');
  assert.deepEqual(ws.sent.at(-1), { type: 'copilot:subscribe', data: { conversationId: 'c', sinceSeq: 0 } });
  ws.deliver('copilot:delta', ev(1));
  ws.deliver('copilot:delta', ev(2));
  assert.deepEqual(seqs(got), [1, 2], 'the replay waited for its end');
  ws.deliver('copilot:delta', ev(4)); // out of order: it waits
  ws.deliver('copilot:delta', ev(3));
  assert.deepEqual(seqs(got), [1, 2]);
  ws.deliver('copilot:subscribed', { conversationId: 'c', seq: 4, epoch: 'e1' });
  assert.deepEqual(seqs(got), [1, 2, 3, 4]);
  assert.equal(got.at(-1).type, 'copilot:subscribed');

  // A resubscription after the socket dropped: its replay is held until
  // copilot:subscribed, and what was delivered is not delivered again.
  ws.close(1006);
  clearTimeout(conn.retry);
  conn.open('reconnecting');
  const again = FakeSocket.all.at(-1);
  again.emit('open');
  assert.deepEqual(again.sent.at(-1), { type: 'copilot:subscribe', data: { conversationId: 'c', sinceSeq: 4, epoch: 'e1' } });
  again.deliver('copilot:delta', ev(5));
  assert.deepEqual(seqs(got), [1, 2, 3, 4], 'a resubscription delivered before its end');
  again.deliver('copilot:subscribed', { conversationId: 'c', seq: 5, epoch: 'e1' });
  assert.deepEqual(seqs(got), [1, 2, 3, 4, 5]);
  conn.stop();
});

test('a first replay cut short starts the copy over', () => {
  const { conn, ws, got } = connect();
  conn.follow('c');
  ws.deliver('copilot:delta', ev(1));
  ws.deliver('copilot:delta', ev(2));
  ws.close(1006);
  clearTimeout(conn.retry);
  conn.open('reconnecting');
  const again = FakeSocket.all.at(-1);
  again.emit('open');
  assert.deepEqual(got.map((m) => m.type), ['copilot:delta', 'copilot:delta', 'reset']);
  assert.deepEqual(again.sent.at(-1), { type: 'copilot:subscribe', data: { conversationId: 'c', sinceSeq: 0 } });
  again.deliver('copilot:delta', ev(1));
  again.deliver('copilot:subscribed', { conversationId: 'c', seq: 1, epoch: 'e2' });
  assert.deepEqual(seqs(got), [1, 2, 1], 'the copy did not start over');
  conn.stop();
});

const heartbeatFile = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'client', 'testdata', 'heartbeat.json');

test("the heartbeat's numbers are the Go client's", () => {
  const want = JSON.parse(readFileSync(heartbeatFile, 'utf8'));
  assert.deepEqual(
    {
      pingAfterMs: PING_AFTER,
      pongWithinMs: PONG_WITHIN,
      streamingPingAfterMs: STREAMING_PING_AFTER,
      streamingPongWithinMs: STREAMING_PONG_WITHIN,
    },
    want,
    `connection.js differs from ${heartbeatFile}`,
  );
});

const pings = (ws) => ws.sent.filter((m) => m.type === 'ping').length;

test('a silent socket is pinged sooner while a followed conversation streams', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const { conn, ws } = connect();
  conn.follow('c');
  ws.deliver('copilot:subscribed', { conversationId: 'c', seq: 0, epoch: 'e1', streaming: false });

  // No turn runs: the idle numbers.
  t.mock.timers.tick(PING_AFTER - 1);
  assert.equal(pings(ws), 0, 'pinged before PING_AFTER with no turn running');
  t.mock.timers.tick(1);
  assert.equal(pings(ws), 1, 'no ping after PING_AFTER of silence');
  ws.deliver('pong');

  // A turn starts: silence is given up in STREAMING_PING_AFTER +
  // STREAMING_PONG_WITHIN.
  ws.deliver('copilot:user_message', { conversationId: 'c', seq: 1, content: 'hi' });
  t.mock.timers.tick(STREAMING_PING_AFTER - 1);
  assert.equal(pings(ws), 1);
  t.mock.timers.tick(1);
  assert.equal(pings(ws), 2, 'no ping after STREAMING_PING_AFTER of silence while streaming');
  t.mock.timers.tick(STREAMING_PONG_WITHIN - 1);
  assert.equal(ws.readyState, FakeSocket.OPEN, 'given up before STREAMING_PONG_WITHIN');
  t.mock.timers.tick(1);
  assert.equal(ws.readyState, 3, 'the silent socket was kept');

  // The client comes back; the relay says the turn still runs, then ends.
  clearTimeout(conn.retry);
  conn.open('reconnecting');
  const again = FakeSocket.all.at(-1);
  again.emit('open');
  again.deliver('copilot:subscribed', { conversationId: 'c', seq: 1, epoch: 'e1', streaming: true });
  t.mock.timers.tick(STREAMING_PING_AFTER);
  assert.equal(pings(again), 1, 'a resubscription to a streaming conversation kept the idle numbers');
  again.deliver('copilot:idle', { conversationId: 'c', seq: 2, status: 'completed' });
  t.mock.timers.tick(PING_AFTER - 1);
  assert.equal(pings(again), 1, 'the streaming numbers outlived the turn');
  t.mock.timers.tick(1);
  assert.equal(pings(again), 2);
  t.mock.timers.tick(PONG_WITHIN - 1);
  assert.equal(again.readyState, FakeSocket.OPEN);
  conn.stop();
});

// reconnect drops conn's socket and opens the next one; it returns it.
function reconnect(conn, ws) {
  ws.close(1006);
  clearTimeout(conn.retry);
  conn.open('reconnecting');
  const again = FakeSocket.all.at(-1);
  again.emit('open');
  return again;
}

const lostOf = (got) => got.filter((m) => m.type === 'lost').map((m) => m.data);

test('a prompt whose socket dropped before the relay got it is reported lost after the resubscription', () => {
  const { conn, ws, got } = connect();
  conn.follow('c');
  ws.deliver('copilot:subscribed', { conversationId: 'c', seq: 2, epoch: 'e1' });
  assert.ok(conn.sendPrompt({ conversationId: 'c', prompt: 'hello', clientId: 'k1' }));
  assert.deepEqual(ws.sent.at(-1), { type: 'copilot:send', data: { conversationId: 'c', prompt: 'hello', clientId: 'k1' } });
  // A subscription on the socket it went on says nothing of it: the
  // relay may not have read it yet.
  ws.deliver('copilot:subscribed', { conversationId: 'c', seq: 2, epoch: 'e1' });
  assert.deepEqual(lostOf(got), []);

  const again = reconnect(conn, ws);
  assert.deepEqual(again.sent.at(-1), { type: 'copilot:subscribe', data: { conversationId: 'c', sinceSeq: 2, epoch: 'e1' } });
  again.deliver('copilot:subscribed', { conversationId: 'c', seq: 2, epoch: 'e1' });
  assert.deepEqual(lostOf(got), [{ conversationId: 'c', clientId: 'k1' }]);
  assert.equal(got.at(-2).type, 'copilot:subscribed', 'lost comes after the copy is whole');
  // Reported once; never sent again.
  const third = reconnect(conn, again);
  third.deliver('copilot:subscribed', { conversationId: 'c', seq: 2, epoch: 'e1' });
  assert.equal(lostOf(got).length, 1);
  assert.equal([ws, again, third].flatMap((s) => s.sent).filter((m) => m.type === 'copilot:send').length, 1);
  conn.stop();
});

test('a prompt whose echo the replay holds, or that the relay names starting, is not lost', () => {
  const { conn, ws, got } = connect();
  conn.follow('c');
  ws.deliver('copilot:subscribed', { conversationId: 'c', seq: 0, epoch: 'e1' });
  conn.sendPrompt({ conversationId: 'c', prompt: 'one', clientId: 'k1' });

  // Its echo comes in the resubscription's replay.
  let again = reconnect(conn, ws);
  again.deliver('copilot:user_message', { conversationId: 'c', seq: 1, content: 'one', clientId: 'k1' });
  again.deliver('copilot:idle', { conversationId: 'c', seq: 2, status: 'completed' });
  again.deliver('copilot:subscribed', { conversationId: 'c', seq: 2, epoch: 'e1' });
  assert.deepEqual(lostOf(got), []);

  // The next one's folder is being set up: starting names it, so it is
  // held; its echo comes later, on this socket.
  conn.sendPrompt({ conversationId: 'c', prompt: 'two', clientId: 'k2' });
  again = reconnect(conn, again);
  again.deliver('copilot:subscribed', { conversationId: 'c', seq: 2, epoch: 'e1', starting: { clientId: 'k2' } });
  assert.deepEqual(lostOf(got), []);
  // Another drop before the echo: the relay is asked again, and now it
  // no longer holds it (its setup failed, the relay restarted).
  again = reconnect(conn, again);
  again.deliver('copilot:subscribed', { conversationId: 'c', seq: 2, epoch: 'e1', starting: { clientId: 'other' } });
  assert.deepEqual(lostOf(got), [{ conversationId: 'c', clientId: 'k2' }]);
  conn.stop();
});

test("a refused send is not lost: the page showed the relay's error", () => {
  const { conn, ws, got } = connect();
  conn.follow('c');
  ws.deliver('copilot:subscribed', { conversationId: 'c', seq: 0, epoch: 'e1' });
  conn.sendPrompt({ conversationId: 'c', prompt: 'busy', clientId: 'k1' });
  ws.deliver('error', { code: 'conversation_busy', type: 'copilot:send', conversationId: 'c', message: 'busy' });
  const again = reconnect(conn, ws);
  again.deliver('copilot:subscribed', { conversationId: 'c', seq: 0, epoch: 'e1' });
  assert.deepEqual(lostOf(got), []);
  conn.stop();
});

test('with a relay that echoes no clientId, an echo is matched by its text', () => {
  const { conn, ws, got } = connect();
  conn.follow('c');
  ws.deliver('copilot:subscribed', { conversationId: 'c', seq: 0, epoch: 'e1' });
  conn.sendPrompt({ conversationId: 'c', prompt: 'ran', clientId: 'k1' });
  conn.sendPrompt({ conversationId: 'c', prompt: 'lost', clientId: 'k2' });
  ws.deliver('copilot:user_message', { conversationId: 'c', seq: 1, content: 'ran' });
  const again = reconnect(conn, ws);
  again.deliver('copilot:subscribed', { conversationId: 'c', seq: 1, epoch: 'e1' });
  assert.deepEqual(lostOf(got), [{ conversationId: 'c', clientId: 'k2' }]);
  conn.stop();
});

test('a refusal that names its send settles that one; the other is still waited for', () => {
  const { conn, ws, got } = connect();
  conn.follow('c');
  ws.deliver('copilot:subscribed', { conversationId: 'c', seq: 0, epoch: 'e1' });
  conn.sendPrompt({ conversationId: 'c', prompt: 'one', clientId: 'k1' });
  conn.sendPrompt({ conversationId: 'c', prompt: 'two', clientId: 'k2' });
  ws.deliver('error', { code: 'invalid_field', type: 'copilot:send', conversationId: 'c', clientId: 'k1', message: 'no such folder' });
  assert.deepEqual([...conn.unechoed.keys()], ['k2']);
  // The socket drops before the relay read the second one: it is lost;
  // the refused one is not reported lost as well.
  const again = reconnect(conn, ws);
  again.deliver('copilot:subscribed', { conversationId: 'c', seq: 0, epoch: 'e1' });
  assert.deepEqual(lostOf(got), [{ conversationId: 'c', clientId: 'k2' }]);
  conn.stop();
});

// FakeStorage plays the tab's sessionStorage.
class FakeStorage {
  constructor() {
    this.m = new Map();
  }

  getItem(k) {
    return this.m.has(k) ? this.m.get(k) : null;
  }

  setItem(k, v) {
    if (this.full) throw new Error('QuotaExceededError');
    this.m.set(k, String(v));
  }

  removeItem(k) {
    this.m.delete(k);
  }
}

const kept = () => JSON.parse(globalThis.sessionStorage.getItem(UNSENT_KEY) || '[]');

test("a page loaded after a send asks the relay about the prompts it kept, and gives back the ones it never got", (t) => {
  globalThis.sessionStorage = new FakeStorage();
  t.after(() => { delete globalThis.sessionStorage; });
  const { conn, ws } = connect();
  conn.follow('c');
  ws.deliver('copilot:subscribed', { conversationId: 'c', seq: 2, epoch: 'e1' });
  conn.sendPrompt({ conversationId: 'c', prompt: 'ran', clientId: 'k1' });
  conn.sendPrompt({ conversationId: 'c', prompt: 'refused', clientId: 'k2' });
  conn.sendPrompt({ conversationId: 'd', prompt: 'never got', clientId: 'k3' });
  conn.sendPrompt({ conversationId: 'c', prompt: 'starting', clientId: 'k4' });
  assert.deepEqual(kept().map((u) => u.clientId), ['k1', 'k2', 'k3', 'k4']);
  ws.deliver('error', { code: 'conversation_busy', type: 'copilot:send', conversationId: 'c', clientId: 'k2', message: 'busy' });
  assert.deepEqual(kept(), [
    { conversationId: 'c', clientId: 'k1', prompt: 'ran' },
    { conversationId: 'd', clientId: 'k3', prompt: 'never got' },
    { conversationId: 'c', clientId: 'k4', prompt: 'starting' },
  ]);

  // The tab reloads: the socket goes with the page, and a new page's
  // connection starts from what the tab kept.
  FakeSocket.all = [];
  const got = [];
  const page = new Connection({ url: 'ws://127.0.0.1/ws', token: 't', onMessage: (m) => got.push(m), onState: () => {} });
  assert.deepEqual(page.restored.map((u) => u.clientId), ['k1', 'k3', 'k4']);
  page.open('connecting');
  const next = FakeSocket.all[0];
  next.emit('open');
  // It follows the conversations of the prompts it waits for.
  assert.deepEqual(next.sent.filter((m) => m.type === 'copilot:subscribe').map((m) => m.data), [
    { conversationId: 'c', sinceSeq: 0 },
    { conversationId: 'd', sinceSeq: 0 },
  ]);
  next.deliver('copilot:user_message', { conversationId: 'c', seq: 1, content: 'ran', clientId: 'k1' });
  next.deliver('copilot:idle', { conversationId: 'c', seq: 2, status: 'completed' });
  next.deliver('copilot:subscribed', { conversationId: 'c', seq: 2, epoch: 'e1', starting: { clientId: 'k4' } });
  next.deliver('copilot:subscribed', { conversationId: 'd', seq: 0, epoch: 'e2' });
  assert.deepEqual(lostOf(got), [{ conversationId: 'd', clientId: 'k3' }]);
  assert.deepEqual(kept().map((u) => u.clientId), ['k4'], 'the one the relay sets up is still waited for');
  next.deliver('copilot:user_message', { conversationId: 'c', seq: 3, content: 'starting', clientId: 'k4' });
  assert.equal(globalThis.sessionStorage.getItem(UNSENT_KEY), null, 'an echoed prompt was kept');
  // Never sent again by the page.
  assert.equal(next.sent.filter((m) => m.type === 'copilot:send').length, 0);
  page.stop();
  conn.stop();
});

test('the tab keeps the newest prompts waited for, and ignores what is not one', (t) => {
  globalThis.sessionStorage = new FakeStorage();
  t.after(() => { delete globalThis.sessionStorage; });
  const { conn, ws } = connect();
  conn.follow('c');
  ws.deliver('copilot:subscribed', { conversationId: 'c', seq: 0, epoch: 'e1' });
  for (let i = 0; i < UNSENT_KEPT + 4; i++) conn.sendPrompt({ conversationId: 'c', prompt: `p${i}`, clientId: `k${i}` });
  assert.equal(kept().length, UNSENT_KEPT);
  assert.equal(kept()[0].clientId, 'k4');
  conn.stop();

  globalThis.sessionStorage.setItem(UNSENT_KEY, JSON.stringify([{ conversationId: 'c', clientId: 'k', prompt: 'ok' }, { conversationId: '', clientId: 'x', prompt: 'no' }, 'junk', { conversationId: 'c', prompt: 'no id' }]));
  assert.deepEqual(new Connection({ url: 'ws://127.0.0.1/ws', token: 't', onMessage: () => {}, onState: () => {} }).restored, [{ conversationId: 'c', clientId: 'k', prompt: 'ok' }]);
  globalThis.sessionStorage.setItem(UNSENT_KEY, '{not json');
  assert.deepEqual(new Connection({ url: 'ws://127.0.0.1/ws', token: 't', onMessage: () => {}, onState: () => {} }).restored, []);
});

test('a prompt too long for the tab is waited for in memory only, and a list the tab cannot take is not left stale', (t) => {
  globalThis.sessionStorage = new FakeStorage();
  t.after(() => { delete globalThis.sessionStorage; });
  const { conn, ws, got } = connect();
  conn.follow('c');
  ws.deliver('copilot:subscribed', { conversationId: 'c', seq: 0, epoch: 'e1' });
  conn.sendPrompt({ conversationId: 'c', prompt: 'short', clientId: 'k1' });
  conn.sendPrompt({ conversationId: 'c', prompt: 'x'.repeat(UNSENT_CHARS), clientId: 'k2' });
  assert.deepEqual(kept().map((u) => u.clientId), ['k1']);
  // The storage is full: the list is not kept, rather than left as it was.
  globalThis.sessionStorage.full = true;
  conn.sendPrompt({ conversationId: 'c', prompt: 'third', clientId: 'k3' });
  assert.equal(globalThis.sessionStorage.getItem(UNSENT_KEY), null);
  // In memory all three are still waited for.
  const again = reconnect(conn, ws);
  again.deliver('copilot:subscribed', { conversationId: 'c', seq: 0, epoch: 'e1' });
  assert.deepEqual(lostOf(got).map((l) => l.clientId), ['k1', 'k2', 'k3']);
  conn.stop();
});
