// transcript.js: the rows of the open conversation. It redraws only the
// rows whose version changed, and of a streaming reply only the markdown
// block still growing, so a long reply costs the same per delta as a short
// one. Rows far off screen are skipped by the browser's layout
// (content-visibility in app.css), which keeps long transcripts light.
//
// A long conversation is built newest first, a slice of rows per frame
// (at most SLICE_ROWS, and SLICE_MS of building): the latest screen is
// drawn at once, the older rows are added above it frame by frame, and the
// page answers the user meanwhile instead of building thousands of rows
// in one task. Only the newest WINDOW rows are kept in the page (each
// slice and each scroll lays out what is in it): above them "Show
// earlier messages" adds EARLIER more, by itself when the user scrolls
// near it; while following, rows past the window are dropped again.
//
// It follows the newest content: while the view is at the bottom (within
// two of its lines, measured in what is drawn), anything that grows the
// rows or shrinks the view (a banner, the keyboard) keeps it there; once
// the user scrolls up it stays put and the "New messages" pill counts what
// arrives below, and jumps there. Opening a conversation, a send and an
// answer follow again (follow()).

import { el, clear } from './dom.js';
import { renderBlock, splitBlocks } from './markdown.js';
import {
  AGENT_PLAN_TITLE, DIFF_CUT, DIFF_LOADING, NO_DIFF, PLAN_CARD_HINT, RAN_IN_ACT, RESTORE_BUTTON, RUN_IN_ACT, RESTORE_QUESTION, RESTORING_TEXT, UNDO_QUESTION, changesText, diffRefusedText, fileMark, firstLinesText, moreFilesText, noLinesText, oneLine, patchLines,
  planCardTitle, planMark, planPrompt, priorityText, planPromptSteps, planStep, restoreCaveat, showAllLinesText, stepText, toolStateText,
} from './words.js';

// A card lists this many files; the rest are counted. An open file's diff
// shows this many lines before "Show all".
const CARD_FILES = 50;
const DIFF_LINES = 200;
const MAX_DIFF_LINES = 2000;

// A collapsed reasoning row previews this much of the start of the text,
// so a long run of it does not cost its length at each chunk.
const PREVIEW_CHARS = 4096;

// Rows that count as new messages for the pill (a mode change or a note
// is not something to scroll down for).
const COUNTED = new Set(['user', 'text', 'tool', 'plan', 'plancard', 'status', 'reasoning']);

// A tool call's icon by its state; its words are toolStateText's.
const TOOL_ICONS = { running: '…', approved: '✓', denied: '✕', failed: '!', stopped: '■' };

const STATUS_ICONS = { completed: '✓', aborted: '■', rejected: '✕', error: '!' };

// A render builds at most SLICE_ROWS rows, and stops building after
// SLICE_MS (having built one at least); the rest wait for the next frame.
// Rows already drawn are updated whatever the slice.
export const SLICE_ROWS = 150;
const SLICE_MS = 8;

// The rows kept in the page below the newest; the rows added above them
// at a time; and the slack before rows are dropped again while following
// (so that the page does not drop and add at every row).
export const WINDOW = 400;
export const EARLIER = 200;
const SLACK = 200;

