// The web fold (web/static/js/conversation.js) of prompts this page sent:
// its own prompt is "You" even after a replay started over (resetCopy), by
// the clientId the relay echoes, or by its text with an older relay; a
// prompt the relay did not get (connection.js reports it lost) is a note
// holding it, which stays across a new copy and says so when its echo
// comes after all; a prompt the relay refused is the one its error names,
// back in the box or in a note of its own. Run by scripts/web-unit.sh.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { Conversation } from '../static/js/conversation.js';

// A page that has not learned who it is on the relay yet (its first
// echo teaches it).
const stranger = () => ({ is: () => false, learn: () => {} });
const phone = { device: 'Pixel', client: 'web' };
const users = (c) => c.rows.filter((r) => r.kind === 'user').map((r) => ({ text: r.text, from: r.from }));

test("the page's own prompt is its own after a first replay cut short starts the copy over", () => {
  const c = new Conversation('c', { skew: 0 }, stranger());
  c.markSending('fix the build', 'k1');
  // The socket dropped during the first replay: connection.js says
  // reset, and the replay comes again with the prompt's echo.
  c.resetCopy();
  c.apply('copilot:user_message', { conversationId: 'c', seq: 1, messageId: 'u1', content: 'fix the build', mode: 'act', sentBy: phone, clientId: 'k1' });
  assert.deepEqual(users(c), [{ text: 'fix the build', from: '' }], 'shown as sent from another device');
});

test('an echo names its prompt by clientId; an older relay by its text', () => {
  const c = new Conversation('c', { skew: 0 }, stranger());
  c.markSending('same words', 'mine');
  // Another device sent the same words first: not this page's.
  c.apply('copilot:user_message', { conversationId: 'c', seq: 1, content: 'same words', mode: 'act', sentBy: phone, clientId: 'theirs' });
  c.apply('copilot:idle', { conversationId: 'c', seq: 2, status: 'completed' });
  c.apply('copilot:user_message', { conversationId: 'c', seq: 3, content: 'same words', mode: 'act', sentBy: phone, clientId: 'mine' });
  c.apply('copilot:idle', { conversationId: 'c', seq: 4, status: 'completed' });
  c.markSending('old relay', 'k9');
  c.apply('copilot:user_message', { conversationId: 'c', seq: 5, content: 'old relay', mode: 'act', sentBy: phone });
  assert.deepEqual(users(c), [
    { text: 'same words', from: 'Pixel (web)' },
    { text: 'same words', from: '' },
    { text: 'old relay', from: '' },
  ]);
});

test('a prompt the relay did not get is a note that holds it, across a new copy, until its echo comes after all', () => {
  const c = new Conversation('c', { skew: 0 }, stranger());
  c.markSending('deploy it', 'k1');
  assert.equal(c.lost('unknown', true), null, 'a clientId this page did not send');
  assert.equal(c.lost('k1', false), 'deploy it');
  let note = c.rows.at(-1);
  assert.equal(note.kind, 'note');
  assert.equal(note.tone, 'warning');
  assert.match(note.text, /The relay did not get your message/);
  assert.deepEqual(note.lost, { clientId: 'k1', prompt: 'deploy it', back: false, arrived: false, refused: false });
  assert.equal(c.lost('k1', false), null, 'reported once');

  // Only the note holds it: a new copy keeps the note.
  c.resetCopy();
  assert.equal(c.rows.length, 1, 'the note went with the copy');
  assert.equal(c.rows[0].lost.prompt, 'deploy it');

  c.putBack('k1');
  note = c.rows.at(-1);
  assert.equal(note.lost.back, true);
  assert.match(note.text, /it is back in the box/);

  // A relay of the cluster had it after all.
  let ch = c.apply('copilot:user_message', { conversationId: 'c', seq: 1, content: 'deploy it', mode: 'act', sentBy: phone, clientId: 'k1' });
  assert.equal(ch.arrived, 'deploy it');
  assert.equal(c.rows[0].lost.arrived, true);
  assert.match(c.rows[0].text, /reached the relay after all/);
  assert.deepEqual(users(c), [{ text: 'deploy it', from: '' }]);

  // One the box holds again goes with the copy (the box has it), and its
  // echo coming after all still empties the box of it.
  c.markSending('second', 'k2');
  c.lost('k2', true);
  c.resetCopy();
  assert.deepEqual(c.rows, []);
  ch = c.apply('copilot:user_message', { conversationId: 'c', seq: 3, content: 'second', mode: 'act', sentBy: phone, clientId: 'k2' });
  assert.equal(ch.arrived, 'second');
  assert.deepEqual(users(c), [{ text: 'second', from: '' }]);
});

test('a refused prompt is the one its error names: back in the box, or a note that holds it', () => {
  const c = new Conversation('c', { skew: 0 }, stranger());
  c.markSending('first', 'k1');
  c.markSending('second', 'k2');
  assert.equal(c.refused('unknown', true), null, 'a clientId this page did not send');
  // The first of two is refused, not the last sent.
  assert.equal(c.refused('k1', true), 'first');
  assert.deepEqual(c.rows, [], 'back in the box: the relay\'s error says enough');
  assert.equal(c.refused('k1', true), null, 'given back once');
  assert.equal(c.lost('k1', true), null, 'a refused prompt was also reported lost');

  // The box held something else: a note holds it, to put back or copy,
  // and stays across a new copy as a lost prompt's does.
  assert.equal(c.refused('k2', false), 'second');
  let note = c.rows.at(-1);
  assert.equal(note.tone, 'warning');
  assert.match(note.text, /^The relay did not take your message, and the box held something else/);
  assert.deepEqual(note.lost, { clientId: 'k2', prompt: 'second', back: false, arrived: false, refused: true });
  c.resetCopy();
  assert.equal(c.rows.length, 1);
  c.putBack('k2');
  note = c.rows.at(-1);
  assert.equal(note.lost.back, true);
  assert.match(note.text, /^The relay did not take your message: it is back in the box/);
});

test("a prompt given back did not switch the mode it was sent in: a switch to it then is another's", () => {
  const c = new Conversation('c', { skew: 0 }, stranger());
  c.apply('copilot:subscribed', { conversationId: 'c', mode: 'plan', seq: 0 });
  c.apply('copilot:mode_changed', { conversationId: 'c', seq: 1, mode: 'plan' });
  c.note('info', 'a row, so that a switch shows');
  // Run in Act: the prompt goes in Act, and its switch would be this page's.
  c.markSending('run the plan', 'k1', 'act');
  assert.equal(c.refused('k1', true), 'run the plan');
  c.apply('copilot:mode_changed', { conversationId: 'c', seq: 2, mode: 'act', changedBy: phone });
  assert.match(c.rows.at(-1).text, /^Switched to Act by Pixel \(web\)/);

  // Sent and echoed, the switch is this page's own.
  c.apply('copilot:mode_changed', { conversationId: 'c', seq: 3, mode: 'plan', changedBy: phone });
  c.markSending('run it again', 'k2', 'act');
  c.apply('copilot:mode_changed', { conversationId: 'c', seq: 4, mode: 'act', changedBy: phone });
  assert.doesNotMatch(c.rows.at(-1).text, /by Pixel/);
});
