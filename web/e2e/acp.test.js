// The web client against a relay that runs an ACP agent: `pilotdesk serve
// --agent acp --acp-command fake-acp`, the real ACP backend driving the fake
// ACP agent of session/acp's tests (built as a program, cmd/fake-acp) over
// the real Agent Client Protocol on stdio. Its "think" prompt reports
// reasoning, a plan and the plan's progress, which the scripted agent
// cannot: the page shows the reasoning apart from the reply, collapsed, one
// plan card per turn updated in place, and the agent in the list.

import { describe, it, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { browser, chromiumMissing, startRelay, transcriptRows, watchPage } from './harness.js';

const skip = chromiumMissing();
const WAIT = 20_000;
const PHONE = { width: 390, height: 844 };

describe('web client on an ACP agent', { skip: skip || false }, () => {
  let relay;
  let chrome;
  let problems = [];
  const contexts = [];

  before(async () => {
    relay = await startRelay({ acp: true });
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

  async function open(url = relay.pageURL) {
    const ctx = await chrome.newContext({ viewport: PHONE });
    ctx.setDefaultTimeout(WAIT);
    contexts.push(ctx);
    const page = await ctx.newPage();
    watchPage(page, relay, problems);
    await page.goto(url);
    await page.waitForSelector('body[data-state="live"]');
    return page;
  }

  async function send(page, text) {
    await page.waitForSelector('#send:not([disabled])');
    await page.fill('#prompt', text);
    await page.press('#prompt', 'Enter');
  }

  const statuses = (page, n) => page.waitForFunction((k) => document.querySelectorAll('#transcript [data-kind="status"]').length >= k, n);

  const plans = (page) => page.$$eval('#transcript [data-kind="plan"]', (cards) => cards.map((c) => ({
    progress: c.querySelector('.plan-progress').textContent,
    steps: [...c.querySelectorAll('.step')].map((s) => ({ status: s.dataset.status, mark: s.querySelector('.step-mark').textContent, text: s.querySelector('.step-text').textContent, high: !!s.querySelector('.step-priority') })),
  })));

  const thoughts = (page) => page.$$eval('#transcript [data-kind="reasoning"]', (rows) => rows.map((r) => ({
    label: r.querySelector('.reasoning-label').textContent,
    preview: r.querySelector('.reasoning-preview').textContent,
    open: r.open,
    shown: r.querySelector('.reasoning-text').checkVisibility() ? r.querySelector('.reasoning-text').textContent : '',
  })));

  const thinkPlan = [
    { status: 'completed', mark: '✓', text: 'Read notes.txt', high: true },
    { status: 'in_progress', mark: '▶', text: 'Write the summary', high: false },
  ];

  it('shows the reasoning collapsed and apart from the reply, and the plan as one card', async () => {
    const page = await open();
    if (await page.isVisible('#menu')) await page.click('#menu');
    await page.click('#new-conv');
    await send(page, 'think');
    await statuses(page, 1);

    const rows = await transcriptRows(page);
    assert.deepEqual(rows.map((r) => r.kind), ['user', 'reasoning', 'plan', 'text', 'reasoning', 'status']);
    assert.equal(rows[3].text, 'Here is the summary.', 'the reply holds no reasoning');
    assert.match(rows[5].text, /Completed/);

    // Collapsed: "Thought" and the start of the text, the text itself hidden.
    assert.deepEqual(await thoughts(page), [
      { label: 'Thought', preview: 'Reading the notes first.', open: false, shown: '' },
      { label: 'Thought', preview: 'Done, I think.', open: false, shown: '' },
    ]);
    // Opened by a tap: the whole text.
    // The text is filled in by the row's toggle event, which the browser
    // fires after the click returns.
    await page.click('#transcript [data-kind="reasoning"] summary');
    await page.waitForFunction(() => document.querySelector('#transcript [data-kind="reasoning"] .reasoning-text').textContent !== '');
    const first = (await thoughts(page))[0];
    assert.equal(first.open, true);
    assert.equal(first.shown, 'Reading the notes first.');

    // Two plans came, the second replacing the first in place.
    assert.deepEqual(await plans(page), [{ progress: '1 of 2 steps done', steps: thinkPlan }]);
    assert.match(await page.textContent('#transcript [data-kind="plan"] .plan-title'), /The agent's plan/);

    // The list names the agent the relay runs, as the window's sidebar does.
    await page.click('#menu');
    await page.waitForFunction(() => /fake-acp \(ACP\)/.test(document.querySelector('#conv-list .current .conv-sub')?.textContent ?? ''));
    assert.match(await page.textContent('#conv-list .current .conv-sub'), / · fake-acp \(ACP\)$/);
    // The drawer covers most of a phone's width: tap the dimmed page beside it.
    await page.click('#scrim', { position: { x: PHONE.width - 20, y: PHONE.height / 2 } });
    await page.waitForSelector('#scrim', { state: 'hidden' });

    // The next turn has a plan card of its own; the first keeps its last state.
    await send(page, 'think again');
    await statuses(page, 2);
    assert.deepEqual(await plans(page), [{ progress: '1 of 2 steps done', steps: thinkPlan }, { progress: '1 of 2 steps done', steps: thinkPlan }]);

    // A reload replays the conversation into the same rows (of a reasoning
    // row its summary: only the opened one holds the whole text too).
    const shown = () => page.$$eval('#transcript [data-row]', (rows) => rows.map((r) => ({
      kind: r.dataset.kind, text: r.dataset.kind === 'reasoning' ? r.querySelector('summary').textContent : r.textContent,
    })));
    const before = await shown();
    await page.reload();
    await page.waitForSelector('body[data-state="live"]');
    await page.waitForFunction((n) => document.querySelectorAll('#transcript [data-row]').length === n, before.length);
    assert.deepEqual(await shown(), before);
    assert.equal((await thoughts(page)).every((t) => t.label === 'Thought' && !t.open), true);
  });

  it('says Thinking… while the reasoning streams, and keeps a row open as it grows', async () => {
    // The fake's turn is over in a millisecond: the streaming states are
    // checked on the page's own fold and transcript, fed the events a
    // relay sends.
    const page = await open();
    const out = await page.evaluate(async () => {
      const { Conversation } = await import('/js/conversation.js');
      const { Transcript } = await import('/js/transcript.js');
      const root = document.createElement('div');
      document.body.append(root);
      const c = new Conversation('c1');
      const t = new Transcript(root, document.createElement('button'));
      const seen = {};
      const label = () => [...root.querySelectorAll('.reasoning-label')].map((n) => n.textContent);
      c.apply('copilot:user_message', { conversationId: 'c1', messageId: 'u1', content: 'go', mode: 'act' });
      c.apply('copilot:reasoning', { conversationId: 'c1', messageId: 'r1', content: 'First ' });
      t.render(c);
      seen.streaming = label();
      seen.thinking = c.thinking;
      root.querySelector('details').open = true;
      c.apply('copilot:reasoning', { conversationId: 'c1', messageId: 'r1', content: 'thought.' });
      t.render(c);
      seen.grown = { open: root.querySelector('details').open, text: root.querySelector('.reasoning-text').textContent };
      c.apply('copilot:plan', { conversationId: 'c1', entries: [{ content: 'a', priority: 'low', status: 'pending' }] });
      c.apply('copilot:plan', { conversationId: 'c1', entries: [{ content: 'a', priority: 'low', status: 'in_progress' }, { content: 'b', status: 'pending' }] });
      t.render(c);
      seen.afterPlan = label();
      seen.plan = [...root.querySelectorAll('[data-kind="plan"]')].map((p) => p.textContent);
      c.apply('copilot:plan', { conversationId: 'c1', entries: [] });
      t.render(c);
      seen.emptied = [...root.querySelectorAll('[data-kind="plan"]')].map((p) => p.textContent);
      // A turn whose only plan is empty shows none.
      c.apply('copilot:idle', { conversationId: 'c1', status: 'completed' });
      c.apply('copilot:user_message', { conversationId: 'c1', messageId: 'u2', content: 'again', mode: 'act' });
      c.apply('copilot:plan', { conversationId: 'c1', entries: [] });
      t.render(c);
      seen.kinds = c.rows.map((r) => r.kind);
      root.remove();
      return seen;
    });
    assert.deepEqual(out.streaming, ['Thinking…']);
    assert.equal(out.thinking, false, 'reasoning is output: the indicator says Working…');
    assert.deepEqual(out.grown, { open: true, text: 'First thought.' });
    assert.deepEqual(out.afterPlan, ['Thought']);
    assert.deepEqual(out.plan, ["The agent's plan0 of 2 steps done▶a○b"]);
    assert.deepEqual(out.emptied, ["The agent's planno steps left"]);
    assert.deepEqual(out.kinds, ['user', 'reasoning', 'plan', 'status', 'user']);
  });
});
