// phonesetup.mjs: a phone scanning Connect a device…'s QR code, for
// scripts/device-screenshots.sh (docs/devices.md, A phone on your
// network). Debian's chromium at a phone's size, started as the browser
// tests start it (harness.js), opens the link the code encodes:
//   1. the phone does not trust the window's certificate authority yet:
//      the setup page must say so and show the Android and iOS steps
//      → device-4-phone-setup.png;
//   2. the script given as --trust adds the authority to the NSS store of
//      this browser's HOME (what installing it on a phone does), then the
//      page, back from "Settings", must find that the phone trusts the
//      relay and go on by itself to https://ADDR:PORT/ with the token,
//      where the web client connects → device-5-phone-connected.png, with
//      a strip above the page saying what the browser's address bar would:
//      the address and who issued its certificate (headless chromium has
//      no address bar to photograph);
//   3. while the page stays connected, the script given as --connected
//      runs (the window's device list is photographed).
// It fails (exit 1, with what it saw) when a step does not happen.
//
//   node phonesetup.mjs --url http://ADDR:PORT/#token=… --out DIR --trust CMD --connected CMD
//
// HOME must be the directory whose .pki/nssdb the --trust command fills:
// chromium on Linux reads its trusted authorities there.

import { execFileSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import path from 'node:path';
import { browser } from './harness.js';

const PHONE = { width: 390, height: 844 };
const WAIT = 30_000;

const { values: opts } = parseArgs({ options: { url: { type: 'string' }, out: { type: 'string' }, trust: { type: 'string' }, connected: { type: 'string' } } });
if (!opts.url || !opts.out || !opts.trust || !opts.connected) {
  console.error('usage: node phonesetup.mjs --url http://ADDR:PORT/#token=… --out DIR --trust CMD --connected CMD');
  process.exit(2);
}
const setup = new URL(opts.url);
if (setup.protocol !== 'http:' || !setup.hash.startsWith('#token=')) {
  console.error(`phonesetup: the code's link is not the setup page with a token: ${opts.url}`);
  process.exit(1);
}
const shot = (name) => path.join(opts.out, name);
const say = (msg) => console.error(`phonesetup: ${msg}`);

const problems = [];
function watch(page) {
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  // Requests to another host than the relay's address are wrong; a
  // failed https check before the authority is trusted is expected.
  page.on('request', (req) => {
    const u = new URL(req.url());
    if (u.host !== setup.host) problems.push(`request to another host: ${req.url()}`);
  });
}

let chrome = await browser();
try {
  // 1. Untrusted: the setup page and its steps.
  let ctx = await chrome.newContext({ viewport: PHONE, deviceScaleFactor: 1, isMobile: true, hasTouch: true });
  ctx.setDefaultTimeout(WAIT);
  let page = await ctx.newPage();
  watch(page);
  await page.goto(opts.url);
  await page.waitForFunction(() => /does not trust/.test(document.getElementById('status')?.textContent || ''));
  const text = await page.textContent('body');
  for (const want of ['Android', 'iPhone and iPad', 'Download the certificate', 'Certificate Trust Settings']) {
    if (!text.includes(want)) throw new Error(`the setup page does not say "${want}"`);
  }
  if (!page.url().startsWith('http://')) throw new Error(`the untrusted phone left the setup page for ${page.url()}`);
  // The whole page: the Android steps and the iPhone's below them.
  await page.screenshot({ path: shot('device-4-phone-setup.png'), fullPage: true, animations: 'disabled', caret: 'hide' });
  say(`untrusted: the setup page at ${page.url().replace(/#.*/, '#token=…')} shows the Android and iOS steps`);

  // 2. The phone installs the authority. Chromium reads its NSS store
  // when it starts, so the browser starts again, as a phone's browser
  // comes back from Settings, and the code's link is opened once more.
  execFileSync('sh', ['-c', opts.trust], { stdio: 'inherit' });
  await chrome.close();
  chrome = await browser();
  ctx = await chrome.newContext({ viewport: PHONE, deviceScaleFactor: 1, isMobile: true, hasTouch: true });
  ctx.setDefaultTimeout(WAIT);
  page = await ctx.newPage();
  watch(page);
  const https = `https://${setup.host}/`;
  const landed = page.waitForResponse((r) => r.url().startsWith(https) && r.request().isNavigationRequest());
  await page.goto(opts.url);
  const response = await landed;
  await page.waitForSelector('body[data-state="live"]');
  await page.waitForSelector('#transcript [data-row]');
  const url = page.url();
  if (!url.startsWith(https)) throw new Error(`the trusted phone is at ${url}, not ${https}`);
  const sec = await response.securityDetails();
  if (!sec) throw new Error('the https page has no security details');
  // What an address bar shows: the address without the token, and the
  // certificate's issuer (the page is https, the certificate trusted, or
  // the page would not have loaded: headless chromium refuses a bad one).
  const bar = `${url.replace(/#token=[^&]*/, '')}   ·   ${sec.protocol}, certificate issued by ${sec.issuer}`;
  const raw = shot('device-5-phone-connected.raw.png');
  await page.screenshot({ path: raw, animations: 'disabled', caret: 'hide' });
  execFileSync('/usr/bin/convert', [
    '(', '-size', `${PHONE.width}x`, '-background', '#e8eaed', '-fill', '#202124', '-font', 'DejaVu-Sans',
    '-pointsize', '12', `caption:${bar}`, '-bordercolor', '#e8eaed', '-border', '6', ')',
    '(', raw, ')', '-gravity', 'north', '-append', '-resize', `${PHONE.width}x`, shot('device-5-phone-connected.png')]);
  execFileSync('rm', ['-f', raw]);
  const conn = await page.textContent('#conn');
  say(`trusted: the page went on to ${url.replace(/#.*/, '')} by itself (${sec.protocol}, issuer "${sec.issuer}"), status "${conn}"`);
  if (problems.length) throw new Error(problems.join('\n'));
  // The page stays open, connected, while the window is photographed.
  execFileSync('sh', ['-c', opts.connected], { stdio: 'inherit' });
  if (await page.textContent('#conn') !== 'live') throw new Error('the page was not live while the window was photographed');
} finally {
  await chrome.close();
}
