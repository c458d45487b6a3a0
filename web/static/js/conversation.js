// conversation.js: the fold of one conversation's events into what the
// page shows, as conversation.State does for the window and the terminal
// client: rows (prompts, assistant text, tool calls, turn endings, mode
// switches, notes), the mode, whether a turn runs, the open question and
// its deadline, and the usage. It touches no DOM; the views render it.

import {
  ARRIVED_LATE, UNSENT_WHY, addQuota, answerRefusedText, addShutdown, agentChangeText, byText, changesText, closedText, modeByText, relayErrorText, modeChangeText, newUsage, oneLine, planProgress,
  planRan, restoreEffects, undoDiscards, restoredText, statusText, titleFrom, toolCommand, toolSummary, turnText,
} from './words.js';

/**
 * A row is one entry of the transcript. Every row has kind and v (its
 * version, bumped on each change). Kinds and their fields:
 *   user:   text, mode, from (who sent it, when not this page)
 *   text:   messageId, text (markdown), done
 *   tool:   id, name, summary, args (as the agent sent them), state
 *           (running|approved|denied|failed), detail
 *   status: status, text, detail, usage
 *   mode:   mode, text
 *   note:   tone (info|warning|error), text; a prompt the relay did not
 *           get, or refused, also lost ({clientId, prompt, back (it is in
 *           the prompt box again), arrived (its echo came after all),
 *           refused}); a turn's changes card also
 *           changes ({checkpoint, after, files, truncated}), a restore's
 *           notice restored ({checkpoint, undo, files}), and either card
 *           ({patches: path → {patch, truncated}, loading: path → true,
 *           error, restoring, undone}), replaced whole on each change
 *   reasoning: messageId, text (the agent's reasoning, plain), done
 *   plan:   entries ([{content, priority, status}]), text (its progress), done
 *   plancard: the tool calls a turn in Plan asked for and Plan denied,
 *           under its end (conversation.State's RowPlan): id ("plan-" and
 *           the first call's id), steps ([{row, tool, args}], the denied
 *           tool rows in order), ran (a prompt of planPrompt's came after
 *           it, before the next plan card: words.planRan), ranPrompt (that
 *           prompt)
 */

// The agent moved on from its reasoning on these: a run of it is over
// ("Thought", not "Thinking…"); more would be another run, with another id.
const ENDS_THOUGHTS = new Set(['copilot:delta', 'copilot:message', 'copilot:tool_start', 'copilot:tool_end',
  'copilot:plan', 'copilot:user_input_request', 'copilot:error']);

// lostText is the note of a prompt the relay did not get, or refused
// (its error, just above, says why); back: it is in the prompt box again.
function lostText(back, refused) {
  const why = refused ? REFUSED_WHY : UNSENT_WHY;
  return back
    ? `${why}: it is back in the box. Send it again when you are ready.`
    : `${why}, and the box held something else: here it is.`;
}

// REFUSED_WHY says why a refused prompt comes back; the relay's error
// (the note before it, until a new copy of the conversation) gives the
// reason, so the note does not point at it.
const REFUSED_WHY = 'The relay did not take your message';

// RESTARTED is the relay's copilot:idle message for a turn it cut itself
// (relay.RestartedMessage); INTERRUPTED is how the page says it.
const RESTARTED = 'relay restarted';
const INTERRUPTED = 'Interrupted: the relay restarted';

export class Conversation {
  /**
   * @param {string} id
   * @param {{skew: number}} clock the relay's clock minus this one's, in
   *   ms (from copilot:subscribed's serverTime), shared by every
   *   conversation of one relay.
   * @param {{is: function, learn: function}} identity who this page is on
   *   the relay (identity.js), shared by every conversation.
   */
  constructor(id, clock = { skew: 0 }, identity = { is: () => false, learn: () => {} }) {
    this.id = id;
    this.clock = clock;
    this.identity = identity;
    this.title = '';
    this.titled = false;
    this.agent = ''; // the agent of the latest turn, as the list entry or the latest prompt names it
    this.workspace = null; // {path, isolation, dir, branch?} once the relay fixed it (docs/workspaces.md)
    this.updatedAt = 0;
    this.onRelay = false;
    // What this page did, which a new copy of the relay's history does not
    // change (resetCopy keeps them): a replay started over still shows
    // the page's own prompts, switches and answers as its own.
    this.sentHere = []; // {text, clientId} of prompts sent from here whose copilot:user_message has not come
    this.modesHere = []; // modes this page asked for whose copilot:mode_changed has not come
    this.answered = new Map(); // requestId → answer sent from here ('' for a rejection)
    this.lostHere = new Map(); // clientId → the note row of a prompt the relay did not get, or refused
    this.resetCopy();
  }

