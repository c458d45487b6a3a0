// A long conversation (issue #29): 2,400 tool calls, about 4,800 events.
// Opened on a fresh page, it is drawn while its replay streams in, before
// copilot:subscribed ends the replay (held back here until the rows are
// in), keeping only the newest rows in the page; opened again from the
// list, its rows are built newest first, in slices: the latest row is in
// the first one, no slice adds more than the transcript's SLICE_ROWS, and
// the page holds WINDOW rows, in order, the end in view. Scrolled to the
// top, earlier rows are added above without moving what the view shows,
// down to the first; back at the bottom, the next turn drops them again.
// These are structural: they hold on a loaded machine. The long tasks of
// the page are measured and reported, not asserted.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { browser, chromiumMissing, playTurn, startRelay, tempDir, watchPage } from './harness.js';
import { EARLIER, SLICE_ROWS, WINDOW } from '../static/js/transcript.js';

const skip = chromiumMissing();
const WAIT = 60_000;
const TOOLS = 2400;
const PHONE = { width: 390, height: 844 };

// watch runs in the page before its scripts: it holds back the socket's
// copilot:subscribed of the conversation window.holdFor (and whatever
// follows it) until window.release(), counts the rows each mutation
// callback adds to the transcript, and records the long tasks.
function watch() {
  window.held = [];
  window.holdFor = '';
  // What each mutation callback added to the transcript: rows never
  // drawn before (a row redrawn in place is not counted), and the first
  // and last of them. resetBatches starts over (another conversation).
  window.batches = []; // [{added, rows: [first, last]}]
  let drawn = new Set();
  window.resetBatches = () => {
    window.batches = [];
    drawn = new Set();
  };
  window.longTasks = [];
  window.release = () => {
    const held = window.held;
    window.held = null;
    for (const f of held) f();
  };
  const holding = (ev) => {
    if (window.held === null) return false;
    if (window.held.length > 0) return true;
    try {
      const m = JSON.parse(ev.data);
      return m.type === 'copilot:subscribed' && m.data.conversationId === window.holdFor;
    } catch {
      return false;
    }
  };
  const add = WebSocket.prototype.addEventListener;
  WebSocket.prototype.addEventListener = function (type, fn, opts) {
    if (type !== 'message') return add.call(this, type, fn, opts);
    const ws = this;
    return add.call(this, type, (ev) => {
      if (holding(ev)) window.held.push(() => fn.call(ws, ev));
      else fn.call(ws, ev);
    }, opts);
  };
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) window.longTasks.push(Math.round(e.duration));
  }).observe({ type: 'longtask', buffered: true });
  document.addEventListener('DOMContentLoaded', () => {
    new MutationObserver((records) => {
      const rows = [];
      for (const r of records) {
        if (!r.target.classList?.contains('rows')) continue;
        for (const n of r.addedNodes) {
          if (!n.dataset?.row || drawn.has(n.dataset.row)) continue;
          drawn.add(n.dataset.row);
          rows.push(Number(n.dataset.row));
        }
      }
      if (rows.length) window.batches.push({ added: rows.length, rows: [Math.min(...rows), Math.max(...rows)] });
    }).observe(document.body, { childList: true, subtree: true });
  });
}

