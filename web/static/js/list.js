// list.js: the conversations, most recently updated first, with what each
// is doing, and "Load more" when the relay pages the list.

import { el, clear } from './dom.js';
import { ago, entryStatus, entryTitle } from './words.js';

export class ConversationList {
  /**
   * @param {object} n the nodes: list (ul), more (button), fresh (button)
   * @param {object} actions open(id), more(), fresh()
   */
  constructor(n, actions) {
    this.n = n;
    n.more.addEventListener('click', () => actions.more());
    n.fresh.addEventListener('click', () => actions.fresh());
    n.list.addEventListener('click', (ev) => {
      const item = ev.target.closest('[data-id]');
      if (item) actions.open(item.dataset.id);
    });
  }

  /**
   * render shows entries ({id, title, streaming, waiting, mode,
   * updatedAt, agent, folder}), marks current, and offers more when
   * hasMore. The second line says, as the window's sidebar does, the
   * folder, what the conversation is doing and the agent it runs on:
   * "api · just now · OpenCode (ACP)".
   */
  render(entries, current, hasMore) {
    const items = entries.map((e) => {
      const sub = entryStatus(e.waiting, 0, e.streaming, Date.now()) || (e.mode === 'plan' ? 'plan mode' : when(e.updatedAt));
      const tone = e.waiting ? 'waiting' : e.streaming ? 'busy' : e.mode === 'plan' ? 'plan' : '';
      return el('li', null,
        el('button', { type: 'button', class: e.id === current ? 'conv current' : 'conv', dataset: { id: e.id }, 'aria-current': e.id === current ? 'true' : null },
          el('span', { class: 'conv-title', text: entryTitle(e.title) }),
          el('span', { class: 'conv-sub' },
            e.folder ? el('span', { class: 'conv-folder', text: sub || e.agent ? `${e.folder} · ` : e.folder }) : null,
            el('span', { class: `conv-state ${tone}`, text: sub }),
            e.agent ? el('span', { class: 'conv-agent', text: sub ? ` · ${e.agent}` : e.agent }) : null)));
    });
    if (items.length === 0) items.push(el('li', { class: 'small empty-list', text: 'No conversations yet.' }));
    clear(this.n.list).append(...items);
    this.n.more.hidden = !hasMore;
  }
}

// when says how long ago a time (ms) was, in the words of the window and
// the terminal (words.js's ago).
function when(ms) {
  return ms ? ago(ms, Date.now()) : '';
}