  /** resetCopy forgets everything the relay sent (a new epoch). */
  resetCopy() {
    // A view that drew the old copy knows by this that it must start over.
    this.generation = (this.generation || 0) + 1;
    this.mode = this.mode || 'act';
    this.streaming = false;
    this.synced = false;
    this.rows = [];
    this.pending = null;
    this.usage = newUsage();
    this.turn = newUsage();
    this.turnOutput = false;
    this.lastError = '';
    this.errorRow = -1; // the row of the running turn's last copilot:error
    this.msgs = new Map(); // messageId → {row, text, done}
    this.thoughts = new Map(); // reasoning messageId → its row, while it streams
    this.planRow = -1; // the row of the running or last turn's agent plan
    this.turnStart = -1; // the row of the running or last turn's prompt
    this.ranOn = ''; // the agent the latest prompt named, to note where it changed
    // A prompt the relay did not get that only its note holds (the box
    // held something else) is the page's to keep: the note stays, after
    // the new copy's rows.
    for (const row of this.lostHere.values()) if (!row.lost.back) this.push(row);
  }

  /** thinking: a turn runs and has shown nothing yet. */
  get thinking() {
    return this.streaming && !this.pending && !this.turnOutput;
  }

  /**
   * apply folds one message of this conversation in. It returns what
   * changed: {rows, listing, opened (a question opened), arrived (the
   * prompt of a lost send whose echo came after all), ended (a turn's
   * status)}.
   */
  apply(type, d) {
    const ch = { rows: false, listing: false, opened: null, ended: null, arrived: null };
    this.ch = ch;
    try {
      this.applyInner(type, d || {}, ch);
    } finally {
      this.ch = null;
    }
    return ch;
  }

