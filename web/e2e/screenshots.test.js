// Screenshots of the web client on the built-in demo, and on the fake ACP
// agent for an agent's reasoning and plan, at a phone's size (390×844) and
// a desktop's, light and dark, with checks that the layout fits. `make web-screenshots` writes them to screenshots/web-*.png (set
// WEB_SCREENSHOTS to a directory); otherwise they go to a temp dir, so that
// `make test` checks the layout without touching the repository.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { browser, chromiumMissing, repo, startRelay, tempDir, watchPage } from './harness.js';

const skip = chromiumMissing();
const WAIT = 30_000;
const OUT = process.env.WEB_SCREENSHOTS ? path.resolve(repo, process.env.WEB_SCREENSHOTS) : tempDir('pilotdesk-shots-');
const PHONE = { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true };
const DESKTOP = { viewport: { width: 1280, height: 800 } };

describe('screenshots', { skip: skip || false }, () => {
  let chrome;
  let relay;
  let acpRelay; // the ACP backend with the fake ACP agent
  const problems = [];

  before(async () => {
    relay = await startRelay({ script: null }); // the built-in demo
    acpRelay = await startRelay({ acp: true, token: 'e2e-acp-token-0123456789' });
    chrome = await browser();
  });

  after(async () => {
    await chrome?.close();
    await relay?.stop();
    await acpRelay?.stop();
    console.log(`screenshots in ${OUT}`);
  });

  async function page(device, colorScheme, on = relay) {
    const ctx = await chrome.newContext({ ...device, colorScheme });
    ctx.setDefaultTimeout(WAIT);
    const p = await ctx.newPage();
    watchPage(p, on, problems);
    await p.goto(on.pageURL);
    await p.waitForSelector('body[data-state="live"]');
    return p;
  }

  async function newConversation(p) {
    if (await p.isVisible('#menu')) await p.click('#menu');
    await p.click('#new-conv');
  }

  async function turn(p, prompt, { plan = false } = {}) {
    await newConversation(p);
    if (plan) await p.click('#mode-plan');
    await p.fill('#prompt', prompt);
    await p.click('#send'); // on a touch screen Enter adds a line
  }

  const done = (p, n = 1) => p.waitForFunction((k) => document.querySelectorAll('#transcript [data-kind="status"]').length >= k, n);

  // fits checks what a small screen needs: nothing wider than the screen,
  // and the composer on it.
  async function fits(p, what) {
    const m = await p.evaluate(() => {
      const composer = document.getElementById('composer').getBoundingClientRect();
      return { scroll: document.documentElement.scrollWidth, width: window.innerWidth, composerBottom: composer.bottom, height: window.innerHeight };
    });
    assert.ok(m.scroll <= m.width, `${what}: the page is ${m.scroll} px wide on a ${m.width} px screen`);
    assert.ok(m.composerBottom <= m.height, `${what}: the composer ends at ${m.composerBottom}, below the screen (${m.height})`);
  }

  async function shot(p, name) {
    await p.screenshot({ path: path.join(OUT, `web-${name}.png`), animations: 'disabled', caret: 'hide' });
  }

  it('phone, light: a streamed markdown reply', async () => {
    const p = await page(PHONE, 'light');
    await turn(p, 'markdown');
    await done(p);
    await fits(p, 'markdown reply');
    await p.evaluate(() => { document.getElementById('transcript').scrollTop = 0; });
    await shot(p, 'phone-light-markdown');
    await p.context().close();
  });

  it('phone, light: the usage line is read whole, wrapped', async () => {
    const p = await page(PHONE, 'light');
    await turn(p, 'usage');
    await done(p);
    await fits(p, 'usage');
    const u = await p.evaluate(() => {
      const el = document.getElementById('usage');
      return { text: el.textContent, scroll: el.scrollWidth, width: el.clientWidth };
    });
    assert.match(u.text, /\d+ of 300 premium requests used, \d+% left/);
    assert.ok(u.scroll <= u.width, `the usage line is ${u.scroll} px wide in ${u.width} px: part of it is off screen`);
    await shot(p, 'phone-light-usage');
    await p.context().close();
  });

  it('phone, dark: Plan mode, the banner and denied tools', async () => {
    const p = await page(PHONE, 'dark');
    await turn(p, 'tool', { plan: true });
    await done(p);
    await fits(p, 'plan mode');
    assert.equal(await p.isVisible('#plan-banner'), true);
    await shot(p, 'phone-dark-plan');
    await p.context().close();
  });

  it('phone, light: a choice question', async () => {
    const p = await page(PHONE, 'light');
    await turn(p, 'choose');
    await p.waitForSelector('.q-card');
    await fits(p, 'question');
    const card = await p.$eval('.q-card', (c) => c.getBoundingClientRect().toJSON());
    assert.ok(card.top >= 0 && card.bottom <= 844 && card.right <= 390, `the question does not fit the screen: ${JSON.stringify(card)}`);
    await shot(p, 'phone-light-question');
    await p.keyboard.press('1');
    await done(p);
    await p.context().close();
  });

  it('phone, dark: an approval while the agent waits', async () => {
    const p = await page(PHONE, 'dark');
    await turn(p, 'approve');
    await p.waitForSelector('.q-card');
    await shot(p, 'phone-dark-approval');
    await p.click('[data-answer="approve"]');
    await done(p);
    await p.context().close();
  });

  it('phone, light: the conversation list', async () => {
    const p = await page(PHONE, 'light');
    await p.click('#menu');
    await p.waitForSelector('.drawer-open');
    await p.waitForTimeout(300); // the drawer slides in
    await shot(p, 'phone-light-list');
    await p.context().close();
  });

  it('desktop, light and dark: the sidebar, a reply and a question', async () => {
    const p = await page(DESKTOP, 'light');
    await turn(p, 'usage');
    await done(p);
    await fits(p, 'desktop');
    await shot(p, 'desktop-light');
    await p.context().close();

    const d = await page(DESKTOP, 'dark');
    await turn(d, 'ask');
    await d.waitForSelector('.q-card');
    await shot(d, 'desktop-dark-question');
    await d.fill('.q-input', 'DuckDB');
    await d.press('.q-input', 'Enter');
    await done(d);
    await d.context().close();
  });

  it('phone, light: an ACP agent\'s reasoning, opened, and its plan', async () => {
    const p = await page(PHONE, 'light', acpRelay);
    await turn(p, 'think');
    await done(p);
    await p.click('#transcript [data-kind="reasoning"] summary');
    await fits(p, 'reasoning and plan');
    const plan = await p.$eval('#transcript [data-kind="plan"]', (c) => c.getBoundingClientRect().toJSON());
    assert.ok(plan.left >= 0 && plan.right <= 390, `the plan card does not fit the screen: ${JSON.stringify(plan)}`);
    await shot(p, 'phone-light-acp');
    await p.context().close();
  });

  it('desktop, dark: an ACP agent in the list, its reasoning collapsed and its plan', async () => {
    const p = await page(DESKTOP, 'dark', acpRelay);
    await turn(p, 'think');
    await done(p);
    await p.waitForFunction(() => document.querySelectorAll('#conv-list .conv-agent').length >= 2);
    await fits(p, 'desktop acp');
    await shot(p, 'desktop-dark-acp');
    await p.context().close();
  });

  it('phone, light: connecting without a token', async () => {
    const ctx = await chrome.newContext({ ...PHONE, colorScheme: 'light' });
    const p = await ctx.newPage();
    await p.goto(relay.base);
    await p.waitForSelector('#login:not([hidden])', { timeout: WAIT });
    await shot(p, 'phone-light-connect');
    await ctx.close();
    assert.deepEqual(problems, []);
  });
});
