// notify.js: telling the user, with their permission, when a question
// opens or a turn ends while the page is hidden, and counting the
// questions waiting in the tab's title. The Notification API exists only
// in secure contexts (https, or localhost), so on a phone that reaches the
// relay over plain http the page says why it cannot notify.
//
// Notifications are shown by the service worker (sw.js) when it runs:
// Chrome for Android allows no other way, and a tap on one then opens the
// conversation even when the page was closed.

const BASE_TITLE = 'pilotdesk';

export class Notifier {
  /**
   * @param {object} n the nodes: button, state (a line explaining it)
   * @param {(conversationId: string) => void} open shows a conversation
   */
  constructor(n, open) {
    this.n = n;
    this.open = open;
    this.worker = null; // the service worker's registration, once ready
    n.button.addEventListener('click', () => this.ask());
    if ('serviceWorker' in navigator && window.isSecureContext) {
      navigator.serviceWorker.register('sw.js').then(() => navigator.serviceWorker.ready).then((reg) => {
        this.worker = reg;
        document.body.dataset.worker = 'ready';
      }, (err) => console.warn('pilotdesk: service worker', err));
      // A tap on a notification while a page is open opens it here.
      navigator.serviceWorker.addEventListener('message', (ev) => {
        if (ev.data && typeof ev.data.open === 'string' && ev.data.open) this.open(ev.data.open);
      });
    }
    this.render();
  }

  get supported() {
    return typeof Notification !== 'undefined' && window.isSecureContext;
  }

  async ask() {
    if (!this.supported) return;
    try {
      await Notification.requestPermission();
    } catch (err) {
      console.warn('pilotdesk: notification permission', err);
    }
    this.render();
  }

  render() {
    const { button, state } = this.n;
    if (!this.supported) {
      button.hidden = true;
      state.textContent = window.isSecureContext
        ? 'This browser has no notifications.'
        : 'Notifications need https (serve the relay with --tls-cert) or localhost.';
      return;
    }
    const p = Notification.permission;
    button.hidden = p !== 'default';
    state.textContent = p === 'granted'
      ? 'Notifications are on while this page is in the background.'
      : p === 'denied' ? 'Notifications are blocked for this page in the browser.' : '';
  }

  /** questionOpened tells about a question of conv (when hidden). */
  questionOpened(conv, req) {
    this.notify(`Question: ${conv.title || 'pilotdesk'}`, req.question || 'The agent is waiting for your answer.', conv.id, `q-${conv.id}`);
  }

  /** turnEnded tells that conv's turn ended with text (when hidden). */
  turnEnded(conv, text) {
    this.notify(conv.title || 'pilotdesk', text, conv.id, `t-${conv.id}`);
  }

  notify(title, body, convId, tag) {
    if (!this.supported || Notification.permission !== 'granted' || !document.hidden) return;
    if (this.worker) {
      this.worker.showNotification(title, { body, tag, icon: 'icon-192.png', data: { conversationId: convId } })
        .catch((err) => console.warn('pilotdesk: notification', err));
      return;
    }
    try {
      const note = new Notification(title, { body, tag });
      note.addEventListener('click', () => {
        window.focus();
        this.open(convId);
        note.close();
      });
    } catch (err) {
      // Some mobile browsers allow notifications only from a service worker.
      console.warn('pilotdesk: notification', err);
    }
  }

  /** setCount shows how many questions wait, in the tab's title. */
  setCount(n) {
    const title = n > 0 ? `(${n}) ${BASE_TITLE}` : BASE_TITLE;
    if (document.title !== title) document.title = title;
  }
}