  applyInner(type, d, ch) {
    if (type !== 'error' && type !== 'copilot:deleted') this.onRelay = true;
    if (ENDS_THOUGHTS.has(type)) this.endThoughts();
    switch (type) {
      case 'copilot:subscribed':
        if (d.mode === 'plan' || d.mode === 'act') this.mode = d.mode;
        if (this.streaming !== !!d.streaming) ch.listing = true;
        this.streaming = !!d.streaming;
        this.synced = true;
        if (!this.streaming) {
          this.finishMessages();
          this.stopTools();
        }
        if (d.pendingInput) this.openRequest(d.pendingInput);
        else if (this.pending) this.closeRequest(this.pending.request.requestId);
        if (d.workspace && typeof d.workspace === 'object') {
          this.workspace = d.workspace;
          ch.listing = true;
        }
        break;
      case 'copilot:user_message': {
        this.finishMessages();
        this.mode = d.mode === 'plan' ? 'plan' : 'act';
        // The relay names the agent that runs the turn; where it differs
        // from the last prompt's (the relay restarted with another agent)
        // a note says so before the prompt. A prompt that names none
        // (history stored before relays said) changes nothing.
        if (typeof d.agent === 'string' && d.agent !== '') {
          if (this.ranOn && d.agent !== this.ranOn) this.note('info', agentChangeText(this.ranOn, d.agent));
          this.ranOn = d.agent;
          this.agent = d.agent;
        }
        // A prompt this page sent is its own; another's names its sender.
        // The relay echoes the send's clientId; an older relay does not,
        // and the prompt's text says which it was.
        const byId = typeof d.clientId === 'string' && d.clientId !== '';
        const sent = this.sentHere.findIndex((p) => (byId ? p.clientId === d.clientId : p.text === (d.content ?? '')));
        if (sent >= 0) this.sentHere.splice(sent, 1);
        const mine = sent >= 0 || (byId && this.lostHere.has(d.clientId) && this.arrivedLate(d.clientId));
        if (mine) this.identity.learn(d.sentBy);
        const from = !mine && !this.identity.is(d.sentBy) ? byText(d.sentBy) : '';
        this.turnStart = this.push({ kind: 'user', text: d.content ?? '', mode: this.mode, from });
        this.planRun();
        this.streaming = true;
        this.turnOutput = false;
        this.lastError = '';
        this.errorRow = -1;
        this.turn = newUsage();
        this.updatedAt = Date.now();
        if (!this.titled) {
          this.title = titleFrom(d.content ?? '');
          this.titled = true;
        }
        ch.listing = true;
        break;
      }
      case 'copilot:delta':
        this.delta(d.messageId, d.content ?? '');
        this.turnOutput = true;
        break;
      case 'copilot:message':
        if (d.truncated) {
          // Too long for one frame: the deltas carried the text.
          const m = this.msgs.get(d.messageId);
          if (m) this.finish(m);
        } else this.wholeMessage(d.messageId, d.content ?? '');
        break;
      case 'copilot:reasoning':
        this.reasoning(d.messageId ?? '', d.content ?? '');
        this.turnOutput = true;
        break;
      case 'copilot:plan':
        this.agentPlan(Array.isArray(d.entries) ? d.entries : []);
        this.turnOutput = true;
        break;
      case 'copilot:tool_start':
        this.turnOutput = true;
        this.push({ kind: 'tool', id: d.toolCallId, name: d.toolName || 'tool', summary: toolSummary(d.arguments), command: toolCommand(d.arguments), args: d.arguments, state: 'running', detail: '' });
        break;
      case 'copilot:tool_end': {
        this.turnOutput = true;
        const state = d.denied ? 'denied' : d.success ? 'approved' : 'failed';
        const i = this.findTool(d.toolCallId);
        if (i < 0) this.push({ kind: 'tool', id: d.toolCallId, name: d.toolCallId, summary: '', state, detail: d.result ?? '' });
        else this.update(i, { state, detail: d.result ?? '' });
        break;
      }
      case 'copilot:mode_changed': {
        // A switch this page asked for is its own; another's names who.
        const mine = this.modesHere.indexOf(d.mode);
        if (mine >= 0) {
          this.modesHere.splice(mine, 1);
          this.identity.learn(d.changedBy);
        }
        if (d.mode !== this.mode && (d.mode === 'plan' || d.mode === 'act')) {
          this.mode = d.mode;
          const by = mine < 0 && !this.identity.is(d.changedBy) ? d.changedBy : null;
          const text = modeByText(modeChangeText(d.mode, this.streaming), by);
          if (this.rows.length) this.push({ kind: 'mode', mode: d.mode, text });
          ch.listing = true;
        }
        break;
      }
      case 'copilot:user_input_request':
        this.openRequest(d);
        break;
      case 'copilot:user_input_timeout':
        this.note('warning', `No answer in time: the question ${JSON.stringify(oneLine(d.question, 120))} timed out and the agent goes on without an answer.`);
        this.closeRequest(d.requestId);
        break;
      case 'copilot:user_input_closed':
        if (this.pending && this.pending.request.requestId === d.requestId) {
          const here = this.answered.get(d.requestId);
          if (here !== undefined) this.identity.learn(d.answeredBy);
          // Its own answer of before (a replay) is "You"; live, one of its
          // kind on its device is another tab: named, as the window does.
          const byMe = !this.synced && this.identity.is(d.answeredBy);
          this.note('info', closedText(this.pending.request.question, here, d.reason, d.answeredBy, byMe));
        }
        this.closeRequest(d.requestId);
        break;
      case 'copilot:changes': {
        // What the turn changed in its folder (docs/checkpoints.md): a
        // card of its files, each opening to its diff, and Restore.
        const files = Array.isArray(d.files) ? d.files.map((f) => ({ ...f })) : [];
        this.push({ kind: 'note', tone: 'info', text: changesText(files, d.truncated),
          changes: { checkpoint: String(d.checkpoint ?? ''), after: String(d.after ?? ''), files, truncated: !!d.truncated } });
        break;
      }
      case 'copilot:restored': {
        // The card (or notice) that asked is done; a notice whose undo
        // this was is undone.
        this.rows.forEach((r, i) => {
          if (r.changes && r.changes.checkpoint === d.checkpoint && r.card?.restoring) this.setCard(i, { restoring: false });
          else if (r.restored && r.restored.undo === d.checkpoint && !r.card?.undone) this.setCard(i, { restoring: false, undone: true });
        });
        const files = Array.isArray(d.files) ? d.files.map((f) => ({ ...f })) : [];
        this.push({ kind: 'note', tone: 'info', text: restoredText(d),
          restored: { checkpoint: String(d.checkpoint ?? ''), undo: String(d.undo ?? ''), files } });
        break;
      }
      case 'copilot:diff': {
        const i = this.cardRow(d.checkpoint);
        if (i < 0) break;
        const card = this.rows[i].card || {};
        const patches = { ...card.patches };
        const loading = {};
        for (const f of Array.isArray(d.files) ? d.files : []) patches[f.path] = { patch: String(f.patch ?? ''), truncated: !!f.truncated };
        // A path the relay found no patch for gets an empty one rather
        // than loading for ever.
        for (const p of Object.keys(card.loading || {})) if (!(p in patches)) patches[p] = { patch: '', truncated: false };
        this.setCard(i, { patches, loading });
        break;
      }
      case 'copilot:error':
        this.lastError = d.message ?? '';
        this.errorRow = this.push({ kind: 'note', tone: 'error', text: `Agent error: ${d.message ?? ''}` });
        break;
      case 'copilot:idle': {
        this.finishMessages();
        this.stopTools();
        let detail = d.message ?? '';
        if (!detail && d.status === 'error') detail = this.lastError;
        let text = statusText(d.status);
        // A turn the relay cut (its restart, or a relay of the cluster
        // lost) was not stopped by anyone.
        if (detail === RESTARTED) [text, detail] = [INTERRUPTED, ''];
        else if (detail.startsWith('relay lost')) text = INTERRUPTED;
        const usage = this.turn.calls === 0 && !this.turn.haveTotals ? '' : turnText(this.turn, this.usage, Date.now());
        const status = { kind: 'status', status: d.status, text, detail, usage };
        if (!detail || detail !== this.lastError || this.errorRow < 0) this.push(status);
        else if (this.errorRow === this.rows.length - 1) {
          // The agent's error ends the turn: one row says both, rather
          // than the same words twice (as conversation.State does).
          status.v = this.rows[this.errorRow].v + 1;
          this.rows[this.errorRow] = status;
          this.ch.rows = true;
        } else {
          // Its error row stands above what followed; the end says only
          // that the turn failed.
          status.detail = '';
          this.push(status);
        }
        this.planCard(); // under the turn's end
        this.streaming = false;
        this.turnOutput = false;
        this.pending = null;
        this.updatedAt = Date.now();
        ch.ended = d.status;
        ch.listing = true;
        break;
      }
      case 'copilot:quota':
        addQuota(this.usage, d);
        addQuota(this.turn, d);
        ch.rows = true; // the usage line changed
        break;
      case 'copilot:shutdown':
        addShutdown(this.usage, d);
        addShutdown(this.turn, d);
        ch.rows = true;
        break;
      case 'error':
        if (d.type === 'copilot:diff') {
          this.rows.forEach((r, i) => {
            if (r.card && Object.keys(r.card.loading || {}).length) this.setCard(i, { loading: {}, error: d.message ?? d.code });
          });
          break;
        }
        if (d.type === 'copilot:restore') this.restoreFailed();
        this.relayError(d);
        break;
      default:
        // A type this page does not know: skipped, so that a newer relay
        // keeps working with this page.
        break;
    }
  }

