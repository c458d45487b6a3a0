// The web client scrolling a long conversation (issue #29's target, part
// of `make bench` through scripts/web-bench.sh): a conversation of 5,000
// tool calls (about 10,000 events) opened at a phone's size, then scrolled
// up 20 screens, a screen a frame, the page adding earlier rows as it
// goes. Measured with the DevTools protocol: the main thread's CPU for the
// 20 screens (Performance.getMetrics' TaskDuration) and the longest task
// (a PerformanceObserver of long tasks). Target: under 1 s of CPU, no task
// over 50 ms. Exits non-zero when a target is missed.
//
//   node web/e2e/scroll.bench.mjs        (PILOTDESK_BIN: the binary)

import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { browser, playTurn, startRelay, tempDir } from './harness.js';

const TOOLS = Number(process.env.SCROLL_TOOLS || 5000);
const SCREENS = 20;
const PHONE = { width: 390, height: 844 };

const dir = tempDir('pd-scroll-');
const steps = [];
for (let i = 0; i < TOOLS; i++) steps.push({ tool: { name: 'bash', arguments: { command: `echo ${i}` }, result: `ok ${i}` } });
steps.push({ delta: 'All done.' });
const script = path.join(dir, 'long.json');
writeFileSync(script, JSON.stringify({ turns: [{ match: 'many', steps }, { steps: [{ delta: 'Echo: {{prompt}}' }] }] }));
const relay = await startRelay({ script });
const chrome = await browser();
let code = 0;
try {
  const ctx = await chrome.newContext({ viewport: PHONE });
  ctx.setDefaultTimeout(300_000);
  await ctx.addInitScript(() => {
    window.longTasks = [];
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) window.longTasks.push(Math.round(e.duration));
    }).observe({ type: 'longtask', buffered: true });
  });
  // The conversation is played through a socket of the page's, not drawn.
  const maker = await ctx.newPage();
  await maker.goto(relay.base);
  const id = 'scroll-bench';
  const events = await playTurn(maker, relay, id, 'many', 300_000);
  await maker.close();

  const page = await ctx.newPage();
  await page.goto(`${relay.pageURL}&/c/${id}`);
  await page.waitForFunction((n) => {
    const t = document.getElementById('transcript');
    const rows = t.querySelectorAll('[data-row]');
    return (t.dataset.waiting || '0') === '0' && rows.length > 0 && Number(rows[rows.length - 1].dataset.row) === n - 1
      && t.scrollHeight - t.scrollTop - t.clientHeight <= 2;
  }, TOOLS + 3);
  // Settle: what opening left to do is not the scroll's.
  await page.waitForTimeout(1000);
  await page.evaluate(() => { window.longTasks = []; });
  const cdp = await ctx.newCDPSession(page);
  await cdp.send('Performance.enable');
  const taskTime = async () => (await cdp.send('Performance.getMetrics')).metrics.find((m) => m.name === 'TaskDuration').value;
  const cpu0 = await taskTime();
  const scrolled = await page.evaluate(async (screens) => {
    const t = document.getElementById('transcript');
    const frame = () => new Promise((r) => requestAnimationFrame(() => r()));
    const start = t.scrollTop;
    let moved = 0;
    for (let i = 0; i < screens; i++) {
      const before = t.scrollTop;
      t.scrollTop = Math.max(0, t.scrollTop - t.clientHeight);
      t.dispatchEvent(new Event('scroll'));
      await frame();
      await frame();
      moved += Math.max(0, before - t.scrollTop);
    }
    return { moved: Math.round(moved), height: t.clientHeight, start: Math.round(start), rows: t.querySelectorAll('[data-row]').length };
  }, SCREENS);
  const cpu = (await taskTime()) - cpu0;
  const tasks = await page.evaluate(() => window.longTasks);
  const longest = tasks.length ? Math.max(...tasks) : 0;
  console.log(`scrolling ${SCREENS} screens up a conversation of ${TOOLS} tool calls (${events} events; ${scrolled.moved} px of ${scrolled.height} px screens, ${scrolled.rows} rows in the page after): main-thread CPU ${Math.round(cpu * 1000)} ms (target < 1000), longest task ${longest} ms (target <= 50), ${tasks.length} long tasks`);
  if (cpu >= 1 || longest > 50) code = 1;
  if (scrolled.moved < (SCREENS - 1) * scrolled.height) {
    console.log(`  the page scrolled only ${scrolled.moved} px of ${SCREENS} screens`);
    code = 1;
  }
} finally {
  await chrome.close();
  await relay.stop();
}
process.exit(code);
