// indicator.js: the line above the composer that says what the agent is
// doing: thinking, working, or waiting for an answer (with the relay's
// countdown when it sent one).

import { THINKING_TEXT, waitingText } from './words.js';

export class Indicator {
  /** @param {HTMLElement} node */
  constructor(node) {
    this.node = node;
  }

  /** render shows conv's state at time now (ms). */
  render(conv, now) {
    const n = this.node;
    let text = '';
    let tone = '';
    if (conv && conv.pending) {
      tone = 'waiting';
      if (conv.pending.answering) text = 'Sending your answer…';
      else text = waitingText(conv.pending.deadline, now);
    } else if (conv && conv.streaming) {
      tone = 'busy';
      text = conv.thinking ? THINKING_TEXT : 'Working…';
    }
    n.hidden = !text;
    n.dataset.tone = tone;
    if (n.textContent !== text) n.textContent = text;
  }
}
