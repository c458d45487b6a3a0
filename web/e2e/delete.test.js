// Deleting a conversation from the web client (docs/workspaces.md, What
// delete and close do): the owner's page offers "Delete this
// conversation" for a conversation the relay knows, asks first in the
// window's and the terminal's words, and the relay's copilot:deleted takes
// it out of the page; a controller's page (a phone's device token) does
// not offer it, as the relay would refuse it. No front end could delete a
// conversation before.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { binary, browser, chromiumMissing, startRelay, tempDir, watchPage } from './harness.js';

const skip = chromiumMissing();
const WAIT = 20_000;
const PHONE = { width: 390, height: 844 };

describe('delete a conversation', { skip: skip || false }, () => {
  let relay;
  let chrome;
  let dataDir;

  before(async () => {
    dataDir = tempDir('pilotdesk-e2e-delete-');
    const script = path.join(dataDir, 'script.json');
    writeFileSync(script, JSON.stringify({ turns: [{ steps: [{ delta: 'Done.' }] }] }));
    relay = await startRelay({ dataDir, script });
    chrome = await browser();
  });

  after(async () => {
    await chrome?.close();
    await relay?.stop();
  });

  async function page(url, problems) {
    const ctx = await chrome.newContext({ viewport: PHONE });
    ctx.setDefaultTimeout(WAIT);
    const p = await ctx.newPage();
    watchPage(p, relay, problems);
    await p.goto(url);
    await p.waitForSelector('body[data-state="live"]');
    return p;
  }

  it("asks, deletes on the relay, and is the owner's alone", async () => {
    const problems = [];
    const p = await page(relay.pageURL, problems);
    await p.waitForSelector('#send:not([disabled])');
    assert.ok(await p.locator('#delete-conv').isHidden(), 'offered for a conversation the relay does not know');
    await p.fill('#prompt', 'first one');
    await p.press('#prompt', 'Enter');
    await p.waitForSelector('.status.completed');
    await p.click('#menu');
    await p.locator('#delete-conv').waitFor({ state: 'visible' });

    // Dismissed, the question deletes nothing.
    p.once('dialog', (d) => d.dismiss());
    await p.click('#delete-conv');
    await p.waitForTimeout(300);
    assert.match(await p.locator('#conv-list').textContent(), /first one/);

    let asked = '';
    p.once('dialog', (d) => { asked = d.message(); d.accept(); });
    await p.click('#delete-conv');
    await p.getByText('This conversation was deleted.').waitFor();
    assert.match(asked, /^Delete “first one” and its history, on the relay and for every device\? This cannot be undone\. The files in its folder, .+, stay as they are\.$/);
    await p.click('#menu');
    assert.doesNotMatch(await p.locator('#conv-list').textContent(), /first one/);

    // The relay no longer has it: a page opened anew does not list it.
    const again = await page(relay.pageURL, problems);
    await again.waitForSelector('body[data-role="owner"]'); // its list came
    await again.click('#menu');
    assert.doesNotMatch(await again.locator('#conv-list').textContent(), /first one/);

    // A controller's page does not offer it.
    const pixel = execFileSync(binary(), ['token', 'create', '--name', 'Pixel', '--role', 'controller', '--data-dir', dataDir], { encoding: 'utf8' }).split('\n')[0];
    const phone = await page(`${relay.base}#token=${encodeURIComponent(pixel)}`, problems);
    await phone.waitForSelector('#send:not([disabled])');
    await phone.fill('#prompt', 'second one');
    await phone.press('#prompt', 'Enter');
    await phone.waitForSelector('.status.completed');
    await phone.click('#menu');
    assert.ok(await phone.locator('#delete-conv').isHidden(), "a controller's page offers Delete");
    assert.deepEqual(problems, []);
  });
});
