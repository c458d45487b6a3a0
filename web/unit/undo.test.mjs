// The undo of a restore in the web fold (words.js undoDiscards, as
// conversation.State.UndoDiscards): the files of the turns since the
// restore, which the undo takes back too, for the page to ask first; none
// when no turn changed files since (Undo goes at once). Run by
// scripts/web-unit.sh.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { undoDiscards } from '../static/js/words.js';

const changes = (checkpoint, ...files) => ({ kind: 'note', changes: { checkpoint, files: files.map(([path, status]) => ({ path, status })) } });

test('an undo names the files of the turns since its restore, and none without such turns', () => {
  const rows = [
    changes('cp1', ['notes.md', 'modified']),
    { kind: 'note', restored: { checkpoint: 'cp1', undo: 'u1', files: [] } },
    { kind: 'user', text: 'later' },
  ];
  assert.deepEqual(undoDiscards(rows, 'u1'), [], 'no turn since: nothing else undone');
  rows.push(changes('cp2', ['later.txt', 'added'], ['notes.md', 'modified']));
  rows.push(changes('cp3', ['gone.txt', 'deleted']));
  assert.deepEqual(undoDiscards(rows, 'u1'), [
    { path: 'gone.txt', effect: 'brought back' },
    { path: 'later.txt', effect: 'removed' },
    { path: 'notes.md', effect: 'rewritten' },
  ]);
  assert.deepEqual(undoDiscards(rows, 'nope'), [], 'an undo checkpoint of no restore');
});
