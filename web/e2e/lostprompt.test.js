// The web client when the relay drops its socket before it read a prompt
// (docs/protocol.md, Lost sends): the page, which emptied the prompt box
// as it sent, finds after it reconnected that the relay never got the
// prompt, and gives it back with a note: into the box when the box is
// empty, else in the note, with Put back and Copy. It never sends it
// again by itself. Playwright stands between the page and the relay
// (routeWebSocket) and drops the socket that carries the prompt, the
// prompt with it, so the loss is certain and nothing here waits on time.
// A prompt the relay refuses (a second prompt while a turn runs) comes
// back alike, the one the relay's error names. And a page reloaded before
// the echo came (the route swallows the prompt, or the echo) asks the
// relay and gives back only a prompt the relay never got.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { browser, chromiumMissing, startRelay, transcriptRows, watchPage } from './harness.js';

const skip = chromiumMissing();
const WAIT = 30_000;
const LOST = 'The relay did not get your message';

describe('a prompt the relay did not get', { skip: skip || false }, () => {
  let chrome;
  let relay;
  const problems = [];

  before(async () => {
    chrome = await browser();
    relay = await startRelay();
  });

  after(async () => {
    await chrome?.close();
    await relay?.stop();
  });

  // open opens the page behind a WebSocket route that forwards every
  // frame, but: the next copilot:send once dropSend() asked (the socket
  // is closed instead, and the relay never sees the prompt), and, while
  // holdSubscribed() holds, copilot:subscribed from the relay (so that
  // the test acts while the page does not know yet). sends counts the
  // copilot:send frames that reached the relay.
  async function open() {
    const ctx = await chrome.newContext({ viewport: { width: 390, height: 844 } });
    ctx.setDefaultTimeout(WAIT);
    const page = await ctx.newPage();
    watchPage(page, relay, problems);
    // Also: swallow (the next copilot:send goes nowhere, and the socket
    // stays up), mute() (the relay's frames to the sockets open now go
    // nowhere; heard() resolves once one of them was of a type), and
    // holdErrors (the relay's error frames are held too).
    const route = { drop: false, dropped: 0, sends: 0, hold: false, holdErrors: false, held: [], swallow: false, swallowed: 0, sockets: [], waits: [] };
    const heard = (type) => new Promise((resolve) => route.waits.push({ type, resolve }));
    await page.routeWebSocket(/\/ws/, (ws) => {
      const server = ws.connectToServer();
      const socket = { muted: false };
      route.sockets.push(socket);
      ws.onMessage((msg) => {
        let m = null;
        try {
          m = JSON.parse(String(msg));
        } catch {
          // not JSON: forwarded as it is
        }
        if (m?.type === 'copilot:send' && route.drop) {
          route.drop = false;
          route.dropped++;
          ws.close({ code: 1001, reason: 'the relay went away' });
          server.close();
          return;
        }
        if (m?.type === 'copilot:send' && route.swallow) {
          route.swallow = false;
          route.swallowed++;
          return;
        }
        if (m?.type === 'copilot:send') route.sends++;
        server.send(msg);
      });
      server.onMessage((msg) => {
        const text = String(msg);
        const type = /"type":"([^"]+)"/.exec(text)?.[1];
        for (const w of route.waits.filter((x) => x.type === type)) {
          route.waits.splice(route.waits.indexOf(w), 1);
          w.resolve(text);
        }
        if (socket.muted) return;
        if ((route.hold && type === 'copilot:subscribed') || (route.holdErrors && type === 'error')) {
          route.held.push(() => ws.send(msg));
          return;
        }
        ws.send(msg);
      });
    });
    await page.goto(relay.pageURL);
    await page.waitForSelector('body[data-state="live"]');
    await page.click('#menu');
    await page.click('#new-conv');
    return {
      page,
      route,
      heard,
      dropSend: () => { route.drop = true; },
      swallowSend: () => { route.swallow = true; },
      mute: () => { for (const s of route.sockets) s.muted = true; },
      holdSubscribed: () => { route.hold = true; },
      holdErrors: () => { route.holdErrors = true; },
      release: () => {
        route.hold = false;
        route.holdErrors = false;
        for (const f of route.held.splice(0)) f();
      },
    };
  }

  // unexpected returns the page's problems but the ones a dropped socket
  // causes on purpose (a reconnection refused on a busy machine).
  const unexpected = () => problems.filter((p) => !/WebSocket connection to .* failed|Failed to load resource: net::ERR_CONNECTION_REFUSED/.test(p));

  const connects = (page) => page.evaluate(() => Number(document.body.dataset.connects));
  const prompt = (page) => page.inputValue('#prompt');

  // sendAndLose types text and sends it on a socket that is dropped with
  // it; it resolves once the page opened another socket.
  async function sendAndLose(t, text) {
    const n = await connects(t.page);
    t.dropSend();
    await t.page.fill('#prompt', text);
    await t.page.press('#prompt', 'Enter');
    await t.page.waitForFunction((k) => Number(document.body.dataset.connects) > k, n);
    assert.equal(t.route.dropped, 1, 'the socket was not dropped with the prompt');
  }

  it('puts the prompt back in an empty box with a note, and sends it only when the user does', async () => {
    const t = await open();
    // A turn first, so that the conversation is on the relay and the
    // reconnect resumes it.
    await t.page.fill('#prompt', 'hello');
    await t.page.press('#prompt', 'Enter');
    await t.page.waitForSelector('#transcript [data-kind="status"]');

    await sendAndLose(t, 'deploy the fix');
    const note = await t.page.waitForSelector('#transcript .note.lost[data-lost="back"]');
    assert.match(await note.textContent(), new RegExp(`${LOST}.*it is back in the box`));
    assert.equal(await prompt(t.page), 'deploy the fix');
    const rows = await transcriptRows(t.page);
    assert.deepEqual(rows.map((r) => r.kind), ['user', 'text', 'status', 'note'], JSON.stringify(rows));
    assert.equal(t.route.sends, 1, 'the page sent the lost prompt again by itself');

    // The user sends it: it runs once, as the user's own.
    await t.page.press('#prompt', 'Enter');
    await t.page.waitForFunction(() => document.querySelectorAll('#transcript [data-kind="status"]').length === 2);
    const after = await transcriptRows(t.page);
    assert.deepEqual(after.filter((r) => r.kind === 'user').map((r) => r.text), ['Youhello', 'Youdeploy the fix']);
    assert.equal(t.route.sends, 2);
    assert.equal(await prompt(t.page), '');
    assert.deepEqual(unexpected(), []);
    await t.page.context().close();
  });

  it('keeps the prompt in the note when the box holds something else, to put back or copy', async () => {
    const t = await open();
    await t.page.fill('#prompt', 'hello');
    await t.page.press('#prompt', 'Enter');
    await t.page.waitForSelector('#transcript [data-kind="status"]');

    // The page learns of the loss only once the new socket is subscribed:
    // the user has typed something else by then.
    t.holdSubscribed();
    await sendAndLose(t, 'first thought');
    await t.page.fill('#prompt', 'second thought');
    t.release();
    const note = await t.page.waitForSelector('#transcript .note.lost[data-lost="held"]');
    assert.match(await note.textContent(), new RegExp(LOST));
    assert.equal(await note.$eval('.prompt', (p) => p.textContent), 'first thought');
    assert.equal(await prompt(t.page), 'second thought', 'what the user typed meanwhile was replaced');

    await note.$eval('.put-back', (b) => b.click());
    await t.page.waitForSelector('#transcript .note.lost[data-lost="back"]');
    assert.equal(await prompt(t.page), 'second thought\n\nfirst thought');
    assert.equal(t.route.sends, 1, 'the page sent the lost prompt again by itself');
    assert.deepEqual(unexpected(), []);
    await t.page.context().close();
  });

  // sendTwice sends first and then second from the prompt box at once, in
  // one task of the page: the second goes before the page could see the
  // first's turn start, and the relay refuses it (a turn runs).
  const sendTwice = (page, first, second) => page.evaluate(([a, b]) => {
    const input = document.getElementById('prompt');
    const form = document.getElementById('composer');
    input.value = a;
    form.requestSubmit();
    input.value = b;
    form.requestSubmit();
  }, [first, second]);
  const BUSY = 'Not sent: the agent is still working on the last prompt';

  it('puts a refused prompt back in an empty box, exactly', async () => {
    const t = await open();
    await t.page.fill('#prompt', 'hello');
    await t.page.press('#prompt', 'Enter');
    await t.page.waitForSelector('#transcript [data-kind="status"]');

    const refused = t.heard('error');
    await sendTwice(t.page, 'hello', 'deploy the fix');
    assert.match(await refused, /"clientId":"/, 'the relay named no clientId');
    await t.page.waitForFunction((busy) => [...document.querySelectorAll('#transcript .note.warning')].some((n) => n.textContent.startsWith(busy)), BUSY);
    await t.page.waitForFunction(() => document.getElementById('prompt').value !== '');
    assert.equal(await prompt(t.page), 'deploy the fix');
    assert.equal(await t.page.locator('#transcript .note.lost').count(), 0, 'a refused prompt back in the box got a note of a lost one');
    assert.equal(t.route.sends, 3);
    // The user sends it once the turn ended: it runs once.
    await t.page.waitForFunction(() => document.querySelectorAll('#transcript [data-kind="status"]').length === 2);
    await t.page.press('#prompt', 'Enter');
    await t.page.waitForFunction(() => document.querySelectorAll('#transcript [data-kind="status"]').length === 3);
    const users = (await transcriptRows(t.page)).filter((r) => r.kind === 'user').map((r) => r.text);
    assert.deepEqual(users, ['Youhello', 'Youhello', 'Youdeploy the fix']);
    assert.deepEqual(unexpected(), []);
    await t.page.context().close();
  });

  it('keeps a refused prompt in a note when the box holds something else, to put back or copy', async () => {
    const t = await open();
    await t.page.fill('#prompt', 'hello');
    await t.page.press('#prompt', 'Enter');
    await t.page.waitForSelector('#transcript [data-kind="status"]');

    // The refusal reaches the page once the user has typed something else.
    t.holdErrors();
    const refused = t.heard('error');
    await sendTwice(t.page, 'hello', 'first thought');
    await refused;
    await t.page.fill('#prompt', 'second thought');
    t.release();
    const note = await t.page.waitForSelector('#transcript .note.lost[data-lost="held"]');
    assert.match(await note.textContent(), /^The relay did not take your message, and the box held something else/);
    assert.equal(await note.$eval('.prompt', (p) => p.textContent), 'first thought');
    assert.equal(await prompt(t.page), 'second thought', 'what the user typed meanwhile was replaced');
    await note.$eval('.put-back', (b) => b.click());
    await t.page.waitForSelector('#transcript .note.lost[data-lost="back"]');
    assert.equal(await prompt(t.page), 'second thought\n\nfirst thought');
    assert.equal(t.route.sends, 3, 'the page sent the refused prompt again by itself');
    assert.deepEqual(unexpected(), []);
    await t.page.context().close();
  });

  it('gives back, after a reload, a prompt the relay never got, and nothing it got', async () => {
    const t = await open();
    await t.page.fill('#prompt', 'hello');
    await t.page.press('#prompt', 'Enter');
    await t.page.waitForSelector('#transcript [data-kind="status"]');

    // The prompt goes nowhere and the page is reloaded before it knows.
    t.swallowSend();
    await t.page.fill('#prompt', 'deploy the fix');
    await t.page.press('#prompt', 'Enter');
    await t.page.waitForFunction(() => document.getElementById('prompt').value === '');
    assert.equal(t.route.swallowed, 1, 'the prompt was not swallowed');
    await t.page.reload();
    const note = await t.page.waitForSelector('#transcript .note.lost[data-lost="back"]');
    assert.match(await note.textContent(), new RegExp(`${LOST}.*it is back in the box`));
    assert.equal(await prompt(t.page), 'deploy the fix');
    const rows = await transcriptRows(t.page);
    assert.deepEqual(rows.map((r) => r.kind), ['user', 'text', 'status', 'note'], JSON.stringify(rows));
    assert.equal(await t.page.evaluate(() => sessionStorage.getItem('pilotdesk.unsent')), null, 'the tab still keeps the prompt given back');

    // The next one reaches the relay, but its echo not the page before
    // the reload: the reloaded page finds it in the conversation and
    // gives nothing back.
    await t.page.fill('#prompt', '');
    t.mute();
    const ended = t.heard('copilot:idle');
    await t.page.fill('#prompt', 'hello');
    await t.page.press('#prompt', 'Enter');
    await ended;
    assert.match(await t.page.evaluate(() => sessionStorage.getItem('pilotdesk.unsent')), /"prompt":"hello"/);
    await t.page.reload();
    await t.page.waitForFunction(() => document.querySelectorAll('#transcript [data-kind="status"]').length === 2);
    await t.page.waitForFunction(() => sessionStorage.getItem('pilotdesk.unsent') === null);
    const after = await transcriptRows(t.page);
    assert.deepEqual(after.filter((r) => r.kind === 'user').map((r) => r.text), ['Youhello', 'Youhello']);
    assert.equal(await t.page.locator('#transcript .note.lost').count(), 0, 'a prompt the relay got came back after the reload');
    assert.equal(await prompt(t.page), '');
    assert.equal(t.route.sends, 2, 'the page sent a prompt again by itself');
    assert.deepEqual(unexpected(), []);
    await t.page.context().close();
  });

  it("gives back, after a reload, a new conversation's first prompt the relay never got", async () => {
    const t = await open();
    t.swallowSend();
    await t.page.fill('#prompt', 'first words');
    await t.page.press('#prompt', 'Enter');
    await t.page.waitForFunction(() => document.getElementById('prompt').value === '');
    assert.equal(t.route.swallowed, 1, 'the prompt was not swallowed');
    const link = new URL(t.page.url()).hash;
    await t.page.reload();
    // The page opens that conversation again, which the relay has no
    // event of, and finds the prompt missing.
    const note = await t.page.waitForSelector('#transcript .note.lost[data-lost="back"]');
    assert.match(await note.textContent(), new RegExp(`${LOST}.*it is back in the box`));
    assert.equal(new URL(t.page.url()).hash, link);
    assert.equal(await prompt(t.page), 'first words');
    assert.equal(t.route.sends, 0, 'the page sent the prompt again by itself');
    assert.deepEqual(unexpected(), []);
    await t.page.context().close();
  });
});
