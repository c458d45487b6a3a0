// The web client against the real relay (`pilotdesk serve`, the scripted
// agent playing scenario.json) in Debian's headless chromium.

import { describe, it, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { browser, chromiumMissing, startRelay, transcriptRows, watchPage } from './harness.js';

const skip = chromiumMissing();
const WAIT = 20_000;
const PHONE = { width: 390, height: 844 };

describe('web client', { skip: skip || false }, () => {
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

  async function context(opts = {}) {
    const ctx = await chrome.newContext({ viewport: PHONE, ...opts });
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

  // fresh opens the page on a new conversation of its own.
  async function fresh(opts) {
    const page = await open(await context(opts));
    if (await page.isVisible('#menu')) await page.click('#menu');
    await page.click('#new-conv');
    await page.waitForFunction(() => document.querySelectorAll('#transcript [data-row]').length === 0);
    return page;
  }

  async function send(page, text) {
    await page.waitForSelector('#send:not([disabled])');
    await page.fill('#prompt', text);
    await page.press('#prompt', 'Enter');
  }

  function statuses(page, n) {
    return page.waitForFunction((k) => document.querySelectorAll('#transcript [data-kind="status"]').length >= k, n);
  }

  async function lastText(page) {
    return page.$$eval('#transcript [data-kind="text"]', (r) => r.at(-1)?.textContent ?? '');
  }

  it('takes the token from the fragment, keeps it, hides it, and forgets it', async (t) => {
    const ctx = await context();
    const started = Date.now();
    const page = await open(ctx);
    const live = Date.now() - started;
    const paint = await page.evaluate(() => performance.getEntriesByName('first-contentful-paint')[0]?.startTime);
    t.diagnostic(`first paint after ${Math.round(paint)} ms, connected after ${live} ms`);
    // The page painted before it connected; how fast is make bench's
    // business, not a test's (2-3 s here under a load of 20, 0.2 s quiet).
    assert.ok(typeof paint === 'number' && paint > 0, 'no first contentful paint was recorded');
    // The address keeps the conversation's link (#/c/ID), never the token.
    assert.match(page.url(), /^http:\/\/127\.0\.0\.1:\d+\/(#\/c\/[\w-]+)?$/, 'the address bar holds more than the conversation');
    assert.ok(page.url().startsWith(relay.base) && !page.url().includes(relay.token), 'the token is still in the address bar');
    assert.equal(await page.evaluate(() => localStorage.getItem('pilotdesk.token')), relay.token);

    // Without the fragment, the stored token connects.
    await page.goto(relay.base);
    await page.waitForSelector('body[data-state="live"]');

    page.once('dialog', (d) => d.accept());
    await page.click('#menu');
    await page.click('#forget');
    await page.waitForSelector('#login:not([hidden])');
    assert.equal(await page.evaluate(() => localStorage.getItem('pilotdesk.token')), null);

    // A forgotten device is refused by the relay, and says so.
    await page.goto(relay.base);
    await page.waitForSelector('#login:not([hidden])');
    await page.waitForSelector('body[data-state="refused"]');
    assert.match(await page.textContent('#login-why'), /needs the token of the relay/);

    // Without a token the page asks at once, and tries no socket the
    // relay would refuse (the browser would log each refused upgrade).
    assert.equal(await page.evaluate(() => document.body.dataset.attempts), undefined);

    // Pasting the link with the token connects again.
    await page.fill('#login-token', relay.pageURL);
    await page.click('#login-form button[type=submit]');
    await page.waitForSelector('body[data-state="live"]');
    assert.equal(await page.evaluate(() => localStorage.getItem('pilotdesk.token')), relay.token);
  });

  it('sends a prompt and streams the reply as markdown', async () => {
    const page = await fresh();
    await send(page, 'hello');
    // Seen while it streams: the reply grows with the caret, Stop replaces Send.
    await page.waitForSelector('#transcript .md.streaming');
    assert.equal(await page.textContent('#send'), 'Stop');
    await statuses(page, 1);
    const rows = await transcriptRows(page);
    assert.deepEqual(rows.map((r) => r.kind), ['user', 'text', 'status']);
    assert.match(rows[0].text, /hello/);
    assert.equal(await page.textContent('#transcript strong'), 'there');
    assert.equal(await page.$$eval('#transcript li', (l) => l.length), 2);
    assert.equal(await page.textContent('#transcript code.language-js'), 'console.log(1 < 2);');
    assert.match(rows[2].text, /Completed/);
    assert.equal(await page.textContent('#title'), 'hello');
    assert.equal(await page.textContent('#send'), 'Send');
    await page.click('#menu');
    assert.match(await page.textContent('#conv-list .current'), /hello/);
  });

  it('shows HTML and script in agent text as text, and never runs them', async () => {
    const page = await fresh();
    await send(page, 'html <b>from me</b>');
    await statuses(page, 1);
    assert.equal(await page.evaluate(() => window.__pwned), undefined);
    assert.equal(await page.$$eval('#transcript img, #transcript script, #transcript b', (n) => n.length), 0);
    const text = await lastText(page);
    assert.match(text, /<img src=x onerror="window.__pwned=1"><script>window.__pwned=2<\/script>/);
    assert.match(text, /<b>not bold<\/b>/);
    const links = await page.$$eval('#transcript a', (as) => as.map((a) => ({ href: a.href, rel: a.rel, target: a.target, text: a.textContent })));
    assert.deepEqual(links, [{ href: 'https://example.com/docs', rel: 'noopener noreferrer nofollow', target: '_blank', text: 'a real link' }]);
    assert.match(text, /and click me and/, 'a javascript: link is shown as its words');
    assert.equal(await page.textContent('#transcript .md code'), '<i>code</i>');
    assert.match(await page.textContent('#transcript .prompt'), /html <b>from me<\/b>/);
  });

  it('Plan shows the amber banner and the tool is denied; Act runs it', async () => {
    const page = await fresh();
    assert.equal(await page.isVisible('#plan-banner'), false);
    await page.click('#mode-plan');
    await page.waitForSelector('#plan-banner:not([hidden])');
    assert.match(await page.textContent('#plan-banner'), /every tool call is denied/);
    await send(page, 'tool');
    await statuses(page, 1);
    const tool = await page.$eval('#transcript [data-kind="tool"]', (n) => ({ state: n.dataset.state, text: n.textContent }));
    assert.equal(tool.state, 'denied');
    assert.match(tool.text, /bash.*make deploy.*denied by plan/s);
    assert.match(await lastText(page), /The tool was denied in plan mode\./);
    assert.match(await page.textContent('#transcript .user'), /plan mode/);

    await page.click('#mode-act');
    await page.waitForSelector('#plan-banner', { state: 'hidden' });
    await page.waitForSelector('#transcript [data-kind="mode"]');
    assert.match(await page.textContent('#transcript [data-kind="mode"]'), /Switched to Act/);
    await send(page, 'tool');
    await statuses(page, 2);
    assert.equal(await page.$$eval('#transcript [data-kind="tool"]', (n) => n.at(-1).dataset.state), 'approved');
    assert.match(await lastText(page), /The tool was approved in act mode\./);
  });

  it('asks for an approval that Escape and a tap outside do not dismiss', async () => {
    const page = await fresh();
    await send(page, 'approve');
    await page.waitForSelector('.q-card[data-kind="approval"]');
    assert.equal(await page.title(), '(1) pilotdesk');
    assert.match(await page.textContent('.q-card'), /Deploy to production\?.*Deploy.*Cancel/s);
    // The relay sends expiresAt now: the page counts down to it.
    assert.equal(await page.isVisible('.countdown'), true);

    await page.keyboard.press('Escape');
    assert.equal(await page.isVisible('.q-card'), true);
    assert.match(await page.textContent('.hint'), /Escape does not close the question/);
    await page.mouse.click(20, 20); // on the overlay, outside the card
    assert.equal(await page.isVisible('.q-card'), true);
    assert.match(await page.textContent('.hint'), /stays open until you do/);
    assert.equal(await page.evaluate(() => document.getElementById('app').inert), true);

    await page.keyboard.press('x');
    assert.match(await page.textContent('.hint'), /Press a or 1 to approve, r or 2 to reject/);
    await page.keyboard.press('a');
    await page.waitForSelector('.q-card', { state: 'detached' });
    await statuses(page, 1);
    assert.match(await lastText(page), /Approval answer: approve\./);
    assert.match(await page.textContent('#transcript [data-kind="note"]'), /You answered "approve" to "Deploy to production\?"/);
    assert.equal(await page.title(), 'pilotdesk');
  });

  it('picks a choice by its number, and by tap', async () => {
    const page = await fresh();
    await send(page, 'choose');
    await page.waitForSelector('.q-card[data-kind="choice"]');
    assert.deepEqual(await page.$$eval('.choice', (b) => b.map((x) => x.textContent)), ['1) staging', '2) production', '3) local']);
    assert.equal(await page.isVisible('.q-reject'), true);
    await page.keyboard.press('Escape');
    await page.keyboard.press('2');
    await statuses(page, 1);
    assert.match(await lastText(page), /Picked production \(index 1\)\./);

    await send(page, 'choose');
    await page.waitForSelector('.q-card[data-kind="choice"]');
    await page.tap('[data-choice="2"]').catch(() => page.click('[data-choice="2"]'));
    await statuses(page, 2);
    assert.match(await lastText(page), /Picked local \(index 2\)\./);
  });

  it('asks for text again when the answer is empty', async () => {
    const page = await fresh();
    await send(page, 'text');
    await page.waitForSelector('.q-card[data-kind="text"]');
    assert.equal(await page.evaluate(() => document.activeElement?.className), 'q-input');
    await page.keyboard.press('Enter');
    assert.match(await page.textContent('.hint'), /An answer is required/);
    await page.keyboard.press('Escape');
    assert.equal(await page.isVisible('.q-card'), true);
    await page.keyboard.type('feature-x');
    await page.keyboard.press('Enter');
    await statuses(page, 1);
    assert.match(await lastText(page), /Branch: feature-x\./);
  });

  it('takes a free-form answer or a suggestion to an ask_user question', async () => {
    const page = await fresh();
    await send(page, 'ask');
    await page.waitForSelector('.q-card[data-kind="ask"]');
    // Inline code in a question is code, not backticks.
    assert.equal(await page.textContent('#q-question'), 'Which database for users?');
    assert.equal(await page.textContent('#q-question code'), 'users');
    assert.deepEqual(await page.$$eval('.choice', (b) => b.map((x) => x.textContent)), ['1) SQLite', '2) PostgreSQL']);
    await page.click('.q-free button[type=submit]');
    assert.match(await page.textContent('.hint'), /Type an answer first, or pick one of the options/);
    await page.fill('.q-input', 'DuckDB');
    await page.click('.q-free button[type=submit]');
    await statuses(page, 1);
    assert.match(await lastText(page), /Database: DuckDB \(index -1\)\./);

    await send(page, 'ask');
    await page.waitForSelector('.q-card[data-kind="ask"]');
    await page.click('[data-choice="0"]');
    await statuses(page, 2);
    assert.match(await lastText(page), /Database: SQLite \(index 0\)\./);
  });

  it('rejects a question, which cancels the reply', async () => {
    const page = await fresh();
    await send(page, 'choose');
    await page.waitForSelector('.q-card');
    await page.click('.q-reject');
    await statuses(page, 1);
    const rows = await transcriptRows(page);
    assert.match(rows.at(-1).text, /Rejected\. Agent response cancelled\./);
    assert.match(rows.at(-2).text, /You rejected "Which environment\?"/);
    assert.match(rows.find((r) => r.kind === 'text').text, /Pick one\./, 'the partial reply is kept');

    await send(page, 'text');
    await page.waitForSelector('.q-card[data-kind="text"]');
    await page.keyboard.type('/reject');
    await page.keyboard.press('Enter');
    await statuses(page, 2);
    assert.match((await transcriptRows(page)).at(-1).text, /Rejected/);
  });

  it('closes the question when another client answers it', async () => {
    const ctx = await context();
    const one = await open(ctx);
    if (await one.isVisible('#menu')) await one.click('#menu');
    await one.click('#new-conv');
    await send(one, 'approve');
    await one.waitForSelector('.q-card');
    // The second page shares the storage: it opens the same conversation.
    const two = await open(ctx, relay.base);
    await two.waitForSelector('.q-card[data-kind="approval"]');
    await two.click('.q-card [data-answer="approve"]');
    await one.waitForSelector('.q-card', { state: 'detached' });
    await statuses(one, 1);
    assert.match(await one.textContent('#transcript [data-kind="note"]'), /"Deploy to production\?" was answered from the web client on the relay.s computer\./);
    // The second page hears of its answer on its own socket, maybe after
    // the first page did.
    await two.waitForSelector('#transcript [data-kind="note"]');
    assert.match(await two.textContent('#transcript [data-kind="note"]'), /You answered "approve"/);
  });

  it('stops a running turn', async () => {
    const page = await fresh();
    await send(page, 'slow');
    await page.waitForSelector('#transcript .md.streaming');
    await page.waitForSelector('#send.danger');
    await page.click('#send');
    await statuses(page, 1);
    assert.match((await transcriptRows(page)).at(-1).text, /Stopped\. The agent's response so far is kept above\./);
    assert.match(await lastText(page), /^w01\b/);
  });

  it('shows usage', async () => {
    const page = await fresh();
    await send(page, 'usage');
    await statuses(page, 1);
    assert.match(await page.textContent('#usage'), /Model gpt-5.*42 of 300 premium requests used, 86% left.*×1 premium per request/);
    assert.match((await transcriptRows(page)).at(-1).text, /usage: gpt-5 · 1200 in \/ 80 out tokens · cost 1 · 42 of 300 premium requests used, 86% left/);
  });

  it('notifies about a question and a turn that ends while the page is hidden', async () => {
    const ctx = await context();
    await ctx.addInitScript(() => {
      // The Notification API and a hidden page, as a headless browser
      // has neither a notification centre nor a background.
      window.__notes = [];
      window.__hidden = false;
      class FakeNotification {
        constructor(title, opts) { window.__notes.push({ title, body: opts?.body }); }
        static permission = 'default';
        static requestPermission() { FakeNotification.permission = 'granted'; return Promise.resolve('granted'); }
        addEventListener() {}
        close() {}
      }
      window.Notification = FakeNotification;
      // The service worker shows them where it runs (as on a phone).
      ServiceWorkerRegistration.prototype.showNotification = function showNotification(title, opts) {
        window.__notes.push({ title, body: opts?.body });
        return Promise.resolve();
      };
      Object.defineProperty(Document.prototype, 'hidden', { configurable: true, get: () => window.__hidden });
      // Nor a push service (pwa.test.js tests the subscription).
      PushManager.prototype.getSubscription = async () => null;
      PushManager.prototype.subscribe = async () => { throw new DOMException('no push service here', 'AbortError'); };
    });
    const page = await open(ctx);
    await page.click('#menu');
    await page.click('#notify');
    await page.waitForSelector('#notify:text("Turn off notifications")');
    assert.match(await page.textContent('#notify-state'), /Notifications are on/);
    await page.click('#new-conv');
    await send(page, 'approve');
    await page.waitForSelector('.q-card');
    assert.deepEqual(await page.evaluate(() => window.__notes), [], 'no notification while the page is seen');
    await page.keyboard.press('a');
    await statuses(page, 1);

    await page.evaluate(() => { window.__hidden = true; });
    await send(page, 'approve');
    await page.waitForFunction(() => window.__notes.length >= 1);
    await page.waitForSelector('.q-card');
    await page.keyboard.press('a');
    await page.waitForFunction(() => window.__notes.length >= 2);
    assert.deepEqual(await page.evaluate(() => window.__notes), [
      { title: 'Question: approve', body: 'Deploy to production?' },
      { title: 'approve', body: 'The agent finished its turn.' },
    ]);
  });

  it('speaks what newer relays add: a paged list, the deadline, truncated messages, pings', async () => {
    // This relay's frames with what the protocol's extensions add, changed
    // on the way: the list in pages (nextCursor), expiresAt and serverTime,
    // copilot:message marked truncated (the text is the deltas'), and a
    // ping from the relay.
    // Three conversations at least, so that the list has a second page.
    const seed = await fresh();
    for (const n of [1, 2, 3]) {
      if (n > 1) {
        await seed.click('#menu');
        await seed.click('#new-conv');
      }
      await send(seed, `seed ${n}`);
      await statuses(seed, 1);
    }
    await seed.context().close();

    const ctx = await context({ viewport: { width: 1280, height: 800 } });
    let full = [];
    const pongs = [];
    let toPage;
    await ctx.routeWebSocket(/\/ws/, (ws) => {
      const server = ws.connectToServer();
      toPage = ws;
      ws.onMessage((raw) => {
        const m = JSON.parse(raw);
        if (m.type === 'pong') {
          pongs.push(m);
          return;
        }
        if (m.type === 'copilot:list' && m.data?.cursor === 'page-2') {
          ws.send(JSON.stringify({ type: 'copilot:conversations', data: { conversations: full.slice(2) } }));
          return;
        }
        server.send(raw);
      });
      server.onMessage((raw) => {
        const m = JSON.parse(raw);
        if (m.type === 'copilot:conversations' && m.data.conversations.length > 2) {
          full = m.data.conversations;
          m.data = { conversations: full.slice(0, 2), nextCursor: 'page-2' };
        }
        if (m.type === 'copilot:subscribed') {
          // The relay's clock an hour ahead of the browser's: the
          // countdown must not show 60 minutes more.
          m.data.serverTime = new Date(Date.now() + 3600_000).toISOString();
        }
        if (m.type === 'copilot:user_input_request') {
          m.data.expiresAt = new Date(Date.now() + 3600_000 + 125_000).toISOString();
          m.data.queued = 1;
        }
        if (m.type === 'copilot:message') {
          m.data.truncated = true;
          delete m.data.content;
        }
        ws.send(JSON.stringify(m));
      });
    });
    const page = await open(ctx);
    toPage.send(JSON.stringify({ type: 'ping' }));
    // Until the pong comes, however long a busy machine takes; the bound
    // only ends a page that never answers.
    for (const deadline = Date.now() + WAIT; pongs.length === 0 && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 50));
    assert.equal(pongs.length, 1, 'the page did not answer the relay\'s ping');
    await page.waitForSelector('#more:not([hidden])');
    assert.equal(await page.$$eval('#conv-list .conv', (c) => c.length), 2);
    const total = full.length;
    assert.ok(total > 2, `the relay has ${total} conversations`);
    await page.click('#more');
    await page.waitForFunction((n) => document.querySelectorAll('#conv-list .conv').length >= n, total);
    assert.equal(await page.isVisible('#more'), false);

    await page.click('#new-conv');
    await send(page, 'choose');
    await page.waitForSelector('.countdown:not([hidden])');
    assert.match(await page.textContent('.countdown'), /^Times out in 2:0[0-5]; then the agent goes on without an answer\.$/);
    assert.match(await page.textContent('#indicator'), /Waiting for your answer · 2:0[0-5] left/);
    assert.match(await page.textContent('.q-card'), /1 more question waits after this one/);
    await page.keyboard.press('1');
    await statuses(page, 1);
    const texts = (await transcriptRows(page)).filter((r) => r.kind === 'text').map((r) => r.text);
    assert.deepEqual(texts, ['Pick one.', 'Picked staging (index 0).'], 'a truncated message keeps the streamed text');
  });

  it('renders markdown without ever parsing HTML', async () => {
    const page = await open(await context());
    const out = await page.evaluate(async () => {
      const { renderMarkdown } = await import('/js/markdown.js');
      const html = (md) => {
        const d = document.createElement('div');
        d.append(renderMarkdown(md));
        return d.innerHTML;
      };
      return {
        snake: html('call snake_case_name and 2*3*4'),
        emphasis: html('**bold**, *em*, ***both***, ~~gone~~ and `a <b> c`'),
        lists: html('3. three\n4. four\n   - nested *x*\n5. five'),
        table: html('| a | b |\n|:--|--:|\n| `x|y` | 2 |'),
        links: html('[ok](https://e.x/a_(b)) [bad](javascript:alert(1)) [rel](/x) ![pic](https://e.x/p.png) <https://e.x/q> see https://e.x/r.'),
        fence: html('```sh\necho "<script>"\n'),
        escapes: html('\\*not em\\* and <img src=x onerror=alert(1)>'),
        heading: html('# Title\n---\n> quoted **b**'),
      };
    });
    assert.equal(out.snake, '<p>call snake_case_name and 2<em>3</em>4</p>');
    assert.equal(out.emphasis, '<p><strong>bold</strong>, <em>em</em>, <strong><em>both</em></strong>, <del>gone</del> and <code>a &lt;b&gt; c</code></p>');
    assert.equal(out.lists, '<ol start="3"><li>three</li><li>four<ul><li>nested <em>x</em></li></ul></li><li>five</li></ol>');
    assert.equal(out.table, '<div class="table-wrap"><table><thead><tr><th class="align-left">a</th><th class="align-right">b</th></tr></thead><tbody><tr><td class="align-left"><code>x|y</code></td><td class="align-right">2</td></tr></tbody></table></div>');
    const a = (href, text) => `<a href="${href}" target="_blank" rel="noopener noreferrer nofollow">${text}</a>`;
    assert.equal(out.links, `<p>${a('https://e.x/a_(b)', 'ok')} bad rel ${a('https://e.x/p.png', 'image: pic')} ${a('https://e.x/q', 'https://e.x/q')} see ${a('https://e.x/r', 'https://e.x/r')}.</p>`);
    assert.equal(out.fence, '<div class="code open"><div class="code-lang">sh</div><pre><code class="language-sh">echo "&lt;script&gt;"\n</code></pre></div>');
    assert.equal(out.escapes, '<p>*not em* and &lt;img src=x onerror=alert(1)&gt;</p>');
    assert.equal(out.heading, '<h2>Title</h2><hr><blockquote><p>quoted <strong>b</strong></p></blockquote>');
  });

  it('never writes the token to the relay\'s log', () => {
    assert.ok(relay.log().includes('relay listening'), 'the log was captured');
    assert.equal(relay.log().includes(relay.token), false, 'the token is in the relay log');
  });
});
