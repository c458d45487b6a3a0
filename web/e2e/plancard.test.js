// The plan card in the web client, against the real relay and its scripted
// agent: a turn in Plan whose tool calls the relay denies ends with a card
// of those calls, a checkbox each, all ticked; unticking one and pressing
// Run in Act sends exactly the ticked steps (the prompt of
// conversation.PlanPrompt) in Act, the agent carries out those (the script
// agent's numbered steps), and the card is then done and cannot run again,
// on this page and on one opened afterwards. A Run in Act whose prompt
// comes back to the user (the relay did not get it, or refused it) ran
// nothing: the card can run again.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { browser, chromiumMissing, screenshot as shot, startRelay, tempDir, watchPage } from './harness.js';

const skip = chromiumMissing();
const WAIT = 30_000;
const PHONE = { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true };

describe('plan card', { skip: skip || false }, () => {
  let relay;
  let chrome;

  before(async () => {
    const dataDir = tempDir('pilotdesk-e2e-plancard-');
    const script = path.join(dataDir, 'script.json');
    writeFileSync(script, JSON.stringify({ turns: [{ match: 'slow', steps: [
      { delta: 'Working. ' }, { sleep: '300ms' }, { delta: 'Still working. ' }, { sleep: '300ms' }, { delta: 'Done.' },
    ] }, { match: 'release', steps: [
      { delta: 'First the tests, then the notes, then the deploy. ' },
      { tool: { name: 'bash', arguments: { command: 'make test' }, result: 'ok' } },
      { tool: { name: 'edit', arguments: { path: 'NOTES.md', old_str: 'v1', new_str: 'v2' }, result: 'edited' } },
      { tool: { name: 'bash', arguments: { command: 'make deploy' }, result: 'deployed' } },
      { delta: 'That is the plan.' },
    ] }] }));
    relay = await startRelay({ dataDir, script });
    chrome = await browser();
  });

  after(async () => {
    await chrome?.close();
    await relay?.stop();
  });

  // page opens the page; with route, behind a WebSocket route that
  // forwards every frame but drops the socket with the next copilot:send
  // once route.drop is set (the relay never gets that prompt).
  async function page(url, problems, colorScheme = 'light', route = null) {
    const ctx = await chrome.newContext({ ...PHONE, colorScheme });
    ctx.setDefaultTimeout(WAIT);
    const p = await ctx.newPage();
    watchPage(p, relay, problems);
    if (route) {
      await p.routeWebSocket(/\/ws/, (ws) => {
        const server = ws.connectToServer();
        ws.onMessage((msg) => {
          if (route.drop && String(msg).includes('"type":"copilot:send"')) {
            route.drop = false;
            ws.close({ code: 1001, reason: 'the relay went away' });
            server.close();
            return;
          }
          server.send(msg);
        });
        server.onMessage((msg) => ws.send(msg));
      });
    }
    await p.goto(url);
    await p.waitForSelector('body[data-state="live"]');
    return p;
  }

  const statuses = (p, n) => p.waitForFunction((k) => document.querySelectorAll('#transcript [data-kind="status"]').length >= k, n);

  it('lists a plan turn\'s denied calls and runs the ticked ones in Act, once', async () => {
    const problems = [];
    const p = await page(relay.pageURL, problems);
    await p.waitForSelector('#send:not([disabled])');
    await p.click('#mode-plan');
    await p.fill('#prompt', 'plan the release');
    await p.click('#send'); // on a touch screen Enter adds a line
    await statuses(p, 1);
    const card = p.locator('#transcript [data-kind="plancard"]');
    await card.waitFor();
    assert.equal(await card.locator('.plan-card-title').textContent(), 'The plan: 3 steps, denied in Plan');
    // The steps are a group named by the title a user sees (the window's
    // words too), where a hidden legend named it 'Steps to run'.
    assert.equal(await card.getByRole('group', { name: 'The plan: 3 steps, denied in Plan', exact: true }).count(), 1);
    const steps = card.locator('label.plan-card-step');
    assert.deepEqual(await steps.allTextContents(), ['1. run `make test`', '2. edit NOTES.md', '3. run `make deploy`']);
    // Real checkboxes, named by their labels, all ticked; a real button.
    const boxes = card.getByRole('checkbox');
    assert.equal(await boxes.count(), 3);
    for (let i = 0; i < 3; i++) assert.equal(await boxes.nth(i).isChecked(), true);
    assert.equal(await card.getByRole('checkbox', { name: '2. edit NOTES.md' }).count(), 1);
    const run = card.getByRole('button', { name: 'Run in Act' });
    assert.equal(await run.isEnabled(), true);

    // It fits a phone, and is in its screenshot.
    const box = await card.evaluate((c) => c.getBoundingClientRect().toJSON());
    assert.ok(box.left >= 0 && box.right <= 390, `the plan card does not fit the screen: ${JSON.stringify(box)}`);
    const wide = await p.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(wide <= 390, `the page is ${wide} px wide on a 390 px screen`);

    // With no step ticked, nothing to run.
    for (let i = 0; i < 3; i++) await boxes.nth(i).uncheck();
    assert.equal(await run.isDisabled(), true);
    await boxes.nth(0).check();
    await boxes.nth(2).check();
    assert.equal(await run.isEnabled(), true);
    await card.scrollIntoViewIfNeeded();
    await shot(p, 'phone-light-plancard');

    await run.click();
    const want = 'Carry out exactly these steps of your plan, in this order, and nothing else:\n1. run `make test`\n2. run `make deploy`\n';
    const user = p.locator('#transcript [data-kind="user"]').nth(1);
    await user.waitFor();
    assert.equal(await user.locator('.prompt').textContent(), want);
    assert.equal(await user.getAttribute('data-mode'), 'act');
    await statuses(p, 2);
    // The agent carried out exactly those, allowed in Act.
    const ran = await p.locator('#transcript [data-kind="tool"]').evaluateAll((rows) => rows.map((r) => `${r.querySelector('.tool-args').textContent} ${r.dataset.state}`));
    assert.deepEqual(ran, ['make test denied', 'NOTES.md denied', 'make deploy denied', 'make test approved', 'make deploy approved']);
    assert.equal(await p.getAttribute('#mode-act', 'aria-pressed'), 'true');

    // The card is done: it says so, and nothing in it can run it again.
    const done = async (c) => {
      assert.equal(await c.locator('.plan-card-title').textContent(), 'The plan: 3 steps, run in Act');
      assert.equal(await c.getAttribute('data-ran'), 'true');
      assert.equal(await c.getByRole('button', { name: '✓ Ran in Act' }).isDisabled(), true);
      for (const b of await c.getByRole('checkbox').all()) assert.equal(await b.isDisabled(), true);
    };
    await done(card);
    assert.deepEqual(await boxes.evaluateAll((b) => b.map((x) => x.checked)), [true, false, true]);

    // A page opened afterwards reads it from the conversation: done too.
    const link = new URL(p.url()).hash;
    assert.match(link, /^#\/c\//);
    const again = await page(relay.pageURL, problems, 'dark');
    await again.goto(relay.base + link);
    const card2 = again.locator('#transcript [data-kind="plancard"]');
    await card2.waitFor();
    await done(card2);
    // It shows the steps that ran, as their prompt asked for them.
    assert.deepEqual(await card2.getByRole('checkbox').evaluateAll((b) => b.map((x) => x.checked)), [true, false, true]);
    await card2.scrollIntoViewIfNeeded();
    await shot(again, 'phone-dark-plancard-ran');
    await again.context().close();
    await p.context().close();
    assert.deepEqual(problems, []);
  });

  // planTurn runs a plan turn on a new page and returns the page and its
  // plan card, not run.
  async function planTurn(problems, route) {
    const p = await page(relay.pageURL, problems, 'light', route);
    await p.waitForSelector('#send:not([disabled])');
    await p.click('#menu');
    await p.click('#new-conv');
    await p.click('#mode-plan');
    await p.fill('#prompt', 'plan the release');
    await p.click('#send');
    await statuses(p, 1);
    const card = p.locator('#transcript [data-kind="plancard"]');
    await card.waitFor();
    assert.equal(await card.getAttribute('data-ran'), 'false');
    return { p, card };
  }

  const PROMPT = 'Carry out exactly these steps of your plan, in this order, and nothing else:\n1. run `make test`\n2. edit NOTES.md (the change you proposed)\n3. run `make deploy`\n';

  // runnable checks that card (the page's only one) has not run: it says
  // so, and Run in Act runs it.
  const runnable = async (card) => {
    await card.page().waitForFunction(() => document.querySelector('#transcript [data-kind="plancard"]').dataset.ran === 'false');
    assert.equal(await card.locator('.plan-card-title').textContent(), 'The plan: 3 steps, denied in Plan');
    assert.equal(await card.getByRole('button', { name: 'Run in Act' }).isEnabled(), true);
    for (const b of await card.getByRole('checkbox').all()) assert.equal(await b.isDisabled(), false);
  };

  it('can run again when its prompt did not reach the relay', async () => {
    const problems = [];
    const route = { drop: false };
    const { p, card } = await planTurn(problems, route);
    const n = await p.evaluate(() => Number(document.body.dataset.connects));
    route.drop = true;
    await card.getByRole('button', { name: 'Run in Act' }).click();
    await p.waitForFunction((k) => Number(document.body.dataset.connects) > k, n);
    await p.waitForSelector('#transcript .note.lost[data-lost="back"]');
    assert.equal(await p.inputValue('#prompt'), PROMPT);
    await runnable(card);

    // Run again, it runs, once, and is done.
    await p.fill('#prompt', '');
    await card.getByRole('button', { name: 'Run in Act' }).click();
    await statuses(p, 2);
    assert.equal(await card.getAttribute('data-ran'), 'true');
    assert.equal(await card.locator('.plan-card-title').textContent(), 'The plan: 3 steps, run in Act');
    assert.equal(await p.locator('#transcript [data-kind="user"]').count(), 2);
    await p.context().close();
    assert.deepEqual(problems.filter((x) => !/WebSocket connection to .* failed|ERR_CONNECTION_REFUSED/.test(x)), []);
  });

  it('can run again when the relay refused its prompt, and a card that ran stays done', async () => {
    const problems = [];
    const { p, card } = await planTurn(problems, null);
    // Another prompt goes first, in the same task of the page: Run in Act
    // goes before the page saw that turn start, and the relay refuses it.
    await p.evaluate(() => {
      document.getElementById('prompt').value = 'slow work';
      document.getElementById('composer').requestSubmit();
      document.querySelector('#transcript [data-kind="plancard"] .run-plan').click();
    });
    await p.waitForFunction(() => document.getElementById('prompt').value !== '');
    assert.equal(await p.inputValue('#prompt'), PROMPT);
    await runnable(card);
    await statuses(p, 2);
    await runnable(card);

    // Sent from the box by hand, in Act, the plan ran: the card is done,
    // and a later prompt of it given back does not change that.
    await p.click('#mode-act');
    await p.waitForSelector('#mode-act[aria-pressed="true"]');
    await p.click('#send');
    await statuses(p, 3);
    assert.equal(await card.getAttribute('data-ran'), 'true');
    await p.evaluate((prompt) => {
      document.getElementById('prompt').value = 'slow work';
      document.getElementById('composer').requestSubmit();
      document.getElementById('prompt').value = prompt;
      document.getElementById('composer').requestSubmit();
    }, PROMPT);
    await p.waitForFunction((want) => document.getElementById('prompt').value === want, PROMPT);
    assert.equal(await card.getAttribute('data-ran'), 'true');
    assert.equal(await card.locator('.plan-card-title').textContent(), 'The plan: 3 steps, run in Act');
    await statuses(p, 4);
    await p.context().close();
    assert.deepEqual(problems, []);
  });
});
