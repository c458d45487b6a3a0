// The web client's fold (web/static/js/conversation.js) against the
// contracts of the recorded streams: conversation/testdata/NAME.jsonl,
// folded here as the page folds what the relay sends, must make the rows,
// words and usage lines of NAME.want.json, which the Go fold makes too
// (conversation.TestContract) and the terminal prints (chat's
// TestRecordedStreams). Run by scripts/web-unit.sh (make test), with
// node:test and nothing from npm.
//
//   node --test web/unit/
process.env.TZ = 'UTC'; // the pace's day, as the contracts' clock says it

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Conversation } from '../static/js/conversation.js';
import { fileChangeText, planStep, stepText, totalsText, turnText, usageText } from '../static/js/words.js';

const testdata = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'conversation', 'testdata');

// What the web client does not show yet, by the contract's row kind: the
// test says so for each stream that has one, rather than failing on it.
const NOT_YET = {};

// contractOf is what the page's fold made of a stream, in the contract's
// terms (conversation/contract_test.go, Contract).
function contractOf(c, now) {
  const rows = [];
  const messages = {};
  const put = (row) => {
    // The contract leaves empty fields out.
    rows.push(Object.fromEntries(Object.entries(row).filter(([, v]) => v !== '' && v !== undefined)));
  };
  for (const r of c.rows) {
    switch (r.kind) {
      case 'user':
        put({ kind: 'user', text: r.text, mode: r.mode });
        break;
      case 'text': {
        messages[r.messageId] = (messages[r.messageId] ?? '') + r.text;
        const last = rows[rows.length - 1];
        if (!last || last.kind !== 'text' || last.message !== r.messageId) put({ kind: 'text', message: r.messageId });
        break;
      }
      case 'reasoning':
        put({ kind: 'reasoning', message: r.messageId, text: r.text });
        break;
      case 'plan':
        put({ kind: 'agentplan', text: r.text });
        break;
      case 'tool':
        put({ kind: 'tool', text: r.summary, title: r.name, state: r.state, detail: r.detail });
        break;
      case 'status':
        put({ kind: 'status', text: r.text, state: r.status, detail: r.detail });
        break;
      case 'mode':
        put({ kind: 'mode', text: r.text, mode: r.mode });
        break;
      case 'note':
        if (r.changes) put({ kind: 'changes', text: r.text, detail: r.changes.files.map(fileChangeText).join('\n') });
        else if (r.restored) put({ kind: 'restored', text: r.text, detail: r.restored.files.map(fileChangeText).join('\n') });
        else put({ kind: 'note', text: r.text, state: r.tone });
        break;
      case 'plancard':
        put({ kind: 'plancard', text: r.steps.map((s) => stepText(planStep(s.tool, s.args))).join('\n') });
        break;
      default:
        put({ kind: `web:${r.kind}` }); // a kind the contract does not know
    }
  }
  const out = {
    title: c.title, mode: c.mode, streaming: c.streaming, rows,
    messages: Object.keys(messages).length ? messages : undefined,
    now: new Date(now).toISOString().replace('.000Z', 'Z'),
    usage: usageText(c.usage, c.turn, now),
    totals: totalsText(c.usage) || undefined,
    turn: turnText(c.turn, c.usage, now),
  };
  return JSON.parse(JSON.stringify(out)); // undefined fields out, as Go's omitempty
}

const streams = readdirSync(testdata).filter((f) => f.endsWith('.jsonl')).sort();

test('there are recorded streams', () => {
  assert.ok(streams.length > 0, `no *.jsonl in ${testdata}`);
});

for (const file of streams) {
  test(`the web fold of ${file} is its contract`, (t) => {
    const name = file.replace(/\.jsonl$/, '');
    let want;
    try {
      want = JSON.parse(readFileSync(join(testdata, `${name}.want.json`), 'utf8'));
    } catch (err) {
      assert.fail(`${file} has no contract ${name}.want.json (go test ./conversation -run TestContract -update writes it): ${err.message}`);
    }
    let c = null;
    for (const line of readFileSync(join(testdata, file), 'utf8').split('\n')) {
      if (!line.trim()) continue;
      const { type, data } = JSON.parse(line);
      c ??= new Conversation(data.conversationId);
      c.apply(type, data);
    }
    const got = contractOf(c, Date.parse(want.now));
    const missing = want.rows.filter((r) => NOT_YET[r.kind]);
    for (const kind of new Set(missing.map((r) => r.kind))) t.diagnostic(`${file}: not checked: ${NOT_YET[kind]}`);
    want.rows = want.rows.filter((r) => !NOT_YET[r.kind]);
    assert.deepStrictEqual(got, want, `the web client's fold of ${file} differs from ${name}.want.json`);
  });
}