  /** listed folds the conversation's entry of the list in. */
  listed(info) {
    this.onRelay = true;
    if (typeof info.agent === 'string') this.agent = info.agent;
    if (info.workspace && typeof info.workspace === 'object') this.workspace = info.workspace;
    if (info.title) {
      this.title = info.title;
      this.titled = true;
    }
    const t = Date.parse(info.updatedAt);
    if (!Number.isNaN(t)) this.updatedAt = t;
    if (!this.synced) {
      // Until the subscription says, the list is the best we know.
      this.streaming = !!info.streaming;
      if (info.mode === 'plan' || info.mode === 'act') this.mode = info.mode;
    }
  }

  // ---- local actions ----

  /**
   * markSending records a prompt sent from here with its copilot:send's
   * clientId (its echo is not another's); switches: the mode the send
   * switches the conversation to ('' for none), whose copilot:mode_changed
   * is this page's own too.
   */
  markSending(text, clientId = '', switches = '') {
    if (switches) this.markModeSent(switches);
    this.sentHere.push({ text, clientId, switches });
    if (this.sentHere.length > 16) this.sentHere.shift();
  }

  /**
   * lost records that the relay did not get the prompt sent from here as
   * clientId (the socket dropped first, or the relay restarted): a note
   * says so, holding the prompt; back: the page put it in the prompt box
   * again. It returns the prompt, or null for a clientId this page did
   * not send.
   */
  lost(clientId, back) {
    return this.giveBack(clientId, back, false);
  }

