// Checkpoints in the web client (docs/checkpoints.md) against the real
// relay, whose scripted agent changes files in its folder: the turn's
// changes card lists them, a file opens to its diff (asked with
// copilot:diff), Restore asks first, naming what it changes, then puts
// the files back, and the restore's notice offers Undo. A viewer's page
// reads the diff but offers neither Restore nor Undo.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { binary, browser, chromiumMissing, screenshot as shot, startRelay, tempDir, watchPage } from './harness.js';

const skip = chromiumMissing();
const WAIT = 20_000;
const PHONE = { width: 390, height: 844 };

describe('changes card', { skip: skip || false }, () => {
  let relay;
  let chrome;
  let dataDir;
  let work;

  before(async () => {
    dataDir = tempDir('pilotdesk-e2e-changes-');
    work = tempDir('pilotdesk-e2e-work-');
    writeFileSync(path.join(work, 'notes.md'), 'old\n');
    const script = path.join(dataDir, 'script.json');
    writeFileSync(script, JSON.stringify({ turns: [{ steps: [
      { tool: { name: 'edit', write: { path: 'notes.md', content: 'new\n' } } },
      { tool: { name: 'edit', write: { path: 'added.txt', content: 'a\nb\n' } } },
      { delta: 'Edited the notes.' },
    ] }] }));
    relay = await startRelay({ dataDir, script, args: ['--workdir', work] });
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

  const read = (name) => (existsSync(path.join(work, name)) ? readFileSync(path.join(work, name), 'utf8') : null);

  it('lists the files, shows a diff, restores after asking, and undoes', async () => {
    const problems = [];
    const p = await page(relay.pageURL, problems);
    await p.waitForSelector('#send:not([disabled])');
    await p.fill('#prompt', 'edit the notes');
    await p.press('#prompt', 'Enter');
    const card = p.locator('.note.changes');
    await card.waitFor();
    assert.equal(await card.locator('.card-title').textContent(), '2 files changed +3 −1');
    assert.deepEqual(await card.locator('.card-file summary').allTextContents(), ['Aadded.txt+2 −0', 'Mnotes.md+1 −1']);

    // Each file shows that it opens: a triangle, turned once open (a
    // flex summary has no marker of the browser's own).
    const marker = (f) => card.locator(`.card-file[data-path="${f}"] summary`)
      .evaluate((s) => getComputedStyle(s, '::before').content);
    assert.equal(await marker('notes.md'), '"▸"');
    await card.locator('.card-file[data-path="notes.md"] summary').click();
    const diff = card.locator('.card-file[data-path="notes.md"] .diff');
    await diff.waitFor();
    assert.equal(await marker('notes.md'), '"▾"');
    assert.equal(await marker('added.txt'), '"▸"');
    assert.equal(await diff.locator('.del').textContent(), '- old\n');
    assert.equal(await diff.locator('.ins').textContent(), '+ new\n');
    await shot(p, 'phone-light-changes');

    await card.locator('.restore').click();
    const confirm = card.locator('.confirm');
    await confirm.waitFor();
    assert.deepEqual(await confirm.locator('.effects li').allTextContents(), ['added.txt (removed)', 'notes.md (rewritten)']);
    assert.equal(read('notes.md'), 'new\n', 'the folder changed before the restore was confirmed');
    await shot(p, 'phone-light-restore');
    await confirm.locator('button.danger').click();
    const notice = p.locator('.note.restored');
    await notice.waitFor();
    assert.match(await notice.textContent(), /^Files restored to checkpoint \w{8}: 2 changed\./);
    // Its Undo undoes it: the words name no other way ("Undo: restore
    // checkpoint …", which no front end offers by that name).
    assert.doesNotMatch(await notice.textContent(), /restore checkpoint/);
    assert.equal(read('notes.md'), 'old\n');
    assert.equal(read('added.txt'), null);
    await shot(p, 'phone-light-undo');

    await notice.locator('.undo').click();
    await p.waitForSelector('.note.restored >> nth=0 >> .undo:text("Undone")');
    assert.equal(read('notes.md'), 'new\n');
    assert.equal(read('added.txt'), 'a\nb\n');

    // A viewer reads the diff but restores nothing.
    const viewerToken = execFileSync(binary(), ['token', 'create', '--name', 'Viewer', '--role', 'viewer', '--data-dir', dataDir], { encoding: 'utf8' }).split('\n')[0];
    const v = await page(`${relay.base}#token=${encodeURIComponent(viewerToken)}`, problems);
    const vcard = v.locator('.note.changes');
    await vcard.waitFor();
    assert.equal(await vcard.locator('.restore').isVisible(), false, "a viewer's card offers Restore");
    assert.equal(await v.locator('.note.restored .undo').first().isVisible(), false, "a viewer's notice offers Undo");
    await vcard.locator('.card-file[data-path="added.txt"] summary').click();
    await vcard.locator('.card-file[data-path="added.txt"] .diff .ins').first().waitFor();
    assert.deepEqual(problems, []);
  });

  it('asks before an undo that takes back the turns since the restore', async () => {
    const problems = [];
    writeFileSync(path.join(work, 'notes.md'), 'old\n');
    execFileSync('rm', ['-f', path.join(work, 'added.txt')]);
    const p = await page(relay.pageURL, problems);
    await p.click('#menu');
    await p.click('#new-conv');
    await p.waitForSelector('#send:not([disabled])');
    const send = async (text, cards) => {
      await p.fill('#prompt', text);
      await p.press('#prompt', 'Enter');
      await p.waitForFunction((n) => document.querySelectorAll('.note.changes').length === n, cards);
    };
    await send('edit the notes', 1);
    const first = p.locator('.note.changes').first();
    await first.locator('.restore').click();
    await first.locator('.confirm button.danger').click();
    const notice = p.locator('.note.restored');
    await notice.waitFor();
    assert.equal(read('added.txt'), null);
    await send('edit them again', 2);
    assert.equal(read('added.txt'), 'a\nb\n');

    await notice.locator('.undo').click();
    const confirm = notice.locator('.confirm');
    await confirm.waitFor();
    assert.match(await confirm.textContent(), /^Turns since that restore changed files/);
    assert.deepEqual(await confirm.locator('.effects li').allTextContents(), ['added.txt (removed)', 'notes.md (rewritten)']);
    await confirm.locator('button:text("Cancel")').click();
    assert.equal(await notice.locator('.undo').textContent(), 'Undo', 'Cancel undid');
    await notice.locator('.undo').click();
    await confirm.locator('button.danger').click();
    await p.waitForSelector('.note.restored >> nth=0 >> .undo:text("Undone")');
    assert.equal(read('notes.md'), 'new\n');
    assert.deepEqual(problems, []);
  });
});
