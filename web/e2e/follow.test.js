// Following the newest content: the transcript stays at the bottom while
// a long reply streams (with the Plan banner shown too), a send and an
// answer bring the latest into view wherever the user had scrolled, a
// user who scrolled up stays there and sees a "New messages" pill that
// counts what arrived and jumps there, and opening a conversation shows
// its latest turn. The scripted agent's "essay" turns are taller than a
// phone's screen.

import { describe, it, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { browser, chromiumMissing, screenshot, startRelay, watchPage } from './harness.js';

const skip = chromiumMissing();
const WAIT = 30_000;
const PHONE = { width: 390, height: 844 };

describe('following the conversation', { skip: skip || false }, () => {
  let relay;
  let chrome;
  let problems = [];
  const contexts = [];

  before(async () => {
    relay = await startRelay();
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

  async function fresh() {
    const ctx = await chrome.newContext({ viewport: PHONE });
    ctx.setDefaultTimeout(WAIT);
    contexts.push(ctx);
    const page = await ctx.newPage();
    watchPage(page, relay, problems);
    await page.goto(relay.pageURL);
    await page.waitForSelector('body[data-state="live"]');
    await page.click('#menu');
    await page.click('#new-conv');
    await page.waitForFunction(() => document.querySelectorAll('#transcript [data-row]').length === 0);
    return page;
  }

  async function send(page, text) {
    await page.waitForSelector('#send:not([disabled])');
    await page.fill('#prompt', text);
    await page.press('#prompt', 'Enter');
  }

  const done = (page) => page.waitForSelector('#transcript [data-kind="status"]');

  // atEnd resolves once the view shows the end of the transcript: the
  // scroller at its bottom and the last row's bottom inside the view.
  function atEnd(page, why) {
    return page.waitForFunction(() => {
      const t = document.getElementById('transcript');
      const rows = t.querySelectorAll('[data-row]');
      const last = rows[rows.length - 1];
      if (!last) return false;
      const gap = t.scrollHeight - t.scrollTop - t.clientHeight;
      return gap <= 2 && last.getBoundingClientRect().bottom <= t.getBoundingClientRect().bottom + 1;
    }, null, { timeout: WAIT }).catch(async () => {
      const where = await page.evaluate(() => {
        const t = document.getElementById('transcript');
        return { scrollHeight: t.scrollHeight, scrollTop: t.scrollTop, clientHeight: t.clientHeight };
      });
      throw new Error(`${why}: the end of the transcript is not in view (${JSON.stringify(where)})`);
    });
  }

  async function scrollUp(page) {
    const box = await page.locator('#transcript').boundingBox();
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await page.mouse.wheel(0, -3000);
    await page.waitForFunction(() => {
      const t = document.getElementById('transcript');
      return t.scrollHeight - t.scrollTop - t.clientHeight > t.clientHeight / 2;
    });
  }

  it('follows a reply taller than the view, and the Plan banner does not hide the end', async () => {
    const page = await fresh();
    await send(page, 'essay');
    // Half way through: the growing reply is in view.
    await page.waitForFunction(() => /Paragraph 15/.test(document.getElementById('transcript').textContent));
    await atEnd(page, 'while the reply streams');
    await done(page);
    await atEnd(page, 'once the turn completed');
    // The banner takes room from the view: the end stays in it.
    await page.click('#mode-plan');
    await page.waitForSelector('#plan-banner:not([hidden])');
    await page.waitForSelector('#transcript [data-kind="mode"]');
    await atEnd(page, 'with the Plan banner shown');
    await send(page, 'essay');
    await page.waitForFunction(() => document.querySelectorAll('#transcript [data-kind="status"]').length >= 2);
    await atEnd(page, 'after a reply in Plan mode');
    assert.equal(await page.isHidden('#new-below'), true, 'the pill shows while following');
  });

  it('stays where the user scrolled, counts what arrives below, and jumps there', async () => {
    const page = await fresh();
    await send(page, 'essay');
    await done(page);
    await atEnd(page, 'once the turn completed');
    await scrollUp(page);
    const top = await page.$eval('#transcript', (t) => t.scrollTop);
    // Another device sends in the same conversation while this one reads
    // above: its prompt, the reply and the end arrive below.
    const other = await fresh();
    if (await other.isVisible('#menu')) await other.click('#menu');
    await other.click('#conv-list .conv >> text=essay');
    await other.waitForSelector('#transcript [data-kind="status"]');
    await send(other, 'hello');
    await page.waitForFunction(() => document.querySelectorAll('#transcript [data-kind="status"]').length >= 2);
    await page.waitForFunction(() => Number(document.getElementById('new-below').dataset.count) >= 3);
    assert.equal(await page.isVisible('#new-below'), true);
    assert.match(await page.textContent('#new-below'), /New messages \(\d+\) ↓/);
    await screenshot(page, 'phone-light-new-below');
    const after = await page.$eval('#transcript', (t) => t.scrollTop);
    assert.ok(Math.abs(after - top) < 50, `the view moved from ${top} to ${after} while the user read above`);
    await page.click('#new-below');
    await atEnd(page, 'after a tap on the pill');
    await page.waitForSelector('#new-below', { state: 'hidden' });

    // Scrolled up again, a send brings the latest into view.
    await scrollUp(page);
    await send(page, 'hello');
    await page.waitForFunction(() => document.querySelectorAll('#transcript [data-kind="status"]').length >= 3);
    await atEnd(page, 'after a send from above');
  });

  it('brings the latest into view after an answer, and opens a conversation at its latest turn', async () => {
    const page = await fresh();
    await send(page, 'essay question');
    await page.waitForSelector('#question:not([hidden]) .choice');
    await page.click('#question .choice >> nth=0');
    await done(page);
    assert.match(await page.textContent('#transcript'), /Answered: Keep\./);
    await atEnd(page, 'after an answer');

    // A reload opens the same conversation: at its end, not its start.
    await page.reload();
    await page.waitForSelector('body[data-state="live"]');
    await done(page);
    await atEnd(page, 'on opening the conversation');
  });
});