  /**
   * refused records that the relay refused the prompt sent from here as
   * clientId (its error is the row before): back, the page put it in the
   * prompt box again and the error says enough; else a note holds it, as
   * lost's does. It returns the prompt, or null for a clientId this page
   * did not send.
   */
  refused(clientId, back) {
    return this.giveBack(clientId, back, true);
  }

  giveBack(clientId, back, refused) {
    const i = this.sentHere.findIndex((p) => p.clientId === clientId);
    if (i < 0 || !clientId) return null;
    const { text, switches } = this.sentHere[i];
    this.sentHere.splice(i, 1);
    // Nor did the switch it carried happen: a switch to that mode now is
    // another's.
    const m = switches ? this.modesHere.indexOf(switches) : -1;
    if (m >= 0) this.modesHere.splice(m, 1);
    if (refused && back) return text;
    const row = { kind: 'note', tone: 'warning', text: lostText(back, refused), lost: { clientId, prompt: text, back, arrived: false, refused } };
    this.push(row);
    this.lostHere.set(clientId, row);
    return text;
  }

  /** putBack records that the given-back prompt of clientId is in the prompt box again. */
  putBack(clientId) {
    const row = this.lostHere.get(clientId);
    const i = this.rows.indexOf(row);
    if (i >= 0) this.update(i, { text: lostText(true, row.lost.refused), lost: { ...row.lost, back: true } });
  }

  // arrivedLate: the echo of a prompt this page took as lost came after
  // all (a relay of the cluster that was setting it up). Its note says so,
  // and the change names the prompt, which the page takes out of the box
  // if it is still there as it was. True: the echo is this page's.
  arrivedLate(clientId) {
    const row = this.lostHere.get(clientId);
    this.lostHere.delete(clientId);
    const lost = { ...row.lost, arrived: true };
    const i = this.rows.indexOf(row);
    if (i >= 0) this.update(i, { tone: 'info', text: ARRIVED_LATE, lost });
    if (this.ch) this.ch.arrived = lost.prompt;
    return true;
  }

  /** markModeSent records a copilot:set_mode sent from here. */
  markModeSent(mode) {
    this.modesHere.push(mode);
    if (this.modesHere.length > 8) this.modesHere.shift();
  }

  /** markAnswering records an answer sent from here ('' and rejected for a rejection). */
  markAnswering(requestId, answer, rejected) {
    this.answered.set(requestId, rejected ? '' : answer);
    if (this.pending && this.pending.request.requestId === requestId) {
      this.pending.answering = true;
      this.pending.hint = '';
    }
  }

  /** answerFailed shows the question again with why the answer did not go. */
  answerFailed(requestId, why) {
    if (this.pending && this.pending.request.requestId === requestId) {
      this.pending.answering = false;
      this.pending.hint = why;
    }
  }

