// Devices (issue #14) in the web client against the real relay: a phone
// with a device token of its own (made with `pilotdesk token create`)
// answers a question another page raised, and that page names the phone;
// the phone names who sent the prompt; a mode the phone switches is
// marked with its name on the laptop; when the phone's token is revoked
// the relay closes it with 4003 and the page says so and stops trying.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { binary, browser, chromiumMissing, startRelay, tempDir, watchPage } from './harness.js';

const skip = chromiumMissing();
const WAIT = 20_000;
const PHONE = { width: 390, height: 844 };

describe('devices', { skip: skip || false }, () => {
  let relay;
  let chrome;
  let dataDir;

  before(async () => {
    dataDir = tempDir('pilotdesk-e2e-devices-');
    relay = await startRelay({ dataDir });
    chrome = await browser();
  });

  after(async () => {
    await chrome?.close();
    await relay?.stop();
  });

  function token(...args) {
    return execFileSync(binary(), ['token', ...args, '--data-dir', dataDir], { encoding: 'utf8' });
  }

  async function page(url, problems) {
    const ctx = await chrome.newContext({ viewport: PHONE });
    ctx.setDefaultTimeout(WAIT);
    const p = await ctx.newPage();
    watchPage(p, relay, problems);
    await p.goto(url);
    await p.waitForSelector('body[data-state="live"]');
    return p;
  }

  it('names the device that answered, and stops when its token is revoked', async () => {
    const problems = [];
    const pixel = token('create', '--name', 'Pixel', '--role', 'controller').split('\n')[0];
    assert.match(pixel, /^pdt_/);

    // The laptop's page (the relay's own token) raises a question.
    const laptop = await page(relay.pageURL, problems);
    if (await laptop.isVisible('#menu')) await laptop.click('#menu');
    await laptop.click('#new-conv');
    await laptop.waitForSelector('#send:not([disabled])');
    await laptop.fill('#prompt', 'approve');
    await laptop.press('#prompt', 'Enter');
    await laptop.waitForSelector('.q-card[data-kind="approval"]');

    // The phone opens on the conversation that waits for an answer.
    const phone = await page(`${relay.base}#token=${encodeURIComponent(pixel)}`, problems);
    const sockets = [];
    phone.on('websocket', (ws) => sockets.push(ws.url()));
    await phone.waitForSelector('.q-card[data-kind="approval"]');
    await phone.click('.q-card [data-answer="approve"]');

    await laptop.waitForSelector('.q-card', { state: 'detached' });
    await laptop.waitForFunction(() => /answered from/.test(document.querySelector('#transcript [data-kind="note"]')?.textContent ?? ''));
    assert.match(await laptop.textContent('#transcript [data-kind="note"]'), /"Deploy to production\?" was answered from Pixel \(web\)\./);
    assert.match(await laptop.textContent('#transcript [data-kind="user"] .who'), /^You/);
    // The phone hears of the answer on its own socket, maybe after the
    // laptop did.
    await phone.waitForSelector('#transcript [data-kind="note"]');
    assert.match(await phone.textContent('#transcript [data-kind="note"]'), /You answered "approve"/);
    assert.match(await phone.textContent('#transcript [data-kind="user"] .who'), /Sent from the web client on the relay's computer/);

    // Reloaded, each page still knows its own: it learnt who it is on the
    // relay from the echo of what it sent.
    for (const p of [laptop, phone]) {
      await p.reload();
      await p.waitForSelector('body[data-state="live"]');
      await p.waitForSelector('#transcript [data-kind="note"]');
    }
    assert.match(await laptop.textContent('#transcript [data-kind="user"] .who'), /^You/);
    assert.match(await laptop.textContent('#transcript [data-kind="note"]'), /was answered from Pixel \(web\)\./);
    assert.match(await phone.textContent('#transcript [data-kind="note"]'), /^You answered "Deploy to production\?"\.$/);
    assert.match(await phone.textContent('#transcript [data-kind="user"] .who'), /Sent from the web client on the relay's computer/);

    // The phone switches the conversation to Plan: the laptop's marker
    // names it (changedBy), the phone's own says only what it does.
    await laptop.waitForSelector('body[data-state="live"]');
    await phone.click('#mode-plan');
    await laptop.waitForSelector('#transcript [data-kind="mode"]');
    assert.match(await laptop.textContent('#transcript [data-kind="mode"]'), /^Switched to Plan by Pixel \(web\): every tool call is denied/);
    await phone.waitForSelector('#transcript [data-kind="mode"]');
    assert.match(await phone.textContent('#transcript [data-kind="mode"]'), /^Switched to Plan: every tool call is denied/);

    // Revoked: closed with 4003, said plainly, and no new attempt.
    token('revoke', 'Pixel');
    await phone.waitForSelector('body[data-state="refused"]');
    assert.match(await phone.textContent('#login-why'), /This device's token was revoked or expired; ask for a new one\./);
    const attempts = sockets.length;
    await phone.waitForTimeout(2500); // the backoff would have retried twice by now
    assert.equal(sockets.length, attempts, 'the page tried to connect again after 4003');
    assert.equal(await phone.getAttribute('body', 'data-state'), 'refused');
    assert.equal(await laptop.getAttribute('body', 'data-state'), 'live');
    // The dead token is forgotten: a reload asks for a new one instead of
    // trying it again.
    await phone.waitForSelector('body[data-token="forgotten"]');
    assert.equal(await phone.evaluate(() => localStorage.getItem('pilotdesk.token')), null);
    await phone.reload();
    await phone.waitForSelector('#login:not([hidden])');
    assert.match(await phone.textContent('#login-why'), /This page needs the token of the relay that served it\./);
    assert.equal(await phone.getAttribute('body', 'data-state'), 'refused');
    assert.deepEqual(problems, []);
  });
});
