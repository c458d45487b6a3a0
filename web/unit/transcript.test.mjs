// The page's transcript says a tool call's state and why a changed file
// shows no lines in the words of words.js (held to the Go words by
// words.test.mjs), on a fake DOM: it said "running" and "stopped" where
// the window and the terminal say "running…" and "stopped with the
// turn", and "No diff to show (a binary file, or no lines changed)." for
// a change of a file's mode alone. An open file whose diff the relay
// refused showed nothing where the window says conversation.NoDiff.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { install } from '../e2e/fakedom.js';

install();
const { Transcript } = await import('../static/js/transcript.js');
const words = await import('../static/js/words.js');

test('a tool row says its state as words.js does', () => {
  for (const state of ['running', 'approved', 'denied', 'failed', 'stopped']) {
    const node = Transcript.prototype.buildTool({ kind: 'tool', name: 'bash', summary: 'make', state, detail: '' });
    const said = node.childNodes[0].childNodes.find((n) => n.className === 'tool-state' || n.attributes?.class === 'tool-state');
    assert.ok(said, `no tool-state in ${node.html}`);
    assert.equal(said.textContent, words.toolStateText(state));
  }
  assert.equal(words.toolStateText('stopped'), 'stopped with the turn');
});

test('a file without lines says why', () => {
  const file = (binary) => ({ dataset: { status: 'modified', binary: String(binary) } });
  const said = (binary, patch) => Transcript.prototype.diffOf(file(binary), { patch, truncated: false }, null, null).textContent;
  assert.equal(said(false, 'diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n'), 'Mode changed: 100644 → 100755');
  assert.equal(said(true, ''), 'A binary file: no diff to show.');
  assert.equal(said(false, ''), 'No lines changed.');
});

test('an open file with no diff on its way says so, a closed one nothing', () => {
  const t = Object.create(Transcript.prototype);
  t.actions = {};
  const file = (path) => ({ path, status: 'modified', additions: 1, deletions: 0 });
  const row = { kind: 'note', changes: { checkpoint: 'cp', files: [file('open.go'), file('closed.go')] } };
  const node = t.buildChanges(row);
  const [open, closed] = node.querySelectorAll('.card-file');
  open.open = true;
  t.updateChanges(node, { ...row, card: { patches: {}, loading: {}, error: 'no such checkpoint' } });
  assert.equal(open.querySelector('.file-diff').textContent, words.NO_DIFF);
  assert.equal(closed.querySelector('.file-diff').textContent, '');
  assert.equal(node.querySelector('.card-error').textContent, words.diffRefusedText('no such checkpoint'));
  // Asked again, it loads.
  t.updateChanges(node, { ...row, card: { patches: {}, loading: { 'open.go': true } } });
  assert.equal(open.querySelector('.file-diff').textContent, words.DIFF_LOADING);
});