  // ---- checkpoints (docs/checkpoints.md) ----

  // cardRow is the row of the changes card of checkpoint (-1: none).
  cardRow(checkpoint) {
    for (let i = this.rows.length - 1; i >= 0; i--) if (this.rows[i].changes?.checkpoint === checkpoint) return i;
    return -1;
  }

  // setCard gives row i a new card: its old one with fields changed.
  setCard(i, fields) {
    this.update(i, { card: { patches: {}, loading: {}, error: '', restoring: false, undone: false, ...this.rows[i].card, ...fields } });
  }

  /**
   * askDiff records that the page asks for the diff of path in the card
   * of checkpoint, and says whether to send copilot:diff: not when the
   * card has it or waits for it.
   */
  askDiff(checkpoint, path) {
    const i = this.cardRow(checkpoint);
    if (i < 0) return false;
    const card = this.rows[i].card;
    if (card && (path in card.patches || card.loading[path])) return false;
    this.setCard(i, { loading: { ...card?.loading, [path]: true }, error: '' });
    return true;
  }

  /** markRestoring records a restore to checkpoint asked for here (Restore, or a notice's Undo). */
  markRestoring(checkpoint) {
    this.rows.forEach((r, i) => {
      if (r.changes?.checkpoint === checkpoint || r.restored?.undo === checkpoint) this.setCard(i, { restoring: true });
    });
  }

  /** restoreFailed ends the restores this page waits for. */
  restoreFailed() {
    this.rows.forEach((r, i) => {
      if (r.card?.restoring) this.setCard(i, { restoring: false });
    });
  }

  /** restoreEffects is what a restore to checkpoint would change (words.js). */
  restoreEffects(checkpoint) {
    return restoreEffects(this.rows.filter((r) => r.changes).map((r) => r.changes), checkpoint);
  }

  /** undoDiscards is what the undo of a restore also undoes (words.js). */
  undoDiscards(undo) {
    return undoDiscards(this.rows, undo);
  }

  /** note adds a note row: something the page itself has to say. */
  note(tone, text) {
    this.push({ kind: 'note', tone, text });
  }

  // ---- internals ----

  relayError(e) {
    if (e.code === 'invalid_answer' && this.pending) {
      this.pending.answering = false;
      this.pending.hint = answerRefusedText(e.message ?? '');
      return;
    }
    // The busy prompt is a warning (what to do), the rest an error; the
    // words are the Go fold's (words.js relayErrorText).
    this.note(e.code === 'conversation_busy' ? 'warning' : 'error', relayErrorText(e));
  }

  openRequest(req) {
    if (this.pending && this.pending.request.requestId === req.requestId) {
      this.pending.request = req; // a re-subscribe: keep what this page knows
      return;
    }
    let deadline = 0;
    const expires = Date.parse(req.expiresAt ?? '');
    if (!Number.isNaN(expires)) deadline = expires - this.clock.skew;
    this.pending = { request: req, deadline, answering: false, hint: '' };
    if (this.ch) {
      this.ch.opened = req;
      this.ch.listing = true;
    }
  }

  closeRequest(requestId) {
    if (this.pending && this.pending.request.requestId === requestId) {
      this.pending = null;
      if (this.ch) this.ch.listing = true;
    }
  }

  push(row) {
    row.v = 1;
    this.rows.push(row);
    if (this.ch) this.ch.rows = true;
    return this.rows.length - 1;
  }

  update(i, fields) {
    const row = this.rows[i];
    Object.assign(row, fields);
    row.v++;
    if (this.ch) this.ch.rows = true;
  }

  // planCard ends a turn whose tool calls Plan denied with the plan they
  // make: what the agent wanted to do, to review and run in Act.
  planCard() {
    const steps = [];
    for (let i = Math.max(this.turnStart, 0); i < this.rows.length; i++) {
      const r = this.rows[i];
      if (r.kind === 'tool' && r.state === 'denied') steps.push({ row: i, tool: r.name, args: r.args });
    }
    if (steps.length) this.push({ kind: 'plancard', id: `plan-${this.rows[steps[0].row].id}`, steps, ran: false });
  }

