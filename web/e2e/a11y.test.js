// Accessibility: axe-core (pinned in package-lock.json) on every main state
// of the page, light and dark, at a phone's size: a reply with markdown, a
// tool row, Plan mode with its banner, a question, the list, the pill,
// the login. No serious or critical violation of WCAG 2.2 A/AA may remain.
// The context bypasses the page's CSP only to inject axe itself.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { browser, chromiumMissing, startRelay } from './harness.js';

const skip = chromiumMissing();
const WAIT = 30_000;
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

describe('accessibility', { skip: skip || false }, () => {
  let relay;
  let chrome;

  before(async () => {
    relay = await startRelay();
    chrome = await browser();
  });

  after(async () => {
    await chrome?.close();
    await relay?.stop();
  });

  async function check(page, state, found) {
    if (!(await page.evaluate(() => typeof window.axe === 'object'))) await page.addScriptTag({ content: AXE });
    const violations = await page.evaluate(async () => {
      const r = await window.axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'] } });
      return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
        .map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}`);
    });
    for (const v of violations) found.push(`${state}: ${v}`);
  }

  for (const colorScheme of ['light', 'dark']) {
    it(`has no serious violation in ${colorScheme}`, async () => {
      const found = [];
      const ctx = await chrome.newContext({ viewport: { width: 390, height: 844 }, colorScheme, bypassCSP: true, reducedMotion: 'reduce' });
      ctx.setDefaultTimeout(WAIT);
      const page = await ctx.newPage();
      await page.goto(relay.pageURL);
      await page.waitForSelector('body[data-state="live"]');
      await page.click('#menu');
      await page.click('#new-conv');
      await page.fill('#prompt', 'hello');
      await page.click('#send');
      await page.waitForSelector('#transcript [data-kind="status"]');
      await check(page, 'a reply', found);

      await page.click('#mode-plan');
      await page.waitForSelector('#plan-banner:not([hidden])');
      await page.fill('#prompt', 'tool');
      await page.click('#send');
      await page.waitForFunction(() => document.querySelectorAll('#transcript [data-kind="status"]').length >= 2);
      await check(page, 'plan mode', found);

      await page.fill('#prompt', 'approve');
      await page.click('#send');
      await page.waitForSelector('.q-card[data-kind="approval"]');
      await check(page, 'a question', found);
      await page.click('.q-card [data-answer="approve"]');
      await page.waitForFunction(() => document.querySelectorAll('#transcript [data-kind="status"]').length >= 3);

      await page.click('#menu');
      await page.waitForSelector('#app.drawer-open');
      await check(page, 'the list', found);
      await ctx.close();

      const login = await chrome.newContext({ viewport: { width: 390, height: 844 }, colorScheme, bypassCSP: true });
      const lp = await login.newPage();
      await lp.goto(relay.base);
      await lp.waitForSelector('#login:not([hidden])');
      await check(lp, 'the login', found);
      await login.close();
      assert.deepEqual(found, []);
    });
  }
});
