// harness.js: what the browser tests share: the real relay (`pilotdesk
// serve` with the scripted agent, or with the ACP backend driving the fake
// ACP agent) as a child process, Debian's chromium driven by
// playwright-core, and a few waits.

import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, existsSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
export const repo = path.resolve(here, '../..');
export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
export const SCENARIO = path.join(here, 'scenario.json');

let builtBin = '';
let builtFake = '';

// binary returns the pilotdesk binary: $PILOTDESK_BIN (what `make test`
// builds), else one built here once, with the headless `ci` tag so that no
// GL toolchain is needed.
export function binary() {
  if (process.env.PILOTDESK_BIN) return process.env.PILOTDESK_BIN;
  if (builtBin) return builtBin;
  const out = path.join(repo, '.tools', 'e2e', 'pilotdesk');
  mkdirSync(path.dirname(out), { recursive: true });
  execFileSync('go', ['build', '-tags', 'ci', '-o', out, '.'], { cwd: repo, stdio: 'inherit' });
  builtBin = out;
  return out;
}

/**
 * fakeACP returns the fake ACP agent (session/acp/internal/fakeagent as a
 * program, cmd/fake-acp): $FAKE_ACP_BIN (what scripts/web-e2e.sh builds),
 * else one built here once. It speaks the real Agent Client Protocol on
 * stdio, and its "think" prompt reports reasoning and a plan, which the
 * scripted agent cannot.
 */
export function fakeACP() {
  if (process.env.FAKE_ACP_BIN) return process.env.FAKE_ACP_BIN;
  if (builtFake) return builtFake;
  const out = path.join(repo, '.tools', 'e2e', 'fake-acp');
  mkdirSync(path.dirname(out), { recursive: true });
  execFileSync('go', ['build', '-o', out, './session/acp/internal/fakeagent/cmd/fake-acp'], { cwd: repo, stdio: 'inherit' });
  builtFake = out;
  return out;
}

// running are the relays started and not yet exited.
const running = new Set();
process.on('exit', () => {
  for (const proc of running) proc.kill('SIGKILL');
});

/**
 * startRelay runs `pilotdesk serve` and resolves once it listens.
 * opts: token, port (0: any), dataDir (':memory:' by default), script
 * (a scenario file; the built-in demo when null), acp (true: the ACP
 * backend with the fake ACP agent instead of the scripted agent), args
 * (more flags).
 */
