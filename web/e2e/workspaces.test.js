// Workspaces in the web client (docs/workspaces.md) against the real
// relay: a new conversation offers the relay's default folder and its
// recent ones (copilot:workspaces), a folder in a git repository offers a
// worktree, and the first prompt carries the folder chosen; the header and
// the list name each conversation's folder. A first prompt the relay
// refuses (its folder is gone) leaves the folder to choose, and the prompt
// sent again goes there.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { browser, chromiumMissing, screenshot as shot, startRelay, tempDir, watchPage } from './harness.js';

const skip = chromiumMissing();
const WAIT = 20_000;
const PHONE = { width: 390, height: 844 };

describe('workspaces', { skip: skip || false }, () => {
  let relay;
  let chrome;
  let root;
  let def;
  let repo;

  before(async () => {
    root = tempDir('pilotdesk-e2e-ws-');
    def = path.join(root, 'home');
    repo = path.join(root, 'api');
    mkdirSync(def);
    mkdirSync(repo);
    const git = (...args) => execFileSync('git', ['-C', repo, '-c', 'user.name=t', '-c', 'user.email=t@t', '-c', 'commit.gpgsign=false', ...args]);
    git('init', '-q');
    writeFileSync(path.join(repo, 'main.go'), 'package main\n');
    git('add', 'main.go');
    git('commit', '-q', '-m', 'first');
    const dataDir = tempDir('pilotdesk-e2e-ws-data-');
    const script = path.join(dataDir, 'script.json');
    writeFileSync(script, JSON.stringify({ turns: [{ steps: [{ delta: 'Working in {{workspace}}.' }] }] }));
    relay = await startRelay({ dataDir, script, args: ['--workdir', def, '--workspace-root', root] });
    chrome = await browser();
  });

  after(async () => {
    await chrome?.close();
    await relay?.stop();
  });

  it('offers the recent folders and sends the one chosen, in a worktree', async () => {
    // A conversation in the repository makes it a recent folder.
    const ws = `ws://127.0.0.1:${relay.port}/ws?token=${encodeURIComponent(relay.token)}`;
    const problems = [];
    const ctx = await chrome.newContext({ viewport: PHONE });
    ctx.setDefaultTimeout(WAIT);
    const p = await ctx.newPage();
    watchPage(p, relay, problems);
    await p.goto(relay.pageURL);
    await p.waitForSelector('body[data-state="live"]');
    await p.evaluate(({ url, repo }) => new Promise((resolve, reject) => {
      const s = new WebSocket(url);
      s.onopen = () => s.send(JSON.stringify({ type: 'copilot:send', data: { conversationId: 'c0ffee00-0000-4000-8000-000000000001', prompt: 'hello', workspace: { path: repo } } }));
      s.onmessage = (m) => {
        const msg = JSON.parse(m.data);
        if (msg.type === 'copilot:idle') { s.close(); resolve(); }
        if (msg.type === 'error') reject(new Error(msg.data.message));
      };
    }), { url: ws, repo });
    await p.reload();
    await p.waitForSelector('body[data-state="live"]');
    if (await p.isVisible('#menu')) await p.click('#menu');
    await p.click('#new-conv');
    await p.waitForSelector('#new-folder:not([hidden])');
    const options = await p.$$eval('#folder option', (os) => os.map((o) => [o.value, o.textContent]));
    assert.deepEqual(options.map((o) => o[0]), ['', repo]);
    assert.equal(options[0][1], `Default: ${def}`);
    assert.equal(await p.isVisible('#worktree'), false, 'the default folder, in no repository, offers a worktree');
    await p.waitForFunction((want) => document.getElementById('folder-label').textContent === want, path.basename(def));
    await p.selectOption('#folder', repo);
    await p.check('#worktree');
    await p.waitForFunction(() => document.getElementById('folder-label').textContent === 'api · new worktree');
    await shot(p, 'phone-light-folder');
    await p.fill('#prompt', 'where are you');
    await p.press('#prompt', 'Enter');
    await p.waitForSelector('[data-kind="status"]');
    const text = await p.textContent('#transcript');
    assert.match(text, /Working in \S+/);
    assert.doesNotMatch(text, new RegExp(`Working in ${repo}\\.`), 'the agent worked in the repository itself, not a worktree');
    assert.equal(await p.isVisible('#new-folder'), false, 'the folder field stays after the first prompt');
    const branches = execFileSync('git', ['-C', repo, 'branch', '--list', 'pilotdesk/*'], { encoding: 'utf8' });
    assert.match(branches, /pilotdesk\/\w{8}/);
    // The header names the folder and the worktree's branch under the
    // title, as the window's title does, and so does the list's entry.
    const branch = branches.match(/pilotdesk\/\w{8}/)[0];
    await p.waitForFunction((want) => document.getElementById('folder-label').textContent === want, `api · ${branch}`);
    assert.equal(await p.isVisible('#folder-label'), true, 'the folder is not shown under the title');
    assert.match(await p.getAttribute('#folder-label', 'title'), new RegExp(`${branch.replace('/', '.')}|worktrees`), 'the whole folder is not its hover text');
    // The list's entry comes from the relay's listing, which may reach the
    // page after the conversation's own events.
    await p.waitForFunction((want) => document.querySelector('.conv.current .conv-folder')?.textContent === want, `api · ${branch} · `).catch(() => {});
    assert.equal(await p.textContent('.conv.current .conv-folder'), `api · ${branch} · `);
    const fits = await p.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
    assert.ok(fits, 'the header overflows a phone-wide page');
    // The conversation made in the repository by another client names it
    // in the list too.
    assert.equal(await p.textContent('.conv[data-id="c0ffee00-0000-4000-8000-000000000001"] .conv-folder'), 'api · ');
    assert.deepEqual(problems, []);
  });

  it("keeps the folder chosen when the relay refuses a conversation's first prompt", async () => {
    // A recent folder that is gone by the time it is chosen.
    const gone = path.join(root, 'gone');
    mkdirSync(gone);
    const ws = `ws://127.0.0.1:${relay.port}/ws?token=${encodeURIComponent(relay.token)}`;
    const problems = [];
    const ctx = await chrome.newContext({ viewport: PHONE });
    ctx.setDefaultTimeout(WAIT);
    const p = await ctx.newPage();
    watchPage(p, relay, problems);
    await p.goto(relay.pageURL);
    await p.waitForSelector('body[data-state="live"]');
    await p.evaluate(({ url, dir }) => new Promise((resolve, reject) => {
      const s = new WebSocket(url);
      s.onopen = () => s.send(JSON.stringify({ type: 'copilot:send', data: { conversationId: 'c0ffee00-0000-4000-8000-000000000002', prompt: 'hello', workspace: { path: dir } } }));
      s.onmessage = (m) => {
        const msg = JSON.parse(m.data);
        if (msg.type === 'copilot:idle') { s.close(); resolve(); }
        if (msg.type === 'error') reject(new Error(msg.data.message));
      };
    }), { url: ws, dir: gone });
    rmSync(gone, { recursive: true });
    await p.reload();
    await p.waitForSelector('body[data-state="live"]');
    if (await p.isVisible('#menu')) await p.click('#menu');
    await p.click('#new-conv');
    await p.waitForSelector('#new-folder:not([hidden])');
    await p.selectOption('#folder', gone);
    await p.fill('#prompt', 'where are you');
    await p.press('#prompt', 'Enter');
    await p.waitForSelector('#transcript [data-kind="note"].error');
    await p.waitForFunction(() => document.getElementById('prompt').value === 'where are you');
    assert.equal(await p.isVisible('#new-folder'), true, 'the folder field went with the refused prompt');
    assert.equal(await p.inputValue('#folder'), gone);

    // The folder is back: the prompt sent again works there.
    mkdirSync(gone);
    await p.press('#prompt', 'Enter');
    await p.waitForSelector('[data-kind="status"]');
    assert.match(await p.textContent('#transcript'), new RegExp(`Working in ${gone.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.`));
    assert.equal(await p.isVisible('#new-folder'), false, 'the folder field stays after the first prompt');
    assert.deepEqual(problems, []);
    await ctx.close();
  });
});
