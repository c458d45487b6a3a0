// The installable web app: the manifest and its icons, the service worker
// installed with the page's own files cached, and a Web Push delivered to
// it (through the DevTools protocol, as a push service would) showing a
// notification that names the conversation.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { browser, chromiumMissing, startRelay, waitForValue, watchPage } from './harness.js';

const skip = chromiumMissing();
const WAIT = 30_000;

describe('the installable app', { skip: skip || false }, () => {
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

  it('has a manifest, a service worker that caches the page, and shows a push', async () => {
    const problems = [];
    const ctx = await chrome.newContext({ viewport: { width: 390, height: 844 } });
    ctx.setDefaultTimeout(WAIT);
    await ctx.grantPermissions(['notifications'], { origin: relay.base.replace(/\/$/, '') });
    const page = await ctx.newPage();
    watchPage(page, relay, problems);
    const cdp = await ctx.newCDPSession(page);
    const registrations = [];
    cdp.on('ServiceWorker.workerRegistrationUpdated', (e) => registrations.push(...e.registrations));
    await cdp.send('ServiceWorker.enable');
    await page.goto(relay.pageURL);
    await page.waitForSelector('body[data-state="live"]');
    await page.waitForSelector('body[data-worker="ready"]');

    // The manifest and every icon it names.
    const manifest = await page.evaluate(async () => {
      const link = document.querySelector('link[rel="manifest"]');
      const res = await fetch(link.href);
      const m = await res.json();
      const icons = await Promise.all(m.icons.map(async (i) => {
        const r = await fetch(new URL(i.src, link.href));
        return { src: i.src, status: r.status, type: r.headers.get('content-type') };
      }));
      return { type: res.headers.get('content-type'), m, icons };
    });
    assert.equal(manifest.type, 'application/manifest+json');
    assert.equal(manifest.m.display, 'standalone');
    assert.ok(manifest.m.icons.some((i) => i.sizes === '512x512'), 'no 512 px icon');
    for (const i of manifest.icons) assert.equal(i.status, 200, `${i.src}: ${i.status}`);

    // The page's own files are cached for the next start.
    const files = await page.evaluate(async () => {
      const c = await caches.open('pilotdesk-files-v1');
      return (await c.keys()).map((r) => new URL(r.url).pathname);
    });
    for (const f of ['/', '/app.css', '/js/app.js', '/js/transcript.js']) assert.ok(files.includes(f), `${f} is not cached: ${files}`);

    // A push, as the relay's would arrive, becomes a notification.
    await page.waitForFunction(() => navigator.serviceWorker.controller !== null);
    const reg = registrations.find((r) => r.scopeURL === relay.base && !r.isDeleted);
    assert.ok(reg, `no registration for ${relay.base}: ${JSON.stringify(registrations)}`);
    await cdp.send('ServiceWorker.deliverPushMessage', {
      origin: relay.base.replace(/\/$/, ''),
      registrationId: reg.registrationId,
      data: JSON.stringify({ title: 'A question waits', body: 'In “deploy”', conversationId: 'c-123', tag: 'q-c-123' }),
    });
    // (The push event runs in the worker after deliverPushMessage returns:
    // ask until the notification is there.)
    const notes = await waitForValue(page, async () => {
      const r = await navigator.serviceWorker.ready;
      const n = await r.getNotifications();
      return n.length ? n.map((x) => ({ title: x.title, body: x.body, tag: x.tag, data: x.data })) : null;
    }, undefined, WAIT);
    assert.deepEqual(notes, [{ title: 'A question waits', body: 'In “deploy”', tag: 'q-c-123', data: { conversationId: 'c-123' } }]);
    assert.deepEqual(problems, []);
    await ctx.close();
  });

  it('subscribes to the relay\'s pushes while notifications are on, and unsubscribes when they are turned off', async () => {
    const problems = [];
    const ctx = await chrome.newContext({ viewport: { width: 390, height: 844 } });
    ctx.setDefaultTimeout(WAIT);
    const origin = relay.base.replace(/\/$/, '');
    await ctx.grantPermissions(['notifications'], { origin });
    await ctx.addInitScript(() => {
      // Headless chromium reaches no push service: the browser's side of
      // a subscription, with real keys (the relay checks them).
      window.__push = { subscribed: [], unsubscribed: 0 };
      let current = null;
      const b64 = (buf) => btoa(String.fromCharCode(...new Uint8Array(buf))).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
      PushManager.prototype.getSubscription = async () => current;
      PushManager.prototype.subscribe = async (opts) => {
        const pair = await crypto.subtle.generateKey({ name: 'ECDH', namedCurve: 'P-256' }, true, ['deriveBits']);
        const p256dh = b64(await crypto.subtle.exportKey('raw', pair.publicKey));
        const auth = b64(crypto.getRandomValues(new Uint8Array(16)));
        const endpoint = `https://push.example/e2e/${b64(crypto.getRandomValues(new Uint8Array(8)))}`;
        const key = new Uint8Array(opts.applicationServerKey);
        current = {
          endpoint,
          options: { userVisibleOnly: opts.userVisibleOnly, applicationServerKey: key.buffer },
          toJSON: () => ({ endpoint, expirationTime: null, keys: { p256dh, auth } }),
          unsubscribe: async () => { current = null; window.__push.unsubscribed++; return true; },
        };
        window.__push.subscribed.push({ endpoint, key: b64(key), userVisibleOnly: opts.userVisibleOnly });
        return current;
      };
    });
    const page = await ctx.newPage();
    watchPage(page, relay, problems);
    await page.goto(relay.pageURL);
    await page.waitForSelector('body[data-state="live"]');
    const key = await page.evaluate(async (token) => (await (await fetch('/push/key', { headers: { Authorization: `Bearer ${token}` } })).json()).publicKey, relay.token);
    const logged = async (what) => {
      const deadline = Date.now() + WAIT;
      while (!relay.log().includes(what)) {
        if (Date.now() > deadline) throw new Error(`the relay did not log ${what}:\n${relay.log()}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    };

    // Notifications were allowed already: they show while the page is
    // open; turned on here, the page subscribes with the relay's key and
    // hands the subscription to the relay.
    await page.click('#menu');
    assert.equal(await page.textContent('#notify'), 'Also notify me while this page is closed');
    assert.equal(await page.getAttribute('body', 'data-push'), null);
    await page.click('#notify');
    await page.waitForSelector('body[data-push="on"]');
    const first = await page.evaluate(() => window.__push.subscribed);
    assert.equal(first.length, 1);
    assert.equal(first[0].key, key);
    assert.equal(first[0].userVisibleOnly, true);
    await logged('relay: push: a browser subscribed');
    assert.match(await page.textContent('#notify-state'), /the relay pushes them/);
    assert.equal(await page.textContent('#notify'), 'Turn off notifications');
    assert.equal(await page.isChecked('#notify-text'), false);

    // The words, asked for: the same subscription, given again with text.
    await page.check('#notify-text');
    await logged('text=true');

    // Off: unsubscribed at the relay and in the browser.
    await page.click('#notify');
    await page.waitForSelector('body[data-push="off"]');
    await page.waitForFunction(() => window.__push.unsubscribed === 1);
    await logged('relay: push: a browser unsubscribed');
    assert.equal(await page.textContent('#notify'), 'Turn on notifications');

    // A reload keeps it off; on again subscribes anew.
    await page.reload();
    await page.waitForSelector('body[data-state="live"]');
    await page.waitForSelector('body[data-worker="ready"]');
    assert.equal(await page.getAttribute('body', 'data-push'), null);
    await page.click('#menu');
    assert.equal(await page.textContent('#notify'), 'Turn on notifications');
    await page.click('#notify');
    await page.waitForSelector('body[data-push="on"]');
    assert.equal((await page.evaluate(() => window.__push.subscribed)).length, 1); // this page's own
    assert.deepEqual(problems, []);
    await ctx.close();
  });
});
