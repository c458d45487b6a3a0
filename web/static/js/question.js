// question.js: the agent's question, with the window's rules. It cannot
// be dismissed: no close button, Escape and a tap outside only say what to
// do. Choices are numbered, Reject is always there, free text is offered
// where the question allows it, nothing is picked by default, and an empty
// answer is asked again with a hint instead of being sent. The rest of the
// page is inert while it is open, so focus and taps stay in the dialog.
//
// The turn that led to the question stays readable: the transcript is
// padded by the sheet's height so that its end sits just above it, and
// "Read the conversation" folds the sheet to one line, the transcript
// (only it) scrollable behind. After an answer the focus goes back where
// the user was, not to the prompt box (which would raise a phone's
// keyboard). A viewer sees the question read-only, with why it cannot
// answer, and the page is not blocked.

import { el, clear } from './dom.js';
import { inline } from './markdown.js';
import {
  ANSWER_OR_PICK, ANSWER_REQUIRED, APPROVAL_HINT, APPROVAL_KEYS, TEXT_KEYS, VIEWER_CANNOT_ANSWER, choiceHint, choiceKeys, countdownText, nothingSelectedHint, questionTitle,
  typedChoiceHint, visible,
} from './words.js';

/** kindOf names the dialog a request needs: approval, choice, text or ask. */
export function kindOf(req) {
  return ['approval', 'choice', 'text'].includes(req.inputType) ? req.inputType : 'ask';
}

/** isRejection: "r" or "/reject" typed as the whole answer rejects. */
export function isRejection(text) {
  const t = text.trim();
  return t === 'r' || t === '/reject';
}

export class QuestionDialog {
  /**
   * @param {HTMLElement} overlay the dialog's container (hidden when closed)
   * @param {HTMLElement} background what becomes inert while it is open
   * @param {{answer: Function, reject: Function}} actions answer(convId,
   *   requestId, text, {wasFreeform, index}) and reject(convId, requestId)
   */
  constructor(overlay, background, actions, { inset = () => {} } = {}) {
    this.overlay = overlay;
    this.background = background;
    this.actions = actions;
    this.inset = inset; // inset(px): the sheet's height over the transcript
    this.folded = false;
    this.viewer = false;
    this.returnTo = null; // what had the focus when the sheet opened
    this.sheetSize = new ResizeObserver(() => {
      const card = this.overlay.firstElementChild;
      this.inset(this.open && card ? card.getBoundingClientRect().height : 0);
    });
    this.key = null; // conversationId/requestId shown
    this.convId = null;
    this.req = null;
    this.kind = null;
    this.choices = [];
    this.highlight = -1;
    this.typed = '';
    this.input = null;
    this.hintNode = null;
    this.countdown = null;
    this.deadline = 0;
    overlay.addEventListener('pointerdown', (ev) => {
      if (ev.target === overlay) {
        // A tap outside: the question stays.
        ev.preventDefault();
        this.nudge('The agent is waiting: answer or reject the question. It stays open until you do.');
      }
    });
    // Capture, so that Escape never reaches anything that could close.
    document.addEventListener('keydown', (ev) => this.onKey(ev), true);
  }

  get open() {
    return this.key !== null;
  }

  /**
   * show opens, keeps or closes the dialog for conv's open question; it
   * is called on every render.
   */
  show(conv, { viewer = false } = {}) {
    const p = conv && conv.pending;
    if (!p || p.answering) {
      this.close();
      return;
    }
    const key = `${conv.id}/${p.request.requestId}/${viewer ? 'viewer' : ''}`;
    if (key !== this.key) {
      this.viewer = viewer;
      this.build(conv, p);
      this.key = key;
    }
    this.deadline = p.deadline;
    if (p.hint) this.setHint(p.hint);
    this.tick(Date.now());
  }