  // planRun marks the last plan card run when the prompt just folded ran
  // it (words.planRan): the card is done and cannot run again.
  planRun() {
    for (let i = this.rows.length - 1; i >= 0; i--) {
      if (this.rows[i].kind !== 'plancard') continue;
      if (!this.rows[i].ran && planRan(this.rows, i)) this.update(i, { ran: true, ranPrompt: this.rows[this.rows.length - 1].text });
      return;
    }
  }

  // stopTools marks the tool calls still running as stopped: the turn
  // ended before they reported their end.
  stopTools() {
    this.rows.forEach((row, i) => {
      if (row.kind === 'tool' && row.state === 'running') this.update(i, { state: 'stopped' });
    });
  }

  findTool(id) {
    for (let i = this.rows.length - 1; i >= 0; i--) {
      if (this.rows[i].kind === 'tool' && this.rows[i].id === id) return i;
    }
    return -1;
  }

  // delta streams text into an assistant message. When something else was
  // shown since the message last wrote (a tool call), the text goes on in
  // a new row below it.
  delta(id, text) {
    let m = this.msgs.get(id);
    if (!m || m.done) {
      m = { row: -1, text: '', done: false };
      this.msgs.set(id, m);
    }
    if (!text) return;
    if (m.row >= 0 && m.row !== this.rows.length - 1) {
      this.update(m.row, { done: true });
      m.row = -1;
    }
    if (m.row < 0) m.row = this.push({ kind: 'text', messageId: id, text: '', done: false });
    m.text += text;
    this.update(m.row, { text: this.rows[m.row].text + text });
  }

  // wholeMessage handles copilot:message: an agent that streams no deltas
  // shows its text here; one that did gets any text its deltas missed.
  wholeMessage(id, content) {
    let m = this.msgs.get(id);
    if (!m || m.done) {
      if (!content) return;
      this.delta(id, content);
      m = this.msgs.get(id);
    } else if (m.text !== content) {
      if (content.startsWith(m.text)) this.delta(id, content.slice(m.text.length));
      else console.warn('pilotdesk: an assistant message differs from its deltas; keeping what was streamed', id);
    }
    if (content) this.turnOutput = true;
    this.finish(m);
  }

  finish(m) {
    if (m.done) return;
    if (m.row >= 0) this.update(m.row, { done: true });
    m.row = -1;
    m.done = true;
  }

  finishMessages() {
    for (const m of this.msgs.values()) this.finish(m);
    this.endThoughts();
    if (this.planRow >= 0 && !this.rows[this.planRow].done) this.update(this.planRow, { done: true });
  }

  // ---- the agent's reasoning and plan (agents that report them: ACP) ----

  // reasoning streams the agent's reasoning into a row of its own, one per
  // reasoning message: never into the reply's rows.
  reasoning(id, text) {
    const row = this.thoughts.get(id);
    if (row === undefined) {
      this.thoughts.set(id, this.push({ kind: 'reasoning', messageId: id, text, done: false }));
      return;
    }
    this.update(row, { text: this.rows[row].text + text });
  }

  endThoughts() {
    for (const row of this.thoughts.values()) {
      if (!this.rows[row].done) this.update(row, { done: true });
    }
    this.thoughts.clear();
  }

  // agentPlan shows the agent's plan, whole each time: the turn's first as
  // a new row, each later one of the turn in that row.
  agentPlan(entries) {
    const clean = entries.filter((e) => e && typeof e === 'object').map((e) => ({
      content: String(e.content ?? ''), priority: String(e.priority ?? ''), status: String(e.status ?? ''),
    }));
    const fields = { entries: clean, text: planProgress(clean) };
    if (this.planRow >= 0 && this.planRow > this.turnStart && !this.rows[this.planRow].done) {
      this.update(this.planRow, fields);
      return;
    }
    // An empty plan and none before it in the turn: nothing to show (an
    // agent sends one when its model clears its todo list).
    if (clean.length === 0) return;
    this.planRow = this.push({ kind: 'plan', ...fields, done: false });
  }
}