export async function startRelay(opts = {}) {
  const token = opts.token ?? 'e2e-token-0123456789';
  const dataDir = opts.dataDir ?? ':memory:';
  const agent = opts.acp ? ['--agent', 'acp', '--acp-command', fakeACP()] : ['--agent', 'script'];
  const args = ['serve', ...agent, '--listen', `127.0.0.1:${opts.port ?? 0}`, '--token', token, '--data-dir', dataDir, '--verbose'];
  if (!opts.acp && opts.script !== null) args.push('--script', opts.script ?? SCENARIO);
  args.push(...(opts.args ?? []));
  const proc = spawn(binary(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(proc);
  proc.on('exit', () => running.delete(proc));
  let log = '';
  proc.stdout.on('data', (b) => { log += b; });
  proc.stderr.on('data', (b) => { log += b; });
  const exited = new Promise((resolve) => proc.on('exit', resolve));
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the relay did not start in 30 s:\n${log}`)), 30_000);
    const check = () => {
      const m = /relay listening" url=ws:\/\/127\.0\.0\.1:(\d+)\/ws/.exec(log);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    };
    proc.stderr.on('data', check);
    proc.stdout.on('data', check);
    proc.on('exit', (code) => reject(new Error(`the relay exited (${code}):\n${log}`)));
  });
  // A relay a test forgot to stop must not keep this file's process alive
  // (its pipes hold the event loop: the runner then waited for good, as a
  // CI run did after reconnect.test.js): once it listens it holds the
  // loop only while it is being stopped, and it is killed when the
  // process exits.
  const hold = (on) => {
    for (const h of [proc, proc.stdout, proc.stderr]) {
      if (on) h.ref(); else h.unref();
    }
  };
  hold(false);
  const relay = {
    token,
    port,
    dataDir,
    base: `http://127.0.0.1:${port}/`,
    pageURL: `http://127.0.0.1:${port}/#token=${encodeURIComponent(token)}`,
    log: () => log,
    async stop(signal = 'SIGTERM') {
      hold(true);
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      await exited;
    },
  };
  return relay;
}

/** tempDir makes a directory removed at exit. */
export function tempDir(prefix) {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** chromiumMissing returns why the browser tests cannot run, or ''. */
export function chromiumMissing() {
  return existsSync(CHROMIUM) ? '' : `${CHROMIUM} is not installed (apt-get install chromium)`;
}

/**
 * browser starts Debian's headless chromium. Playwright gives it a new,
 * empty profile directory, and each test's context has its own storage.
 */
export async function browser() {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/**
 * watchPage fails the test on what a page must never do: an uncaught
 * error, a console error, a request to any host but the relay.
 */
export function watchPage(page, relay, problems) {
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error') problems.push(`console error: ${msg.text()}`);
  });
  page.on('request', (req) => {
    const u = new URL(req.url());
    if (u.host !== `127.0.0.1:${relay.port}`) problems.push(`request to another host: ${req.url()}`);
  });
}

/** transcriptRows returns the transcript's rows as {kind, text}. */
export function transcriptRows(page) {
  return page.$$eval('#transcript [data-row]', (rows) => rows.map((r) => ({ kind: r.dataset.kind, text: r.textContent })));
}

/**
 * waitForValue evaluates fn (which may be async) in the page until it
 * returns something truthy, and returns that; it fails after timeout ms.
 * page.waitForFunction cannot wait on an async function: it takes the
 * promise the function returns for a truthy answer and resolves at once,
 * with whatever the first call found.
 */
export async function waitForValue(page, fn, arg, timeout = 30_000) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const v = await page.evaluate(fn, arg);
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`waitForValue: nothing after ${timeout} ms: ${fn}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * screenshot photographs page as screenshots/web-NAME.png when
 * WEB_SCREENSHOTS names the folder (`make web-screenshots`); otherwise it
 * does nothing, so the tests that take one check the state they show
 * without touching the repository.
 */
export async function screenshot(page, name) {
  const dir = process.env.WEB_SCREENSHOTS;
  if (!dir) return;
  await page.screenshot({ path: path.join(path.resolve(repo, dir), `web-${name}.png`), animations: 'disabled', caret: 'hide' });
}

/**
 * playTurn sends prompt to conversation id through a socket of page's own
 * (the page draws nothing of it) and resolves with the turn's last seq
 * once its copilot:idle came. A socket the relay closes (a slow consumer
 * on a busy machine) resumes from the last seq it had, until the turn
 * ends; wait (ms) bounds it all.
 */
export function playTurn(page, relay, id, prompt, wait) {
  return page.evaluate(({ url, id, prompt, wait }) => new Promise((resolve, reject) => {
    let last = 0;
    let sent = false;
    const stop = setTimeout(() => reject(new Error(`the turn did not end within ${wait} ms (last seq ${last})`)), wait);
    const connect = () => {
      const ws = new WebSocket(url);
      let ended = false;
      ws.onopen = () => {
        if (!sent) ws.send(JSON.stringify({ type: 'copilot:send', data: { conversationId: id, prompt, mode: 'act' } }));
        else ws.send(JSON.stringify({ type: 'copilot:subscribe', data: { conversationId: id, sinceSeq: last } }));
        sent = true;
      };
      ws.onmessage = (ev) => {
        const m = JSON.parse(ev.data);
        if (m.data?.conversationId === id && m.data.seq > last && m.type !== 'copilot:subscribed') last = m.data.seq;
        if (m.type === 'copilot:idle' && m.data?.conversationId === id) {
          ended = true;
          clearTimeout(stop);
          ws.close();
          resolve(last);
        }
      };
      ws.onclose = () => {
        if (!ended) setTimeout(connect, 200);
      };
    };
    connect();
  }), { url: `ws://127.0.0.1:${relay.port}/ws?token=${encodeURIComponent(relay.token)}&client=e2e`, id, prompt, wait });
}
