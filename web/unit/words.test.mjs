// The page's words against the Go ones: conversation/testdata/words.json
// holds cases (a function of words.js, its arguments) and what the Go
// functions of conversation/ say for them (conversation's TestWords checks
// the file is what Go says now, and go generate ./conversation writes it
// anew). Here words.js must say the same for every case, so a wording
// changed in Go and not here fails make test (scripts/web-unit.sh).
process.env.TZ = 'UTC'; // the pace's day, as the cases' clock says it

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import * as words from '../static/js/words.js';

const file = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'conversation', 'testdata', 'words.json');
const cases = JSON.parse(readFileSync(file, 'utf8'));

// usageOf folds the events of a case into a usage, as the page's fold
// does with what the relay sends.
function usageOf(events) {
  const u = words.newUsage();
  for (const e of events) {
    if (e.type === 'copilot:quota') words.addQuota(u, e.data);
    else if (e.type === 'copilot:shutdown') words.addShutdown(u, e.data);
    else throw new Error(`a usage case with a ${e.type}`);
  }
  return u;
}

// What the cases' arguments are to words.js, where they are not its own.
const adapters = {
  usageText: (conv, turn, now) => words.usageText(usageOf(conv), usageOf(turn), Date.parse(now)),
  turnText: (turn, conv, now) => words.turnText(usageOf(turn), usageOf(conv), Date.parse(now)),
  totalsText: (events) => words.totalsText(usageOf(events)),
  waitingText: (deadline, now) => words.waitingText(deadline ? Date.parse(deadline) : 0, Date.parse(now)),
  countdownText: (deadline, now) => words.countdownText(deadline ? Date.parse(deadline) : 0, Date.parse(now)),
  thinkingText: () => words.THINKING_TEXT,
  unsentWhy: () => words.UNSENT_WHY,
  restoreBusy: () => words.RESTORE_BUSY,
  restoreQuestion: () => words.RESTORE_QUESTION,
  undoQuestion: () => words.UNDO_QUESTION,
  restoreButton: () => words.RESTORE_BUTTON,
  planCardHint: () => words.PLAN_CARD_HINT,
  agentPlanTitle: () => words.AGENT_PLAN_TITLE,
  runInAct: () => words.RUN_IN_ACT,
  ranInAct: () => words.RAN_IN_ACT,
  planBusy: () => words.PLAN_BUSY,
  restoringText: () => words.RESTORING_TEXT,
  diffCut: () => words.DIFF_CUT,
  diffLoading: () => words.DIFF_LOADING,
  noDiff: () => words.NO_DIFF,
  approvalKeys: () => words.APPROVAL_KEYS,
  approvalHint: () => words.APPROVAL_HINT,
  textKeys: () => words.TEXT_KEYS,
  answerRequired: () => words.ANSWER_REQUIRED,
  answerOrPick: () => words.ANSWER_OR_PICK,
  viewerCannotAnswer: () => words.VIEWER_CANNOT_ANSWER,
  arrivedLate: () => words.ARRIVED_LATE,
  entryStatus: (waiting, deadline, streaming, now) => words.entryStatus(waiting, deadline ? Date.parse(deadline) : 0, streaming, Date.parse(now)),
  ago: (t, now) => words.ago(Date.parse(t), Date.parse(now)),
  patchLines: (patch) => words.patchLines(patch).map((l) => l.op + l.text),
  stepText: (tool, args) => words.stepText(words.planStep(tool, args)),
  planPrompt: (steps) => words.planPrompt(steps.map((s) => words.planStep(s.tool, s.args))),
};

test('words.js says what the Go words say', () => {
  assert.ok(cases.length > 50, `only ${cases.length} cases in ${file}`);
  const failed = [];
  for (const [i, c] of cases.entries()) {
    const fn = adapters[c.fn] ?? words[c.fn];
    if (typeof fn !== 'function') {
      failed.push(`case ${i}: words.js has no ${c.fn}`);
      continue;
    }
    const got = fn(...c.args);
    try {
      assert.deepEqual(got, c.want);
    } catch {
      failed.push(`case ${i}: ${c.fn}(${c.args.map((a) => JSON.stringify(a)).join(', ')})\n  words.js: ${JSON.stringify(got)}\n  Go:       ${JSON.stringify(c.want)}`);
    }
  }
  assert.equal(failed.length, 0, `words.js differs from the Go words (${file}):\n${failed.join('\n')}`);
});

test('planPromptSteps reads back the steps of every planPrompt case', () => {
  const prompts = cases.filter((c) => c.fn === 'planPrompt');
  assert.ok(prompts.length > 0, `no planPrompt case in ${file}`);
  for (const c of prompts) {
    const steps = c.args[0].map((s) => words.planStep(s.tool, s.args));
    assert.deepEqual(words.planPromptSteps(c.want), steps.map(words.stepText));
  }
  assert.deepEqual(words.planPromptSteps('1. run `make test`'), [], 'a prompt without the head is no plan');
});
