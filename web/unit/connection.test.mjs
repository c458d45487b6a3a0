// The web client's connection (web/static/js/connection.js) on a fake
// WebSocket: a first subscription's replay reaches the page as it comes,
// in order, before copilot:subscribed (a long conversation is drawn while
// it streams in); an event out of order waits for the end; a
// resubscription's replay is held until copilot:subscribed, as before; a
// first replay cut short by a dropped socket starts the copy over, since
// nothing names the history it came from. Run by scripts/web-unit.sh.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { Connection } from '../static/js/connection.js';

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
