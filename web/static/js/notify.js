// notify.js: telling the user, with their permission, when a question
// opens or a turn ends while the page is hidden, and counting the
// questions waiting in the tab's title. The Notification API exists only
// in secure contexts (https, or localhost), so on a phone that reaches the
// relay over plain http the page says why it cannot notify.
//
// Notifications are shown by the service worker (sw.js) when it runs:
// Chrome for Android allows no other way, and a tap on one then opens the
// conversation even when the page was closed.
//
// A phone suspends a hidden page, so the relay pushes too (docs/push.md):
// turning notifications on subscribes this browser (PushManager) with the
// relay's VAPID key and hands the subscription to the relay (POST
// push/subscribe, with the token); turning them off unsubscribes at the
// relay and in the browser. A push names the conversation and carries its
// words only when the user asks for them.

import { load, store } from './storage.js';
import { questionNotification, turnNotification } from './words.js';

const BASE_TITLE = 'pilotdesk';

// PREF: 'on' once the user turned notifications on in this page (the
// relay's pushes too), 'off' once turned off; '' before either, when an
// earlier permission still lets the page notify while it is open.
const PREF = 'pilotdesk.notify';
const TEXT = 'pilotdesk.notifyText'; // '1': pushes carry the words

/** keyBytes decodes a base64url VAPID key for applicationServerKey. */
function keyBytes(b64) {
  const s = atob(b64.replace(/-/g, '+').replace(/_/g, '/').padEnd(Math.ceil(b64.length / 4) * 4, '='));
  return Uint8Array.from(s, (c) => c.charCodeAt(0));
}

