// What a phone needs of the web client beyond the chat itself: a link per
// conversation (#/c/<id>) that opens it, with the back button returning
// to the list; a viewer's read-only page; and a question sheet that leaves
// the turn that led to it readable and gives the focus back where the
// user was after an answer.

import { describe, it, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { binary, browser, chromiumMissing, screenshot, startRelay, tempDir, watchPage } from './harness.js';

const skip = chromiumMissing();
const WAIT = 30_000;
const PHONE = { width: 390, height: 844 };

describe('the phone client', { skip: skip || false }, () => {
  let relay;
  let chrome;
  let dataDir;
  let problems = [];
  const contexts = [];

  before(async () => {
    dataDir = tempDir('pilotdesk-e2e-phone-');
    relay = await startRelay({ dataDir });
    chrome = await browser();
  });

  after(async () => {
    await chrome?.close();
    await relay?.stop();
  });

  afterEach(async () => {
    while (contexts.length) await contexts.pop().close();
    const found = problems;
    problems = [];
    assert.deepEqual(found, [], 'the page logged an error or asked another host for something');
  });

  async function context() {
    const ctx = await chrome.newContext({ viewport: PHONE });
    ctx.setDefaultTimeout(WAIT);
    contexts.push(ctx);
    return ctx;
  }

  async function open(ctx, url = relay.pageURL) {
    const page = await ctx.newPage();
    watchPage(page, relay, problems);
    await page.goto(url);
    await page.waitForSelector('body[data-state="live"]');
    return page;
  }

  async function newConversation(page) {
    await page.click('#menu');
    await page.click('#new-conv');
    await page.waitForFunction(() => document.querySelectorAll('#transcript [data-row]').length === 0);
  }

  async function send(page, text) {
    await page.waitForSelector('#send:not([disabled])');
    await page.fill('#prompt', text);
    await page.click('#send');
  }

  const statuses = (page, n) => page.waitForFunction((k) => document.querySelectorAll('#transcript [data-kind="status"]').length >= k, n);

  it('opens a conversation from its link, and back returns to the list', async () => {
    const ctx = await context();
    const page = await open(ctx);
    await newConversation(page);
    await send(page, 'hello');
    await statuses(page, 1);
    const link = page.url();
    assert.match(link, /#\/c\/[0-9a-f-]{36}$/, 'the address names the conversation');
    assert.ok(!link.includes(relay.token), 'the token is in the address');
    await newConversation(page);
    await send(page, 'tool');
    await statuses(page, 1);
    assert.notEqual(page.url(), link);

    // The link opens its conversation, not the one last open.
    const other = await open(ctx, link);
    await other.waitForFunction(() => /Here is a list/.test(document.getElementById('transcript').textContent));
    assert.equal(other.url(), link);

    // Back from a conversation opened from the list returns to the list,
    // and back again to the conversation before.
    await other.click('#menu');
    await other.waitForFunction(() => location.hash === '#/');
    await other.click('#conv-list .conv >> nth=1');
    await other.waitForFunction((l) => location.href !== l && /^#\/c\//.test(location.hash), link);
    await other.waitForSelector('#app:not(.drawer-open)');
    await other.goBack();
    await other.waitForFunction(() => location.hash === '#/');
    await other.waitForSelector('#app.drawer-open');
    assert.equal(await other.getAttribute('#menu', 'aria-expanded'), 'true');
    await other.goBack();
    await other.waitForFunction((l) => location.href === l, link);
    await other.waitForSelector('#app:not(.drawer-open)');
    await other.waitForFunction(() => /Here is a list/.test(document.getElementById('transcript').textContent));
    // Closed, the drawer is out of the Tab order.
    assert.equal(await other.$eval('#drawer', (d) => d.inert), true);
  });

  it('shows a viewer the conversation and its question read-only, saying why', async () => {
    const viewerToken = execFileSync(binary(), ['token', 'create', '--name', 'Watcher', '--role', 'viewer', '--data-dir', dataDir], { encoding: 'utf8' }).split('\n')[0];
    assert.match(viewerToken, /^pdt_/);
    const owner = await open(await context());
    await newConversation(owner);
    await send(owner, 'approve');
    await owner.waitForSelector('.q-card[data-kind="approval"]');

    const viewer = await open(await context(), `${relay.base}#token=${viewerToken}`);
    await viewer.waitForSelector('body[data-role="viewer"]');
    // It opens the conversation that waits, and shows the question to read.
    await viewer.waitForSelector('.q-card[data-viewer="true"]');
    assert.match(await viewer.textContent('.q-card'), /Deploy to production\?/);
    assert.match(await viewer.textContent('.q-card'), /This device is a viewer: it cannot answer/);
    assert.equal(await viewer.$$eval('.q-card [data-answer], .q-card .choice, .q-card textarea', (n) => n.length), 0, 'a viewer is offered an answer');
    assert.equal(await viewer.$eval('#app', (a) => a.inert), false, 'a viewer\'s page is blocked by a question it cannot answer');
    // No composer, no Plan/Act: a line says why.
    assert.equal(await viewer.isHidden('#composer'), true);
    assert.match(await viewer.textContent('#send-why'), /viewer: it follows conversations but cannot send/);
    assert.ok(await viewer.isVisible('#send-why'));
    await screenshot(viewer, 'phone-light-viewer');

    // The owner answers: the viewer's sheet goes, the turn ends there too.
    await owner.click('.q-card [data-answer="approve"]');
    await viewer.waitForSelector('.q-card', { state: 'detached' });
    await statuses(viewer, 1);
  });

  it('keeps the turn that led to a question readable, and the focus where the user was', async () => {
    const page = await open(await context());
    await newConversation(page);
    await send(page, 'essay question');
    await page.waitForSelector('.q-card .choice');
    // The end of the transcript, the question's context, sits above the sheet.
    await page.waitForFunction(() => {
      const t = document.getElementById('transcript');
      const rows = t.querySelectorAll('[data-kind="text"]');
      const last = rows[rows.length - 1];
      const card = document.querySelector('.q-card');
      if (!last || !card) return false;
      const r = last.getBoundingClientRect();
      return r.bottom <= card.getBoundingClientRect().top + 2 && r.bottom > t.getBoundingClientRect().top + 40;
    });
    assert.match(await page.textContent('#transcript'), /Context 20/);

    // Folded to a line, the transcript scrolls behind it; the rest of the
    // page stays out of reach.
    await page.click('.q-fold');
    await page.waitForSelector('#question.folded');
    assert.equal(await page.$eval('#composer', (c) => !!c.closest('[inert]')), true);
    assert.equal(await page.$eval('#transcript', (t) => !!t.closest('[inert]')), false);
    const box = await page.locator('#transcript').boundingBox();
    await page.mouse.move(box.x + box.width / 2, box.y + 100);
    const top = await page.$eval('#transcript', (t) => t.scrollTop);
    await page.mouse.wheel(0, -600);
    await page.waitForFunction((t0) => document.getElementById('transcript').scrollTop < t0 - 100, top);
    await page.click('.q-fold');
    await page.waitForSelector('#question:not(.folded)');

    // Answered by a tap: the focus is back on Send, where the user was,
    // not in the prompt box (a phone's keyboard would come up).
    await page.click('.q-card .choice >> nth=0');
    await page.waitForSelector('.q-card', { state: 'detached' });
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'send');
    await statuses(page, 1);
  });
});