describe('a long conversation', { skip: skip || false }, () => {
  let relay;
  let chrome;
  let problems = [];

  before(async () => {
    const dir = tempDir('pd-long-');
    const steps = [];
    for (let i = 0; i < TOOLS; i++) steps.push({ tool: { name: 'bash', arguments: { command: `echo ${i}` }, result: `ok ${i}` } });
    steps.push({ delta: 'All done.' });
    const script = path.join(dir, 'long.json');
    writeFileSync(script, JSON.stringify({ turns: [{ match: 'many', steps }, { steps: [{ delta: 'Echo: {{prompt}}' }] }] }));
    relay = await startRelay({ script });
    chrome = await browser();
  });

  after(async () => {
    await chrome?.close();
    await relay?.stop();
    assert.deepEqual(problems, [], 'the page logged an error or asked another host for something');
  });

  // rowsInOrder returns the transcript's rows in the page: their count,
  // the first (from) and how many the conversation has (total), whether
  // their indexes run from…total-1 in the page's order, the kinds of the
  // last two and the tools, and whether the end is in view.
  const rowsInOrder = (page) => page.evaluate(() => {
    const t = document.getElementById('transcript');
    const rows = [...t.querySelectorAll('[data-row]')];
    const last = rows[rows.length - 1];
    const from = Number(t.dataset.from || 0);
    return {
      n: rows.length,
      from,
      total: last ? Number(last.dataset.row) + 1 : 0,
      ordered: rows.every((r, i) => Number(r.dataset.row) === from + i),
      tools: rows.filter((r) => r.dataset.kind === 'tool').length,
      tail: rows.slice(-2).map((r) => r.dataset.kind),
      waiting: t.dataset.waiting,
      atEnd: !!last && t.scrollHeight - t.scrollTop - t.clientHeight <= 2 && last.getBoundingClientRect().bottom <= t.getBoundingClientRect().bottom + 1,
    };
  });

  // Bounded: a wait with no timeout of its own fails the test, not make test.
  it('is drawn while its replay streams in, then rebuilt newest first in slices', { timeout: 300_000 }, async (t) => {
    const ctx = await chrome.newContext({ viewport: PHONE });
    ctx.setDefaultTimeout(WAIT);
    await ctx.addInitScript(watch);
    // The conversation is made through a socket of its own, not drawn.
    const maker = await ctx.newPage();
    watchPage(maker, relay, problems);
    await maker.goto(relay.base); // the page without a token: it asks for one, and connects nowhere
    const id = 'long-conversation';
    const events = await playTurn(maker, relay, id, 'many', WAIT);
    assert.ok(events > 2 * TOOLS, `the turn made ${events} events`);
    await maker.close();

    const page = await ctx.newPage();
    watchPage(page, relay, problems);
    await page.addInitScript((c) => { window.holdFor = c; }, id);
    // The token and the conversation's link in one fragment.
    await page.goto(`${relay.pageURL}&/c/${id}`);
    // The newest rows are drawn, in order, the end in view, while the
    // replay's copilot:subscribed is still held back.
    const total = TOOLS + 3; // the prompt, the tools, the reply, its end
    await page.waitForFunction((n) => {
      const t = document.getElementById('transcript');
      const rows = t.querySelectorAll('[data-row]');
      return (t.dataset.waiting || '0') === '0' && rows.length > 0 && Number(rows[rows.length - 1].dataset.row) === n - 1;
    }, total, { timeout: WAIT });
    await page.waitForFunction(() => window.held && window.held.length > 0); // copilot:subscribed came, and waits
    let got = await rowsInOrder(page);
    assert.deepEqual({ ordered: got.ordered, total: got.total, tail: got.tail }, { ordered: true, total, tail: ['text', 'status'] }, 'before the replay ended');
    assert.ok(got.n >= WINDOW && got.n <= WINDOW + 200, `${got.n} rows in the page (${WINDOW} kept, and a slack of 200)`);
    await page.waitForFunction(() => {
      const t = document.getElementById('transcript');
      return t.scrollHeight - t.scrollTop - t.clientHeight <= 2;
    });
    await page.evaluate(() => window.release());
    // The replay's end changes nothing drawn.
    await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
    const before = got;
    got = await rowsInOrder(page);
    assert.deepEqual(got, before);
    let batches = await page.evaluate(() => window.batches);
    let biggest = Math.max(...batches.map((b) => b.added));
    assert.ok(biggest <= SLICE_ROWS, `a render added ${biggest} rows at once while the replay streamed in (at most ${SLICE_ROWS})`);
    const firstTasks = await page.evaluate(() => window.longTasks.splice(0));

    // Another conversation, then this one again from the list: all its
    // rows are built anew, newest first.
    await page.click('#menu');
    await page.click('#new-conv');
    await page.waitForFunction(() => document.querySelectorAll('#transcript [data-row]').length === 0);
    await page.evaluate(() => window.resetBatches());
    await page.click('#menu');
    await page.click(`#conv-list [data-id="${id}"]`);
    await page.waitForFunction((n) => document.querySelectorAll('#transcript [data-row]').length === n
      && (document.getElementById('transcript').dataset.waiting || '0') === '0', WINDOW, { timeout: WAIT });
    batches = await page.evaluate(() => window.batches);
    assert.ok(batches.length >= Math.ceil(WINDOW / SLICE_ROWS), `${WINDOW} rows built in ${batches.length} renders`);
    assert.equal(batches[0].rows[1], total - 1, 'the first slice does not hold the latest row');
    biggest = Math.max(...batches.map((b) => b.added));
    assert.ok(biggest <= SLICE_ROWS, `a render added ${biggest} rows at once (at most ${SLICE_ROWS})`);
    await page.waitForFunction(() => {
      const t = document.getElementById('transcript');
      return t.scrollHeight - t.scrollTop - t.clientHeight <= 2;
    });
    got = await rowsInOrder(page);
    assert.deepEqual({ n: got.n, from: got.from, ordered: got.ordered, atEnd: got.atEnd }, { n: WINDOW, from: total - WINDOW, ordered: true, atEnd: true }, 'after the rebuild');
    const secondTasks = await page.evaluate(() => window.longTasks.splice(0));

    // Up to the top: earlier rows come above, EARLIER at a time, and the
    // row the view showed stays where it was.
    for (let from = total - WINDOW; from > 0;) {
      const seen = await page.evaluate(() => {
        const t = document.getElementById('transcript');
        t.scrollTop = 0;
        const top = t.getBoundingClientRect().top;
        const row = [...t.querySelectorAll('[data-row]')].find((r) => r.getBoundingClientRect().bottom > top);
        return { row: row.dataset.row, y: Math.round(row.getBoundingClientRect().top) };
      });
      const want = Math.max(0, from - EARLIER);
      await page.waitForFunction((w) => {
        const t = document.getElementById('transcript');
        return t.dataset.from === String(w) && (t.dataset.waiting || '0') === '0';
      }, want, { timeout: WAIT });
      const y = await page.evaluate((r) => Math.round(document.querySelector(`#transcript [data-row="${r}"]`).getBoundingClientRect().top), seen.row);
      assert.ok(Math.abs(y - seen.y) <= 2, `row ${seen.row} moved from ${seen.y} to ${y} px when rows were added above it`);
      from = want;
    }
    got = await rowsInOrder(page);
    assert.deepEqual({ n: got.n, from: got.from, ordered: got.ordered }, { n: total, from: 0, ordered: true }, 'at the top');
    assert.equal(await page.$('#transcript .earlier'), null, 'the first row is in, and still "Show earlier messages"');

    // At the bottom again, the next turn drops what is far above.
    await page.evaluate(() => {
      const t = document.getElementById('transcript');
      t.scrollTop = t.scrollHeight;
    });
    await page.waitForSelector('#send:not([disabled])');
    await page.fill('#prompt', 'hi');
    await page.press('#prompt', 'Enter');
    await page.waitForFunction((n) => document.querySelectorAll('#transcript [data-kind="status"]').length >= 1
      && document.querySelector(`#transcript [data-row="${n + 2}"][data-kind="status"]`), total, { timeout: WAIT });
    got = await rowsInOrder(page);
    assert.deepEqual({ total: got.total, ordered: got.ordered, tail: got.tail, atEnd: got.atEnd }, { total: total + 3, ordered: true, tail: ['text', 'status'], atEnd: true }, 'after the next turn');
    assert.ok(got.n >= WINDOW && got.n <= WINDOW + 200, `${got.n} rows in the page after the next turn (${WINDOW} kept, and a slack of 200)`);
    assert.equal(await page.textContent('#transcript .earlier'), `Show ${got.from} earlier messages`);
    t.diagnostic(`${total} rows from ${events} events; the rebuild in ${batches.length} slices; long tasks (ms) while the replay streamed: [${firstTasks.join(', ')}], while rebuilding: [${secondTasks.join(', ')}]`);
    await ctx.close();
  });
});