function sameKey(buf, b64) {
  if (!buf) return false;
  const a = new Uint8Array(buf);
  const b = keyBytes(b64);
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

export class Notifier {
  /**
   * @param {object} n the nodes: button, state (a line explaining it),
   *   text (the checkbox "show the words"), textRow (its label)
   * @param {(conversationId: string) => void} open shows a conversation
   * @param {() => string} token the page's token, for the relay's push endpoints
   */
  constructor(n, open, token) {
    this.n = n;
    this.open = open;
    this.token = token;
    this.worker = null; // the service worker's registration, once ready
    // push: '' (not tried), 'busy', 'on', 'relay-off' (the relay sends
    // none), 'failed' (the browser could not subscribe), 'off'.
    this.push = '';
    this.pushWhy = '';
    n.button.addEventListener('click', () => this.toggle());
    n.text?.addEventListener('change', () => this.setText(n.text.checked));
    if ('serviceWorker' in navigator && window.isSecureContext) {
      navigator.serviceWorker.register('sw.js').then(() => navigator.serviceWorker.ready).then((reg) => {
        this.worker = reg;
        document.body.dataset.worker = 'ready';
        // Turned on earlier: the relay's copy is renewed at each start
        // (its data dir may be new, the browser may have renewed it).
        if (this.pushing) this.subscribe();
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

  /** on: the user allowed notifications and did not turn them off here. */
  get on() {
    return this.supported && Notification.permission === 'granted' && load(PREF) !== 'off';
  }

  /** pushing: the user turned them on here, the relay's pushes too. */
  get pushing() {
    return this.on && load(PREF) === 'on';
  }

  async toggle() {
    if (!this.supported) return;
    if (this.pushing) {
      await this.turnOff();
      return;
    }
    try {
      if (Notification.permission === 'default') await Notification.requestPermission();
    } catch (err) {
      console.warn('pilotdesk: notification permission', err);
    }
    if (Notification.permission === 'granted') {
      store(PREF, 'on');
      await this.subscribe();
    }
    this.render();
  }

  /** authed is fetch of one of the relay's push endpoints with the token. */
  authed(path, body, token = this.token()) {
    const headers = { Authorization: `Bearer ${token}` };
    const init = { headers, cache: 'no-store' };
    if (body) {
      init.method = 'POST';
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    return fetch(new URL(path, new URL('.', location.href)), init);
  }

  /** subscribe subscribes this browser to the relay's pushes. */
  async subscribe() {
    const reg = this.worker;
    if (!reg || !reg.pushManager || !this.token()) return;
    this.setPush('busy');
    try {
      const res = await this.authed('push/key');
      if (res.status === 404) {
        this.setPush('relay-off');
        return;
      }
      if (!res.ok) throw new Error(`the relay answered ${res.status}`);
      const { publicKey } = await res.json();
      let sub = await reg.pushManager.getSubscription();
      if (sub && !sameKey(sub.options?.applicationServerKey, publicKey)) {
        // Made with another relay's key (or this one's before its data
        // dir was new): its pushes would be refused.
        await sub.unsubscribe();
        sub = null;
      }
      if (!sub) sub = await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: keyBytes(publicKey) });
      const saved = await this.authed('push/subscribe', { ...sub.toJSON(), text: load(TEXT) === '1' });
      if (!saved.ok) throw new Error(`the relay refused the subscription (${saved.status})`);
      if (!this.pushing) {
        // Turned off meanwhile.
        await this.turnOff();
        return;
      }
      this.setPush('on');
    } catch (err) {
      console.warn('pilotdesk: push subscription', err);
      this.setPush('failed', err && err.message ? err.message : String(err));
    }
  }

  /** turnOff stops notifications here: the relay's pushes and the page's. */
  async turnOff() {
    const token = this.token(); // before "Forget this device" drops it
    store(PREF, 'off');
    this.setPush('off');
    const sub = await this.worker?.pushManager?.getSubscription().catch(() => null);
    if (!sub) return;
    try {
      if (token) await this.authed('push/unsubscribe', { endpoint: sub.endpoint }, token);
    } catch (err) {
      console.warn('pilotdesk: push unsubscribe', err);
    }
    await sub.unsubscribe().catch((err) => console.warn('pilotdesk: push unsubscribe', err));
    this.setPush('off');
  }

  /** keepOff keeps notifications off after the page's storage was cleared. */
  keepOff() {
    store(PREF, 'off');
    this.render();
  }

  setText(on) {
    store(TEXT, on ? '1' : '');
    if (this.pushing) this.subscribe(); // the relay keeps the choice with the subscription
  }

  setPush(state, why = '') {
    this.push = state;
    this.pushWhy = why;
    document.body.dataset.push = state;
    this.render();
  }

  render() {
    const { button, state, text, textRow } = this.n;
    if (!this.supported) {
      button.hidden = true;
      if (textRow) textRow.hidden = true;
      state.textContent = window.isSecureContext
        ? 'This browser has no notifications.'
        : 'Notifications need https (serve the relay with --tls-cert) or localhost.';
      return;
    }
    const p = Notification.permission;
    const pushing = this.pushing;
    button.hidden = p === 'denied';
    button.textContent = pushing ? 'Turn off notifications'
      : this.on ? 'Also notify me while this page is closed' : 'Turn on notifications';
    if (textRow) textRow.hidden = !pushing;
    if (text) text.checked = load(TEXT) === '1';
    let line = '';
    if (p === 'denied') line = 'Notifications are blocked for this page in the browser.';
    else if (pushing) {
      line = {
        on: 'Notifications are on, also while this page is closed: the relay pushes them.',
        'relay-off': 'Notifications are on while this page is in the background (this relay sends no pushes).',
        failed: `Notifications are on while this page is in the background; the browser could not subscribe to the relay's pushes${this.pushWhy ? ` (${this.pushWhy})` : ''}.`,
      }[this.push] || 'Notifications are on while this page is in the background.';
    } else if (this.on) line = 'Notifications are on while this page is in the background.';
    state.textContent = line;
  }

  /** questionOpened tells about a question of conv (when hidden). */
  questionOpened(conv, req) {
    const [title, body] = questionNotification(conv.title, req.question);
    this.notify(title, body, conv.id, `q-${conv.id}`);
  }

  /**
   * turnEnded tells that conv's turn ended with status (and an error's
   * message) when hidden, in the window's and the relay's pushes' words.
   */
  turnEnded(conv, status, message) {
    const [title, body] = turnNotification(conv.title, status, message);
    this.notify(title, body, conv.id, `t-${conv.id}`);
  }

  notify(title, body, convId, tag) {
    if (!this.on || !document.hidden) return;
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
