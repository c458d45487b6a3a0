// The web client when its connection breaks: the relay drops the socket
// in the middle of a reply, restarts on its data dir, crashes mid-turn, and
// comes back with its history lost, or with another agent. Nothing may be
// lost or shown twice.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { browser, chromiumMissing, startRelay, tempDir, transcriptRows, watchPage } from './harness.js';

const skip = chromiumMissing();
const WAIT = 30_000;
const SLOW = Array.from({ length: 40 }, (_, i) => `w${String(i + 1).padStart(2, '0')}`).join(' ');

describe('reconnecting', { skip: skip || false }, () => {
  let chrome;
  let relay;
  const problems = [];

  before(async () => {
    chrome = await browser();
  });

  after(async () => {
    await chrome?.close();
    await relay?.stop();
  });

  async function open() {
    const ctx = await chrome.newContext({ viewport: { width: 390, height: 844 } });
    ctx.setDefaultTimeout(WAIT);
    const page = await ctx.newPage();
    watchPage(page, relay, problems);
    watchFrames(page);
    await page.goto(relay.pageURL);
    await page.waitForSelector('body[data-state="live"]');
    await page.click('#menu');
    await page.click('#new-conv');
    return page;
  }

  // frames holds, per page, what its sockets sent and received, numbered
  // in the order the page opened them, as the browser reports it: what
  // send reads to know whether a prompt went out and whether the relay
  // took it.
  const frames = new WeakMap();
  function watchFrames(page) {
    const log = [];
    frames.set(page, log);
    let sockets = 0;
    page.on('websocket', (ws) => {
      const sock = sockets++;
      const parse = (payload) => {
        try {
          return JSON.parse(String(payload));
        } catch {
          return null;
        }
      };
      ws.on('framesent', (f) => log.push({ sock, dir: 'sent', msg: parse(f.payload) }));
      ws.on('framereceived', (f) => log.push({ sock, dir: 'recv', msg: parse(f.payload) }));
    });
  }

  // outcome reads the frames logged from index from on, after a prompt
  // was typed: 'taken' once the relay echoed it (its copilot:user_message
  // came, live or replayed), 'dropped' once a later socket is subscribed
  // to the conversation (copilot:subscribed came) without the echo: the
  // page opens one only once the one that carried the prompt is closed,
  // and Playwright need not report that close first. Else '' (not yet
  // known, or the page never sent it).
  function outcome(log, from, text) {
    let carried = -1;
    let id = '';
    for (const e of log.slice(from)) {
      const m = e.msg;
      if (carried < 0) {
        if (e.dir === 'sent' && m?.type === 'copilot:send' && m.data?.prompt === text) {
          carried = e.sock;
          id = m.data.conversationId;
        }
        continue;
      }
      if (e.dir === 'recv' && m?.type === 'copilot:user_message' && m.data?.conversationId === id && m.data.content === text) return 'taken';
      if (e.dir === 'recv' && e.sock > carried && m?.type === 'copilot:subscribed' && m.data?.conversationId === id) return 'dropped';
    }
    return '';
  }

  // send types a prompt and sends it; again only when the page did not
  // send it ("not sent": it was not connected when Enter was pressed), or
  // the relay did not take it (the socket dropped with the prompt on its
  // way), never because the echo is slow: a prompt sent twice is a doubled
  // turn, which the tests here look for.
  async function send(page, text) {
    const log = frames.get(page);
    const users = () => page.$$eval('#transcript [data-kind="user"]', (r) => r.length);
    const refusals = () => page.$$eval('#transcript [data-row]', (rows, notes) => rows.filter((r) => notes.some((n) => r.textContent.includes(n))).length, NOT_SENT);
    const before = await users();
    for (let i = 0; i < 20; i++) {
      await page.waitForSelector('#send:not([disabled])');
      const from = log.length;
      const refused = await refusals();
      await page.fill('#prompt', text);
      await page.press('#prompt', 'Enter');
      const deadline = Date.now() + 2 * WAIT;
      let dropped = 0;
      let again = false;
      while (!again) {
        const got = outcome(log, from, text);
        if (got === 'taken') {
          await page.waitForFunction((n) => document.querySelectorAll('#transcript [data-kind="user"]').length > n, before);
          return;
        }
        // A prompt whose socket dropped may still have reached the relay:
        // it echoes it to the new subscription only once the turn starts
        // (a new conversation's folder is fixed first, and a replay before
        // that holds nothing), and a second copy would be refused as busy.
        // The page says when the relay did not get it (a note, the prompt
        // back in the box: docs/protocol.md, Lost sends); it is taken as
        // lost too after WAIT without the echo.
        if (got === 'dropped' && !dropped) dropped = Date.now();
        const now = await refusals();
        if (now > refused) provoked.set(page, (provoked.get(page) ?? 0) + now - refused);
        if ((dropped && Date.now() - dropped > WAIT) || now > refused) again = true;
        else if (!dropped && Date.now() > deadline) {
          // Nothing went out (no copilot:send frame), so sending again
          // cannot double it; a prompt that went out and was neither
          // echoed nor lost is a fault.
          if (log.slice(from).some((e) => e.dir === 'sent' && e.msg?.type === 'copilot:send' && e.msg.data?.prompt === text)) {
            throw new Error(`${text}: sent, and neither echoed nor dropped within ${2 * WAIT} ms`);
          }
          again = true;
        } else await new Promise((r) => setTimeout(r, 50));
      }
    }
    throw new Error(`could not send ${text}`);
  }

  // A prompt typed as the relay drops the socket is refused by the page
  // with a note, or, when the socket dropped with it, given back with
  // another; send types it again. shown returns the transcript without
  // those notes, which must be no more than send saw (a new copy of the
  // history drops the first kind).
  const NOT_SENT = ['Not connected to the relay: the prompt was not sent.', 'The relay did not get your message'];
  const provoked = new WeakMap();
  async function shown(page) {
    const all = await transcriptRows(page);
    const kept = all.filter((r) => !(r.kind === 'note' && NOT_SENT.some((n) => r.text.includes(n))));
    assert.ok(all.length - kept.length <= (provoked.get(page) ?? 0), `notes of prompts not sent that send did not see: ${JSON.stringify(all)}`);
    return kept;
  }

  const statuses = (page, n) => page.waitForFunction((k) => document.querySelectorAll('#transcript [data-kind="status"]').length >= k, n);
  const connects = (page) => page.evaluate(() => Number(document.body.dataset.connects));

  // unexpected returns the page's problems but the ones a relay that goes
  // away causes on purpose: refused connections, and /healthz unanswered.
  const unexpected = () => problems.filter((p) => !/WebSocket connection to .* failed|Failed to load resource: net::ERR_CONNECTION_REFUSED/.test(p));

  it('resumes after the relay drops the socket mid-reply, with nothing lost or doubled', async () => {
    // The relay drops a connection after 1 s without an inbound frame; the
    // page pings after 30 s of silence, so it is dropped again and again.
    relay = await startRelay({ args: ['--heartbeat-timeout', '1s'] });
    const page = await open();
    await send(page, 'slow');
    await statuses(page, 1);
    const rows = await shown(page);
    assert.deepEqual(rows.map((r) => r.kind), ['user', 'text', 'status'], JSON.stringify(rows));
    assert.equal(rows[1].text, SLOW);
    assert.match(rows[2].text, /Completed/);
    const n = await connects(page);
    assert.ok(n >= 3, `the page connected ${n} times during a 4 s reply; the relay was to drop it every second`);
    assert.match(relay.log(), /heartbeat timeout/);
    assert.deepEqual(unexpected(), []);
    await page.context().close();
    await relay.stop();
  });

  it('resumes after a restart and after a crash mid-turn on the same data dir, and replaces its copy when the history is lost', async () => {
    const dataDir = tempDir('pilotdesk-e2e-data-');
    relay = await startRelay({ dataDir });
    const port = relay.port;
    const page = await open();
    await send(page, 'hello');
    await statuses(page, 1);
    const before = await shown(page);

    // A clean restart: the page comes back to the same transcript, once.
    let n = await connects(page);
    await relay.stop('SIGTERM');
    relay = await startRelay({ dataDir, port });
    await page.waitForFunction((k) => Number(document.body.dataset.connects) > k && document.body.dataset.state === 'live', n);
    assert.deepEqual(await shown(page), before);
    await send(page, 'hello');
    await statuses(page, 2);
    const again = await shown(page);
    assert.equal(again.length, before.length * 2, JSON.stringify(again));

    // A crash in the middle of a reply: what was stored reaches the page
    // once and in order, and the turn ends as interrupted.
    await send(page, 'slow');
    await page.waitForFunction(() => /w05/.test(document.querySelector('#transcript [data-kind="text"]:last-of-type')?.textContent ?? ''));
    n = await connects(page);
    await relay.stop('SIGKILL');
    relay = await startRelay({ dataDir, port });
    await statuses(page, 3);
    const rows = await shown(page);
    const last = rows.at(-1);
    assert.equal(last.kind, 'status');
    assert.match(last.text, /^.Interrupted: the relay restarted$/);
    const words = rows.at(-2).text.split(' ');
    assert.ok(words.length >= 5, `only ${words.length} words survived`);
    assert.equal(rows.at(-2).text, SLOW.split(' ').slice(0, words.length).join(' '), 'words lost, doubled or out of order');
    assert.ok(await connects(page) > n);

    // A clean restart in the middle of a reply: the turn the relay cut is
    // interrupted, not "Stopped" as if the user had stopped it.
    await send(page, 'slow');
    await page.waitForFunction(() => /w05/.test(document.querySelector('#transcript [data-kind="text"]:last-of-type')?.textContent ?? ''));
    await relay.stop('SIGTERM');
    relay = await startRelay({ dataDir, port });
    await statuses(page, 4);
    assert.match((await shown(page)).at(-1).text, /^.Interrupted: the relay restarted$/);

    // A relay with another history (a fresh data dir: a new epoch): the
    // page's copy is replaced by the relay's, which is empty.
    await relay.stop('SIGTERM');
    relay = await startRelay({ port, dataDir: ':memory:' });
    await page.waitForFunction(() => document.querySelectorAll('#transcript [data-row]').length === 0);
    await page.waitForSelector('#transcript .empty');
    assert.equal(await page.evaluate(() => document.body.dataset.state), 'live');
    await send(page, 'hello');
    await statuses(page, 1);
    assert.deepEqual((await shown(page)).map((r) => r.kind), ['user', 'text', 'status']);
    assert.deepEqual(unexpected(), []);
  });

  it('reconnects at once when the page comes back into view, when the browser comes online, and on Retry now', async () => {
    await relay?.stop(); // the previous test's last relay
    const dataDir = tempDir('pilotdesk-e2e-retry-');
    relay = await startRelay({ dataDir });
    const port = relay.port;
    const page = await open();
    await relay.stop();
    // Down, Send is off and says why in words.
    await page.waitForSelector('#send[disabled]');
    assert.match(await page.textContent('#send-why'), /Not connected to the relay/);
    for (const trigger of ['online', 'visibilitychange']) {
      // Wait for a backoff of 4 s or more, then the event: the page tries
      // again long before the backoff would have.
      await page.waitForFunction(() => Number(document.body.dataset.retryIn) >= 4000, null, { timeout: 60_000 });
      // The backoff is read, and the event sent, in one task of the page:
      // between the wait above and this, an attempt may be under way (its
      // backoff then reads 0).
      const { tried, within } = await page.evaluate((ev) => new Promise((resolve) => {
        const go = () => {
          const within = Number(document.body.dataset.retryIn);
          if (!(within >= 4000)) {
            setTimeout(go, 20);
            return;
          }
          const before = Number(document.body.dataset.attempts);
          const start = performance.now();
          const seen = new MutationObserver(() => {
            if (Number(document.body.dataset.attempts) > before) {
              seen.disconnect();
              resolve({ tried: performance.now() - start, within });
            }
          });
          seen.observe(document.body, { attributes: true });
          if (ev === 'online') window.dispatchEvent(new Event('online'));
          else document.dispatchEvent(new Event('visibilitychange'));
        };
        go();
      }), trigger);
      assert.ok(tried < within / 2, `after ${trigger} the page tried again in ${Math.round(tried)} ms, its backoff was ${within} ms`);
    }
    // Retry now, once the relay is back.
    await page.waitForSelector('#retry:not([hidden])');
    relay = await startRelay({ dataDir, port });
    // The page may get there by itself first (its backoff ran out), and
    // then hides the button between the check and the click (the click then
    // waits for it in vain: WAIT, not a short bound a busy machine could
    // miss while the button shows).
    if (await page.evaluate(() => document.body.dataset.state) !== 'live') {
      await page.click('#retry', { timeout: WAIT }).catch((err) => {
        if (!/not visible|detached/.test(String(err))) throw err;
      });
    }
    await page.waitForSelector('body[data-state="live"]');
    await page.waitForSelector('#retry', { state: 'hidden' });
    await page.waitForSelector('#send:not([disabled])');
    assert.equal(await page.isHidden('#send-why'), true);
    assert.deepEqual(unexpected(), []);
    await page.context().close();
    await relay.stop();
  });

  it('notes where the conversation went on with another agent, once, after a restart on it', async () => {
    await relay?.stop();
    const dataDir = tempDir('pilotdesk-e2e-agent-');
    relay = await startRelay({ dataDir });
    const port = relay.port;
    const page = await open();
    await send(page, 'hello');
    await statuses(page, 1);

    // The same history served by a relay that runs the ACP backend.
    const n = await connects(page);
    await relay.stop('SIGTERM');
    relay = await startRelay({ dataDir, port, acp: true });
    await page.waitForFunction((k) => Number(document.body.dataset.connects) > k && document.body.dataset.state === 'live', n);
    await send(page, 'hello');
    await statuses(page, 2);
    await send(page, 'hello');
    await statuses(page, 3);
    const rows = await shown(page);
    const notes = rows.flatMap((r, i) => (r.kind === 'note' ? [{ i, text: r.text }] : []));
    assert.equal(notes.length, 1, `notes: ${JSON.stringify(notes)}`);
    assert.match(notes[0].text, /The agent changed from scenario\.json \(scripted\) to .+ \(ACP\)\./);
    assert.equal(rows[notes[0].i + 1].kind, 'user', 'the note is not just before the prompt the new agent ran');
    assert.equal(rows.slice(0, notes[0].i).filter((r) => r.kind === 'status').length, 1, 'the note is not after the first turn');
    assert.deepEqual(unexpected(), []);
  });
});