  close() {
    if (!this.open) return;
    this.key = null;
    this.req = null;
    this.sheetSize.disconnect();
    this.inset(0);
    this.setFolded(false);
    this.overlay.hidden = true;
    this.background.inert = false;
    const hadFocus = this.overlay.contains(document.activeElement);
    clear(this.overlay);
    // Back where the user was (a button of the transcript, the list), not
    // the prompt box, which would raise a phone's keyboard.
    const back = this.returnTo;
    this.returnTo = null;
    if (hadFocus && back && back.isConnected && !back.disabled && !back.closest('[inert]')) back.focus({ preventScroll: true });
  }

  // setFolded folds the sheet to one line with the transcript scrollable
  // behind it (and nothing else of the page), or unfolds it.
  setFolded(folded) {
    this.folded = folded;
    this.overlay.classList.toggle('folded', folded);
    const main = this.background.querySelector('.main');
    const drawer = this.background.querySelector('#drawer');
    if (folded) {
      this.drawerInert = drawer ? drawer.inert : false;
      this.background.inert = false;
      if (drawer) drawer.inert = true;
      for (const part of main ? main.children : []) part.inert = !part.classList.contains('stage');
    } else {
      for (const part of main ? main.children : []) part.inert = false;
      if (drawer && this.drawerInert !== undefined) drawer.inert = this.drawerInert;
      this.drawerInert = undefined;
      if (this.open && !this.viewer) this.background.inert = true;
    }
    const fold = this.overlay.querySelector('.q-fold');
    if (fold) {
      fold.textContent = folded ? 'Show the question' : 'Read the conversation';
      fold.setAttribute('aria-expanded', String(!folded));
    }
  }

  build(conv, p) {
    const req = p.request;
    if (!this.open) {
      const active = document.activeElement;
      this.returnTo = active && active !== document.body && !this.overlay.contains(active) ? active : null;
    }
    this.setFolded(false);
    this.key = `${conv.id}/${req.requestId}`;
    this.convId = conv.id;
    this.req = req;
    this.kind = kindOf(req);
    this.choices = [];
    this.highlight = -1;
    this.typed = '';
    this.input = null;
    const choices = Array.isArray(req.choices) ? req.choices.map(String) : [];

    const body = el('div', { class: 'q-body' });
    switch (this.viewer ? 'viewer' : this.kind) {
      case 'viewer':
        if (choices.length) body.append(el('ul', { class: 'q-readonly' }, choices.map((c, i) => el('li', { text: `${i + 1}) ${c}` }))));
        body.append(el('p', { class: 'q-viewer', text: VIEWER_CANNOT_ANSWER }));
        break;
      case 'approval':
        this.buildApproval(body, choices);
        break;
      case 'choice':
        this.buildChoices(body, choices);
        if (req.allowFreeform) this.buildFreeform(body, 'Or type your own answer…');
        this.buildReject(body);
        break;
      case 'text':
        this.buildFreeform(body, 'Your answer');
        this.buildReject(body);
        body.append(el('p', { class: 'keys', text: TEXT_KEYS }));
        break;
      default:
        if (choices.length) this.buildChoices(body, choices);
        if (req.allowFreeform || choices.length === 0) this.buildFreeform(body, choices.length ? 'Or type your own answer…' : 'Your answer');
        this.buildReject(body);
    }
    this.hintNode = el('p', { class: 'hint', role: 'alert', hidden: true });
    this.countdown = el('p', { class: 'countdown' });
    const queued = Number(req.queued) > 0
      ? el('p', { class: 'small', text: `${req.queued} more ${req.queued === 1 ? 'question waits' : 'questions wait'} after this one.` })
      : null;
    const title = el('h2', { id: 'q-title', text: questionTitle(this.kind) });
    const fold = el('button', { type: 'button', class: 'q-fold link', 'aria-controls': 'q-fold-part', 'aria-expanded': 'true', text: 'Read the conversation', onclick: () => this.setFolded(!this.folded) });
    const card = el('div', { class: 'q-card', role: 'dialog', 'aria-modal': this.viewer ? 'false' : 'true', 'aria-labelledby': 'q-title', 'aria-describedby': 'q-question', tabindex: '-1', dataset: { kind: this.kind, viewer: String(this.viewer) } },
      el('div', { class: 'q-head' }, el('span', { class: 'q-icon', 'aria-hidden': 'true', text: '?' }), title, fold),
      // Inline markdown (`code`, **bold**, links), as the transcript shows
      // it: a question names commands and files in backticks.
      inline(el('p', { id: 'q-question', class: 'q-question md' }), req.question ?? ''),
      el('div', { id: 'q-fold-part', class: 'q-fold-part' }, body, this.hintNode, queued, this.countdown));
    clear(this.overlay).append(card);
    this.overlay.hidden = false;
    this.overlay.classList.toggle('viewer', this.viewer);
    // A viewer's sheet blocks nothing: it can only read.
    this.background.inert = !this.viewer;
    this.sheetSize.disconnect();
    this.sheetSize.observe(card);
    if (this.viewer) return;
    if (this.input && (this.kind === 'text' || choices.length === 0)) this.input.focus();
    else card.focus({ preventScroll: true });
  }

