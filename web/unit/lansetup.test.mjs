// The setup page of a relay reachable from the network (cli/lansetup.html,
// served in plain http by cli/lansetup.go), its script on a fake page: it
// carries the token of its fragment on to the https address at once when
// an https request to the relay succeeds (the phone trusts the relay's
// certificate authority), else says the phone does not trust it yet, and
// goes on once it does (the user installed it and came back). Run by
// scripts/web-unit.sh.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import vm from 'node:vm';

const page = readFileSync(new URL('../../cli/lansetup.html', import.meta.url), 'utf8');
const script = page.match(/<script>([\s\S]*?)<\/script>/)[1].replaceAll('{{.Name}}', 'pilotdesk local CA on laptop');

// run runs the page's script with fetch answering as trusted() says, and
// returns what the test looks at.
function run(trusted) {
  const elements = { status: { textContent: '' }, open: { href: '/' } };
  const seen = { fetches: [], replaced: [], timers: [], listeners: {} };
  const ctx = {
    location: {
      host: '192.168.1.20:7421',
      hash: '#token=pdt_abc',
      replace: (url) => seen.replaced.push(url),
    },
    document: {
      hidden: false,
      getElementById: (id) => elements[id],
      addEventListener: (type, fn) => { seen.listeners[type] = fn; },
    },
    fetch: (url, opts) => {
      seen.fetches.push({ url, opts });
      return trusted() ? Promise.resolve({ type: 'opaque' }) : Promise.reject(new TypeError('Failed to fetch'));
    },
    setInterval: (fn, ms) => seen.timers.push({ fn, ms }),
  };
  vm.runInNewContext(script, ctx);
  return { elements, seen };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

test('a phone that trusts the authority goes straight to pilotdesk with its token', async () => {
  const { elements, seen } = run(() => true);
  await settle();
  assert.equal(elements.open.href, 'https://192.168.1.20:7421/#token=pdt_abc');
  assert.deepEqual(seen.fetches.map((f) => [f.url, f.opts.mode]), [['https://192.168.1.20:7421/healthz', 'no-cors']]);
  assert.deepEqual(seen.replaced, ['https://192.168.1.20:7421/#token=pdt_abc']);
  assert.match(elements.status.textContent, /trusts pilotdesk local CA on laptop: opening/);
});

test('a phone that does not trust it yet is told so, and goes on once it does', async () => {
  let trusted = false;
  const { elements, seen } = run(() => trusted);
  await settle();
  assert.deepEqual(seen.replaced, []);
  assert.match(elements.status.textContent, /does not trust pilotdesk local CA on laptop yet/);
  assert.equal(seen.timers.length, 1);
  // Back from Settings with the authority installed.
  trusted = true;
  seen.listeners.visibilitychange();
  await settle();
  assert.deepEqual(seen.replaced, ['https://192.168.1.20:7421/#token=pdt_abc']);
});

test('one check at a time', async () => {
  const { seen } = run(() => false);
  seen.timers[0].fn();
  seen.listeners.visibilitychange();
  assert.equal(seen.fetches.length, 1, 'a check started while one is under way');
  await settle();
  seen.timers[0].fn();
  assert.equal(seen.fetches.length, 2);
});