export class Transcript {
  /**
   * @param {HTMLElement} root the scrolling container
   * @param {HTMLButtonElement} pill the "New messages" button (hidden
   *   while following)
   */
  constructor(root, pill, actions = {}) {
    this.root = root;
    this.pill = pill;
    // What a changes card asks of the page (app.js): diff(checkpoint,
    // path), restore(checkpoint) (confirmed), undo(checkpoint),
    // effects(checkpoint) → {files, others}; a plan card asks
    // runPlan(prompt) → the clientId of its copilot:send ('' when it did
    // not go).
    this.actions = actions;
    // The plan cards' ticks, by planKey (every step ticked at first), and
    // the plans run from here (planKey → the clientId of their send):
    // kept while the card is built anew.
    this.ticks = new Map();
    this.ranHere = new Map();
    this.box = el('div', { class: 'rows' });
    root.append(this.box);
    this.convId = null;
    this.generation = 0;
    this.nodes = []; // the row nodes, by row index
    this.versions = [];
    this.blocks = new WeakMap(); // text row node → [{src, node}]
    this.following = true;
    this.unread = 0; // counted rows that arrived below while not following
    this.lastTop = 0; // scrollTop after the last scroll, to tell up from down
    this.seen = 0; // rows the last render was given: those after it are new
    this.conv = null; // what the last render showed, for the next slice
    this.more = 0; // the frame that builds the next slice
    this.from = 0; // the first row kept in the page
    // "Show earlier messages": the first child of the rows while rows
    // before from are not in the page. Reached by scrolling (the
    // observer) or by the keyboard.
    this.earlier = el('button', { type: 'button', class: 'link earlier' });
    this.earlier.addEventListener('click', () => this.showEarlier());
    this.nearTop = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting) && !this.following) this.showEarlier();
    }, { root, rootMargin: '600px 0px 0px 0px' });
    this.nearTop.observe(this.earlier);
    root.addEventListener('scroll', () => this.onScroll(), { passive: true });
    // Whatever changes the rows' height (a row laid out for the first
    // time, an image, a disclosure) or the view's (the Plan banner, the
    // indicator, the keyboard, a rotation) keeps the view at the bottom
    // while following.
    this.sizes = new ResizeObserver(() => {
      if (this.following) this.scrollToEnd();
    });
    this.sizes.observe(root);
    this.sizes.observe(this.box);
    pill.addEventListener('click', () => this.follow());
  }

  /** render shows conv (null: nothing open). */
  render(conv) {
    cancelAnimationFrame(this.more);
    this.more = 0;
    this.conv = conv;
    const id = conv ? conv.id : null;
    const generation = conv ? conv.generation : 0;
    const rows = conv ? conv.rows : [];
    if (id !== this.convId) {
      // Opening a conversation shows its latest turn.
      this.following = true;
      this.unread = 0;
    }
    if (id !== this.convId || generation !== this.generation || rows.length < this.nodes.length) {
      // Another conversation, or a copy replaced after a reset.
      clear(this.box);
      this.nodes = [];
      this.versions = [];
      this.convId = id;
      this.generation = generation;
      this.seen = 0;
      this.from = Math.max(0, rows.length - WINDOW);
    }
    if (this.following && rows.length - this.from > WINDOW + SLACK) {
      // At the bottom, the oldest rows in the page are far above the
      // view: they go, and come back by "Show earlier messages".
      const to = rows.length - WINDOW;
      for (let i = this.from; i < to; i++) {
        this.nodes[i]?.remove();
        delete this.nodes[i];
        delete this.versions[i];
      }
      this.from = to;
    }
    this.box.querySelector(':scope > .empty')?.remove();
    // What arrived since the last render is news while not following,
    // drawn in this slice or a later one (an older row drawn late is not).
    if (!this.following) {
      for (let i = this.seen; i < rows.length; i++) if (COUNTED.has(rows[i].kind)) this.unread++;
    }
    // Rows added above the first in the page must not move what the view
    // shows. The browser's scroll anchoring keeps it, except at the very
    // top, where it keeps the top: there the first row's place is kept
    // here.
    let anchor = null;
    let anchorTop = 0;
    if (!this.following && this.root.scrollTop < 1) {
      for (let i = this.from; i < rows.length && !anchor; i++) anchor = this.nodes[i] || null;
      if (anchor) anchorTop = anchor.getBoundingClientRect().top;
    }
    // From the newest row up: each new node goes before the nearest drawn
    // row below it (next), so rows left for a later slice leave no
    // disorder, only a gap that slice fills.
    const deadline = performance.now() + SLICE_MS;
    let built = 0;
    let waiting = 0;
    let next = null;
    for (let i = rows.length - 1; i >= this.from; i--) {
      const row = rows[i];
      const old = this.nodes[i];
      if (old && this.versions[i] === row.v) {
        next = old;
        continue;
      }
      if (!old && (built >= SLICE_ROWS || (built > 0 && performance.now() > deadline))) {
        waiting++;
        continue;
      }
      const node = this.reuse(old, row) || this.build(row);
      node.dataset.row = String(i);
      if (!old) {
        this.box.insertBefore(node, next);
        built++;
      } else if (old !== node) old.replaceWith(node);
      this.nodes[i] = node;
      this.versions[i] = row.v;
      next = node;
    }
    this.seen = rows.length;
    if (this.from > 0) {
      const text = `Show ${this.from} earlier messages`;
      if (this.earlier.textContent !== text) this.earlier.textContent = text;
      if (this.box.firstChild !== this.earlier) this.box.prepend(this.earlier);
    } else this.earlier.remove();
    if (anchor && anchor.isConnected) {
      const moved = anchor.getBoundingClientRect().top - anchorTop;
      if (Math.abs(moved) >= 1) {
        this.root.scrollTop += moved;
        this.lastTop = this.root.scrollTop;
      }
    }
    // How many rows wait for a later slice, and where the page's rows
    // start (the tests read them).
    this.root.dataset.waiting = String(waiting);
    this.root.dataset.from = String(this.from);
    if (waiting > 0) {
      this.more = requestAnimationFrame(() => {
        this.more = 0;
        this.render(this.conv);
      });
    }
    if (rows.length === 0) {
      this.box.append(el('div', { class: 'empty' },
        el('p', { text: conv ? 'Ask the agent something below.' : 'No conversation is open.' }),
        el('p', { class: 'small', text: 'Plan denies every tool call, so the agent can only describe what it would do; Act lets tools run.' })));
    }
    if (this.following) this.scrollToEnd();
    this.renderPill();
  }

  /**
   * setInset makes room below the rows for px of a sheet drawn over the
   * transcript, so that its end can be read above the sheet.
   */
  setInset(px) {
    const v = px > 0 ? `calc(1rem + ${Math.round(px)}px)` : '';
    if (this.root.style.paddingBottom === v) return;
    this.root.style.paddingBottom = v;
    if (this.following) this.scrollToEnd();
  }

  /**
   * showEarlier adds EARLIER rows above those in the page; the view stays
   * on what it showed.
   */
  showEarlier() {
    if (this.from === 0 || !this.conv) return;
    this.from = Math.max(0, this.from - EARLIER);
    this.render(this.conv);
  }

  /** follow brings the latest into view and keeps it there. */
  follow() {
    this.following = true;
    this.unread = 0;
    this.scrollToEnd();
    this.renderPill();
  }

  // onScroll tells the user's scrolling from the page's: only a move up
  // stops following, and coming back to the bottom follows again.
  onScroll() {
    const top = this.root.scrollTop;
    const up = top < this.lastTop - 1;
    this.lastTop = top;
    const bottom = this.atBottom();
    if (bottom) {
      this.following = true;
      this.unread = 0;
    } else if (up) this.following = false;
    this.renderPill();
  }

  // margin is how near the bottom counts as at it: two lines of the
  // transcript's text, so it follows the user's font size and zoom.
  margin() {
    const line = parseFloat(getComputedStyle(this.box).lineHeight);
    return 2 * (Number.isFinite(line) && line > 0 ? line : 24);
  }

  atBottom() {
    const r = this.root;
    return r.scrollHeight - r.scrollTop - r.clientHeight <= this.margin();
  }

  scrollToEnd() {
    const r = this.root;
    r.scrollTop = r.scrollHeight;
    this.lastTop = r.scrollTop;
  }

  renderPill() {
    const n = this.following ? 0 : this.unread;
    this.pill.hidden = n === 0;
    this.pill.dataset.count = String(n);
    if (n === 0) return;
    const text = `New messages (${n}) ↓`;
    if (this.pill.textContent !== text) this.pill.textContent = text;
  }

  // reuse updates old, the node of the row's last version, in place when
  // it is the same kind of node (what the user opened in it stays open);
  // else it returns null.
  reuse(old, row) {
    if (!old || old.dataset.kind !== row.kind) return null;
    if (row.kind === 'text') return this.updateText(old, row);
    if (row.kind === 'reasoning') return this.updateReasoning(old, row);
    if (row.kind === 'plancard') return this.updatePlanCard(old, row);
    if (row.kind === 'note' && row.changes && old.classList.contains('changes')) return this.updateChanges(old, row);
    if (row.kind === 'note' && row.restored && old.classList.contains('restored')) return this.updateRestored(old, row);
    return null;
  }

  build(row) {
    if (row.kind === 'note' && row.changes) return this.updateChanges(this.buildChanges(row), row);
    if (row.kind === 'note' && row.restored) return this.updateRestored(this.buildRestored(row), row);
    if (row.kind === 'note' && row.lost) return this.buildLost(row);
    switch (row.kind) {
      case 'user':
        return el('div', { class: 'row user', dataset: { kind: 'user', mode: row.mode } },
          el('div', { class: 'who' }, row.from ? `Sent from ${row.from}` : 'You', row.mode === 'plan' ? el('span', { class: 'tag plan', text: 'plan mode' }) : null),
          el('div', { class: 'prompt', text: row.text }));
      case 'text':
        return this.updateText(el('div', { class: 'row text md', dataset: { kind: 'text' } }), row);
      case 'tool':
        return this.buildTool(row);
      case 'reasoning':
        return this.updateReasoning(this.buildReasoning(), row);
      case 'plan':
        return this.buildPlan(row);
      case 'plancard':
        return this.updatePlanCard(this.buildPlanCard(row), row);
      case 'status':
        return el('div', { class: `row status ${row.status}`, dataset: { kind: 'status', status: row.status } },
          el('span', { class: 'icon', 'aria-hidden': 'true', text: STATUS_ICONS[row.status] || '•' }),
          el('div', null,
            el('div', { class: 'status-text', text: row.text }),
            row.detail ? el('div', { class: 'detail', text: row.detail }) : null,
            row.usage ? el('div', { class: 'small', text: row.usage }) : null));
      case 'mode':
        return el('div', { class: `row mode ${row.mode}`, dataset: { kind: 'mode' }, text: row.text });
      case 'note':
      default:
        return el('div', { class: `row note ${row.tone || 'info'}`, dataset: { kind: 'note' }, role: row.tone === 'error' ? 'alert' : null, text: row.text });
    }
  }

  buildTool(row) {
    const head = el('div', { class: 'tool-head' },
      el('span', { class: 'icon', 'aria-hidden': 'true', text: TOOL_ICONS[row.state] || TOOL_ICONS.failed }),
      el('span', { class: 'tool-name', text: row.name }),
      el('code', { class: 'tool-args', text: row.summary }),
      el('span', { class: 'tool-state', text: toolStateText(row.state) }));
    const node = el('div', { class: `row tool ${row.state}`, dataset: { kind: 'tool', state: row.state } }, head);
    // A command of several lines is shown whole: its summary has only
    // the first and "+N lines".
    if (row.command) node.append(el('pre', { class: 'tool-command', text: `$ ${row.command}` }));
    if (row.detail) {
      if (row.state === 'denied') node.append(el('div', { class: 'detail', text: row.detail }));
      else node.append(el('details', null, el('summary', { text: 'output' }), el('pre', { text: row.detail })));
    }
    return node;
  }

  // buildReasoning makes the node of the agent's reasoning: a disclosure,
  // collapsed, that says "Thinking…" while it streams and "Thought" after,
  // beside the start of the text; opened, the whole text. The node is kept
  // while the row grows, so it stays open once opened.
  buildReasoning() {
    const node = el('details', { class: 'row reasoning', dataset: { kind: 'reasoning' } },
      el('summary', null,
        el('span', { class: 'reasoning-label' }),
        el('span', { class: 'reasoning-preview' })),
      el('div', { class: 'reasoning-text' }));
    node.addEventListener('toggle', () => this.fillReasoning(node));
    return node;
  }

  updateReasoning(node, row) {
    node.querySelector('.reasoning-label').textContent = row.done ? 'Thought' : 'Thinking…';
    node.querySelector('.reasoning-preview').textContent = oneLine(row.text.slice(0, PREVIEW_CHARS), 200);
    node.dataset.done = String(!!row.done);
    node.reasoning = row.text;
    this.fillReasoning(node);
    return node;
  }

  // fillReasoning puts the whole text in an open reasoning row (a closed
  // one gets it when opened).
  fillReasoning(node) {
    if (!node.open) return;
    const body = node.querySelector('.reasoning-text');
    if (body.textContent !== node.reasoning) body.textContent = node.reasoning;
  }

  // buildPlan makes the agent's plan: a card with how far it is and a line
  // per step, marked done, in progress or pending.
  buildPlan(row) {
    return el('div', { class: `row agent-plan${row.done ? '' : ' live'}`, dataset: { kind: 'plan' } },
      el('div', { class: 'plan-head' }, el('span', { class: 'plan-title', text: AGENT_PLAN_TITLE }), el('span', { class: 'plan-progress', text: row.text })),
      el('ol', { class: 'plan-steps' }, row.entries.map((e) => {
        const status = ['completed', 'in_progress'].includes(e.status) ? e.status : 'pending';
        const label = { completed: 'done', in_progress: 'in progress', pending: 'pending' }[status];
        const priority = priorityText(e.priority);
        return el('li', { class: `step ${status}`, dataset: { status } },
          el('span', { class: 'step-mark', 'aria-label': label, title: label, text: planMark(status) }),
          el('span', { class: 'step-text', text: e.content.trim() }),
          priority ? el('span', { class: 'step-priority', text: priority }) : null);
      })));
  }

  // ---- the plan card (conversation.State's RowPlan, the window's card) ----

  // buildPlanCard makes the card under a turn whose tool calls Plan
  // denied: the steps the agent wanted to take, a checkbox each (all
  // ticked at first), and Run in Act, which asks the agent for exactly the
  // ticked steps in Act. Once run (from here or anywhere: the prompt in the
  // conversation) it is done and cannot run again.
  buildPlanCard(row) {
    const plan = row.steps.map((s) => planStep(s.tool, s.args));
    const key = this.planKey(row);
    const ticks = this.ticks.get(key) || plan.map(() => true);
    this.ticks.set(key, ticks);
    const run = el('button', { type: 'button', class: 'primary run-plan needs-control' });
    // The card's title is its steps' legend: a screen reader names them
    // with the words the page and the window show (planCardTitle).
    const steps = el('fieldset', { class: 'plan-card-steps' },
      el('legend', { class: 'plan-card-title' }),
      plan.map((p, i) => {
        const box = el('input', { type: 'checkbox' });
        box.checked = ticks[i];
        box.addEventListener('change', () => {
          ticks[i] = box.checked;
          this.refreshRun(node);
        });
        return el('label', { class: 'plan-card-step' }, box, el('span', { text: `${i + 1}. ${stepText(p)}` }));
      }));
    const node = el('div', { class: 'row plan-card', dataset: { kind: 'plancard', id: row.id } },
      steps,
      el('div', { class: 'plan-card-foot' },
        el('p', { class: 'plan-card-hint needs-control', text: PLAN_CARD_HINT }),
        run));
    run.addEventListener('click', () => {
      if (this.ranHere.has(key) || node.dataset.ran === 'true') return;
      const chosen = plan.filter((_, i) => ticks[i]);
      if (chosen.length === 0) return;
      const sent = this.actions.runPlan?.(planPrompt(chosen));
      if (sent) {
        this.ranHere.set(key, sent);
        this.updatePlanCard(node, { ...row, ran: true });
      }
    });
    node.ticks = ticks;
    return node;
  }

  // updatePlanCard shows whether the plan ran: done, its checkboxes and
  // Run in Act disabled.
  updatePlanCard(node, row) {
    const ran = !!row.ran || this.ranHere.has(this.planKey(row));
    node.querySelector('.plan-card-title').textContent = planCardTitle(row.steps.length, ran);
    node.dataset.ran = String(ran);
    // Run, it shows the steps that ran: those its prompt asked for.
    const asked = row.ranPrompt ? new Set(planPromptSteps(row.ranPrompt)) : null;
    node.querySelectorAll('.plan-card-steps input').forEach((box, i) => {
      box.disabled = ran;
      if (asked) box.checked = node.ticks[i] = asked.has(stepText(planStep(row.steps[i].tool, row.steps[i].args)));
    });
    node.querySelector('.plan-card-hint').hidden = ran;
    this.refreshRun(node);
    return node;
  }

  /**
   * planGivenBack: the prompt sent as clientId in conversation convId came
   * back to the user (the relay did not get it, or refused it), so a card
   * it was sent from has not run: it can run again. A card whose prompt
   * is in the conversation (row.ran) stays done. The next render draws
   * the cards anew.
   */
  planGivenBack(convId, clientId) {
    for (const [key, sent] of this.ranHere) {
      if (sent === clientId && key.startsWith(`${convId}\n`)) this.ranHere.delete(key);
    }
    if (convId !== this.convId || !this.conv) return;
    this.conv.rows.forEach((row, i) => {
      if (row.kind === 'plancard' && this.nodes[i]) this.versions[i] = -1;
    });
  }

  // planKey names a plan card of the conversation shown: its id is its
  // first call's, which another agent's conversation may use too.
  planKey(row) {
    return `${this.convId}\n${row.id}`;
  }

  // refreshRun enables Run in Act while the plan has not run and a step is
  // ticked.
  refreshRun(node) {
    const run = node.querySelector('.run-plan');
    const ran = node.dataset.ran === 'true';
    run.textContent = ran ? `✓ ${RAN_IN_ACT}` : RUN_IN_ACT; // the window's button shows the ✓ as its icon
    run.disabled = ran || !node.ticks.some((t) => t);
  }

  // ---- checkpoints (docs/checkpoints.md) ----

  // buildChanges makes a turn's changes card: its summary, a disclosure
  // per file that asks for the file's diff when first opened, and Restore,
  // which asks first (an inline confirmation naming what changes). A
  // viewer's page hides Restore (app.css, body[data-role]).
  buildChanges(row) {
    const ch = row.changes;
    const files = ch.files.slice(0, CARD_FILES);
    const list = el('div', { class: 'card-files' }, files.map((f) => {
      const counts = f.binary ? el('span', { class: 'counts', text: 'binary' })
        : el('span', { class: 'counts' }, el('span', { class: 'add', text: `+${f.additions || 0}` }), ' ', el('span', { class: 'del', text: `−${f.deletions || 0}` }));
      const file = el('details', { class: 'card-file', dataset: { path: f.path, status: f.status, binary: String(!!f.binary) } },
        el('summary', null, el('span', { class: 'mark', text: fileMark(f.status) }), el('code', { class: 'path', text: f.path }), counts),
        el('div', { class: 'file-diff' }));
      file.addEventListener('toggle', () => {
        if (file.open) this.actions.diff?.(ch.checkpoint, f.path);
      });
      return file;
    }));
    const more = ch.files.length - files.length;
    const confirm = el('div', { class: 'confirm', role: 'group', 'aria-label': 'Confirm the restore', hidden: true });
    const restore = el('button', { type: 'button', class: 'restore needs-control', text: RESTORE_BUTTON });
    restore.addEventListener('click', () => this.openConfirm(confirm, ch.checkpoint, restore));
    return el('div', { class: 'row note changes', dataset: { kind: 'note', checkpoint: ch.checkpoint } },
      el('div', { class: 'card-title', text: changesText(ch.files, ch.truncated) }),
      list,
      more > 0 || ch.truncated ? el('div', { class: 'small', text: moreFilesText(more, !!ch.truncated) }) : null,
      el('div', { class: 'card-error', role: 'alert', hidden: true }),
      el('div', { class: 'card-foot' }, restore),
      confirm);
  }

  // openConfirm fills and shows a card's confirmation of a restore.
  openConfirm(box, checkpoint, restore) {
    const { files = [], others = [] } = this.actions.effects?.(checkpoint) || {};
    const cancel = el('button', { type: 'button', text: 'Cancel' });
    const ok = el('button', { type: 'button', class: 'danger', text: 'Restore' });
    const close = () => {
      box.hidden = true;
      restore.hidden = false;
      restore.focus();
    };
    cancel.addEventListener('click', close);
    ok.addEventListener('click', () => {
      box.hidden = true;
      restore.hidden = false;
      this.actions.restore?.(checkpoint);
    });
    clear(box).append(
      el('p', { text: RESTORE_QUESTION }),
      el('ul', { class: 'effects' }, files.map((f) => el('li', null, el('code', { text: f.path }), ` (${f.effect})`))),
      el('p', { class: others.length ? 'caveat warn' : 'caveat', text: restoreCaveat(others) }),
      el('div', { class: 'confirm-buttons' }, cancel, ok));
    box.hidden = false;
    restore.hidden = true;
    cancel.focus();
  }

  // updateChanges shows what the card knows: each open file's diff (or
  // that it loads), a refused diff, a restore on its way.
  updateChanges(node, row) {
    const card = row.card || { patches: {}, loading: {} };
    for (const file of node.querySelectorAll('.card-file')) {
      const path = file.dataset.path;
      const body = file.querySelector('.file-diff');
      // An open file with no diff on its way says so (a closed one holds
      // nothing, for find in page opens a closed file whose text it finds).
      const key = card.loading[path] ? 'loading' : path in card.patches ? `patch:${file.dataset.all || ''}` : file.open ? 'none' : 'closed';
      if (body.dataset.shows === key) continue;
      body.dataset.shows = key;
      clear(body);
      if (key === 'loading') body.append(el('div', { class: 'small', text: DIFF_LOADING }));
      else if (key === 'none') body.append(el('div', { class: 'small', text: NO_DIFF }));
      else if (key !== 'closed') body.append(this.diffOf(file, card.patches[path], node, row));
    }
    const err = node.querySelector('.card-error');
    err.hidden = !card.error;
    err.textContent = card.error ? diffRefusedText(card.error) : '';
    const restore = node.querySelector('.restore');
    restore.disabled = !!card.restoring;
    restore.textContent = card.restoring ? RESTORING_TEXT : RESTORE_BUTTON;
    return node;
  }

  // diffOf draws one file's patch: added lines green, removed red, its
  // first DIFF_LINES lines and "Show all".
  diffOf(file, p, node, row) {
    const lines = patchLines(p.patch);
    if (!lines.length) {
      return el('div', { class: 'small', text: noLinesText(file.dataset.binary === 'true', p.patch) });
    }
    const all = file.dataset.all === 'true';
    const shown = lines.slice(0, all ? MAX_DIFF_LINES : DIFF_LINES);
    const pre = el('pre', { class: 'diff', tabindex: '0' }, shown.map((l) => el('span', { class: { '+': 'ins', '-': 'del', '@': 'hunk' }[l.op] || 'ctx', text: `${l.op === '@' ? '' : `${l.op} `}${l.text}\n` })));
    const out = el('div', null, pre);
    if (lines.length > shown.length && !all) {
      const more = el('button', { type: 'button', class: 'link', text: showAllLinesText(lines.length) });
      more.addEventListener('click', () => {
        file.dataset.all = 'true';
        this.updateChanges(node, row);
      });
      out.append(more);
    } else if (lines.length > shown.length) {
      out.append(el('div', { class: 'small', text: firstLinesText(shown.length, lines.length) }));
    }
    if (p.truncated) out.append(el('div', { class: 'small', text: DIFF_CUT }));
    return out;
  }

  // buildLost makes the note of a prompt the relay did not get: while
  // it is not back in the box, the prompt itself, Put back and Copy.
  buildLost(row) {
    const l = row.lost;
    const node = el('div', { class: `row note lost ${row.tone || 'warning'}`, dataset: { kind: 'note', lost: l.arrived ? 'arrived' : l.back ? 'back' : 'held' }, role: 'status' },
      el('span', { text: row.text }));
    if (l.back || l.arrived) return node;
    const back = el('button', { type: 'button', class: 'put-back', text: 'Put back in the box' });
    back.addEventListener('click', () => this.actions.putBack?.(l.clientId));
    const copy = el('button', { type: 'button', class: 'copy', text: 'Copy' });
    copy.addEventListener('click', () => this.actions.copy?.(l.prompt));
    node.append(el('div', { class: 'prompt', text: l.prompt }), el('div', { class: 'lost-buttons' }, back, copy));
    return node;
  }

  // buildRestored makes a restore's notice: what it did, the files it
  // could not write, and Undo.
  buildRestored(row) {
    const d = row.restored;
    const failed = d.files.filter((f) => f.status === 'failed');
    const undo = el('button', { type: 'button', class: 'undo needs-control', text: 'Undo' });
    const confirm = el('div', { class: 'confirm', hidden: true });
    // Turns that changed files since the restore are undone with it (the
    // folder goes back to what it held before the restore): ask first,
    // naming their files; else undo at once.
    undo.addEventListener('click', () => {
      const files = this.actions.undoDiscards?.(d.undo) || [];
      if (files.length === 0) this.actions.undo?.(d.undo);
      else this.openUndoConfirm(confirm, d.undo, undo, files);
    });
    return el('div', { class: 'row note restored info', dataset: { kind: 'note' } },
      el('span', { text: row.text }),
      failed.length ? el('ul', { class: 'failed' }, failed.map((f) => el('li', { text: `${f.path}: ${f.error || 'could not be written'}` }))) : null,
      undo, confirm);
  }

  // openUndoConfirm fills and shows a restore notice's confirmation of an
  // undo that also takes back files, the turns since the restore's.
  openUndoConfirm(box, undo, button, files) {
    const cancel = el('button', { type: 'button', text: 'Cancel' });
    const ok = el('button', { type: 'button', class: 'danger', text: 'Undo' });
    const close = () => {
      box.hidden = true;
      button.hidden = false;
    };
    cancel.addEventListener('click', () => {
      close();
      button.focus();
    });
    ok.addEventListener('click', () => {
      close();
      this.actions.undo?.(undo);
    });
    clear(box).append(
      el('p', { text: UNDO_QUESTION }),
      el('ul', { class: 'effects' }, files.map((f) => el('li', null, el('code', { text: f.path }), ` (${f.effect})`))),
      el('div', { class: 'confirm-buttons' }, cancel, ok));
    box.hidden = false;
    button.hidden = true;
    cancel.focus();
  }

  updateRestored(node, row) {
    const card = row.card || {};
    const undo = node.querySelector('.undo');
    undo.disabled = !!(card.undone || card.restoring);
    undo.textContent = card.undone ? 'Undone' : card.restoring ? 'Undoing…' : 'Undo';
    return node;
  }

  // updateText renders a text row's markdown into node, keeping the
  // blocks that did not change.
  updateText(node, row) {
    const srcs = splitBlocks(row.text);
    const old = this.blocks.get(node) || [];
    const next = [];
    for (let k = 0; k < srcs.length; k++) {
      if (old[k] && old[k].src === srcs[k]) {
        next.push(old[k]);
        continue;
      }
      const wrap = el('div', { class: 'block' });
      wrap.append(renderBlock(srcs[k]));
      // What scrolls sideways (code, a wide table) is reached by the
      // keyboard too.
      for (const n of wrap.querySelectorAll('pre, .table-wrap')) n.tabIndex = 0;
      if (old[k]) old[k].node.replaceWith(wrap);
      else node.append(wrap);
      next.push({ src: srcs[k], node: wrap });
    }
    for (let k = srcs.length; k < old.length; k++) old[k].node.remove();
    this.blocks.set(node, next);
    node.classList.toggle('streaming', !row.done);
    // Busy while it grows: a screen reader announces the reply once,
    // complete, instead of each piece.
    if (row.done) node.removeAttribute('aria-busy');
    else node.setAttribute('aria-busy', 'true');
    return node;
  }
}