  buildApproval(body, choices) {
    const [approve, reject] = choices.length >= 2 ? choices.map(visible) : ['Approve', 'Reject'];
    body.append(el('div', { class: 'q-pair' },
      el('button', { type: 'button', class: 'primary', dataset: { answer: 'approve' }, onclick: () => this.approve() }, el('kbd', { text: 'a' }), ` ${approve}`),
      el('button', { type: 'button', class: 'danger', dataset: { answer: 'reject' }, onclick: () => this.reject() }, el('kbd', { text: 'r' }), ` ${reject}`)));
    body.append(el('p', { class: 'keys', text: APPROVAL_KEYS }));
  }

  buildChoices(body, choices) {
    const list = el('div', { class: 'q-choices' });
    choices.forEach((c, i) => {
      const b = el('button', { type: 'button', class: 'choice', dataset: { choice: String(i) }, onclick: () => this.pick(i) },
        el('span', { class: 'num', text: `${i + 1})` }), ` ${visible(c)}`);
      this.choices.push(b);
      list.append(b);
    });
    body.append(list);
    const n = choices.length;
    body.append(el('p', { class: 'keys', text: choiceKeys(n) }));
  }

  buildFreeform(body, placeholder) {
    this.input = el('textarea', { class: 'q-input', rows: '2', placeholder, 'aria-label': 'Your answer', enterkeyhint: 'send' });
    const form = el('form', { class: 'q-free', onsubmit: (ev) => { ev.preventDefault(); this.submitText(); } },
      this.input, el('button', { type: 'submit', class: 'primary', text: 'Send' }));
    body.append(form);
  }

  buildReject(body) {
    body.append(el('button', { type: 'button', class: 'danger q-reject', dataset: { answer: 'reject' }, onclick: () => this.reject() },
      el('kbd', { text: 'r' }), ' Reject'));
  }

  setHint(text) {
    if (!this.hintNode) return;
    this.hintNode.textContent = text;
    this.hintNode.hidden = !text;
  }

  // nudge shows a hint and shakes the card a little, so a tap that did
  // nothing is seen to do nothing on purpose.
  nudge(text) {
    this.setHint(text);
    const card = this.overlay.firstElementChild;
    if (!card) return;
    card.classList.remove('nudge');
    void card.offsetWidth; // restart the animation
    card.classList.add('nudge');
  }

  /** tick updates the countdown to the relay's deadline. */
  tick(now) {
    if (!this.countdown) return;
    if (!this.deadline) {
      // The relay sent no expiresAt: this page does not guess a timeout.
      this.countdown.hidden = true;
      return;
    }
    this.countdown.hidden = false;
    this.countdown.textContent = countdownText(this.deadline, now);
  }

