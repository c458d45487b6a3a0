// composer.js: the prompt box with Send (Stop while a turn runs), the
// Plan/Act toggle, and the amber banner that says Plan is on.

export class Composer {
  /**
   * @param {object} n the nodes: form, input, send, plan, act, banner
   * @param {object} actions send(text) → true when sent; stop(); setMode(mode)
   */
  constructor(n, actions) {
    this.n = n;
    this.actions = actions;
    this.streaming = false;
    n.form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      this.submit();
    });
    // On a touch screen the keyboard has no Shift+Enter: Enter adds a line
    // there and the Send button sends.
    this.touch = window.matchMedia('(pointer: coarse)');
    n.input.enterKeyHint = this.touch.matches ? 'enter' : 'send';
    n.input.addEventListener('keydown', (ev) => {
      // Enter sends, Shift+Enter adds a line, as in the window.
      if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing && !this.touch.matches) {
        ev.preventDefault();
        this.submit();
      }
    });
    n.input.addEventListener('input', () => this.fit());
    n.plan.addEventListener('click', () => actions.setMode('plan'));
    n.act.addEventListener('click', () => actions.setMode('act'));
  }

  submit() {
    if (this.streaming) {
      this.actions.stop();
      return;
    }
    const text = this.n.input.value;
    if (!text.trim()) {
      this.n.input.focus();
      return;
    }
    if (this.actions.send(text)) {
      this.n.input.value = '';
      this.fit();
    }
  }

  // fit grows the box with its text, up to a third of the screen.
  fit() {
    const i = this.n.input;
    i.style.height = 'auto';
    i.style.height = `${Math.min(i.scrollHeight + 2, Math.max(120, window.innerHeight / 3))}px`;
  }

  /**
   * render shows conv's mode and whether a turn runs; live: connected;
   * viewer: this device may only read (no composer at all); why: why Send
   * is off, in words ('' when it is on).
   */
  render(conv, live, { viewer = false, why = '' } = {}) {
    const n = this.n;
    n.form.hidden = viewer;
    n.why.hidden = !why;
    if (n.why.textContent !== why) n.why.textContent = why;
    const mode = conv ? conv.mode : 'act';
    this.streaming = !!(conv && conv.streaming);
    n.plan.setAttribute('aria-pressed', String(mode === 'plan'));
    n.act.setAttribute('aria-pressed', String(mode === 'act'));
    n.banner.hidden = mode !== 'plan';
    n.send.textContent = this.streaming ? 'Stop' : 'Send';
    n.send.classList.toggle('danger', this.streaming);
    n.send.classList.toggle('primary', !this.streaming);
    n.send.disabled = !live || !conv || viewer;
    n.send.title = why;
    n.plan.disabled = n.act.disabled = !conv;
  }
}