  // ---- answers ----

  approve() {
    this.actions.answer(this.convId, this.req.requestId, 'approve', { wasFreeform: false });
  }

  reject() {
    this.actions.reject(this.convId, this.req.requestId);
  }

  pick(i) {
    const choices = this.req.choices || [];
    if (i < 0 || i >= choices.length) return;
    this.actions.answer(this.convId, this.req.requestId, String(choices[i]), { wasFreeform: false, index: i });
  }

  submitText() {
    const text = this.input ? this.input.value.trim() : '';
    if (this.kind === 'text' && isRejection(text)) {
      this.reject();
      return;
    }
    if (!text) {
      this.setHint(this.kind === 'text' ? ANSWER_REQUIRED : ANSWER_OR_PICK);
      this.input?.focus();
      return;
    }
    this.actions.answer(this.convId, this.req.requestId, text, { wasFreeform: true });
  }

  // ---- keys ----

  rangeHint() {
    return choiceHint(this.choices.length);
  }

  onKey(ev) {
    // A viewer's sheet takes no keys, nor does a folded one (the user reads).
    if (!this.open || this.viewer || this.folded) return;
    const inField = ev.target === this.input;
    if (ev.key === 'Escape') {
      ev.preventDefault();
      ev.stopPropagation();
      this.nudge('Escape does not close the question: the agent is waiting for your answer. Answer it, or reject it.');
      return;
    }
    if (inField) {
      if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
        ev.preventDefault();
        this.submitText();
      }
      return;
    }
    if (ev.ctrlKey || ev.metaKey || ev.altKey || ev.key === 'Tab' || ev.key === 'Shift') return;
    if (ev.target instanceof HTMLButtonElement && (ev.key === 'Enter' || ev.key === ' ') && this.highlight < 0) {
      return; // the focused button's own click
    }
    ev.preventDefault();
    if (this.kind === 'approval') {
      const k = ev.key.toLowerCase();
      if (k === 'a' || k === '1') this.approve();
      else if (k === 'r' || k === '2') this.reject();
      else this.setHint(APPROVAL_HINT);
      return;
    }
    if (this.kind === 'text') {
      this.input?.focus();
      return;
    }
    this.choiceKey(ev.key);
  }

  choiceKey(key) {
    const n = this.choices.length;
    if (key === 'r' || key === 'R') {
      this.reject();
    } else if (/^[0-9]$/.test(key) && n > 0) {
      if (n <= 9) {
        const i = Number(key) - 1;
        if (i < 0 || i >= n) this.setHint(this.rangeHint());
        else this.pick(i);
        return;
      }
      this.typed += key;
      const v = Number(this.typed);
      if (v >= 1 && v <= n) {
        this.setHighlight(v - 1);
        this.setHint(typedChoiceHint(this.typed));
      } else {
        this.typed = '';
        this.setHint(this.rangeHint());
      }
    } else if (key === 'ArrowDown' && n > 0) {
      this.setHighlight((this.highlight + 1) % n);
    } else if (key === 'ArrowUp' && n > 0) {
      this.setHighlight(this.highlight < 0 ? n - 1 : (this.highlight - 1 + n) % n);
    } else if (key === 'Enter') {
      if (this.highlight >= 0) this.pick(this.highlight);
      else this.setHint(nothingSelectedHint(n));
    } else if (key === 'Backspace') {
      this.typed = '';
    } else if (this.input && key.length === 1) {
      // Typing a word: it is the free-text answer.
      this.input.focus();
      this.input.value += key;
    } else {
      this.setHint(this.rangeHint());
    }
  }

  setHighlight(i) {
    this.highlight = i;
    this.choices.forEach((b, j) => b.classList.toggle('selected', j === i));
    this.choices[i]?.focus({ preventScroll: false });
  }
}
