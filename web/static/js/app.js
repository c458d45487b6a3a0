// app.js: the page's state and what the user can do with it. It owns the
// connection, one Conversation per conversation it follows, and the list
// of the relay's conversations; the views (list, transcript, indicator,
// composer, question, notifier) only render what it hands them.

import { $, el, clear } from './dom.js';
import { Connection } from './connection.js';
import { Conversation } from './conversation.js';
import { ConversationList } from './list.js';
import { Transcript } from './transcript.js';
import { Indicator } from './indicator.js';
import { Composer } from './composer.js';
import { QuestionDialog } from './question.js';
import { Notifier } from './notify.js';
import { uuid } from './ids.js';
import { Identity } from './identity.js';
import { forgetDevice, saveToken, takeToken, tokenFromInput } from './token.js';
import { entryTitle, folderLabel, relayErrorText, totalsText, usageText } from './words.js';

const PAGE = 50; // conversations per copilot:list page

// folderOf names a workspace of the relay's (a list entry's, a
// subscription's) in short: "api", "api · pilotdesk/1a2b3c4d"; '' for none.
function folderOf(ws) {
  if (!ws || typeof ws !== 'object' || typeof ws.path !== 'string' || !ws.path) return '';
  return folderLabel(ws.path, typeof ws.branch === 'string' ? ws.branch : '', ws.isolation === 'worktree');
}
const CURRENT_KEY = 'pilotdesk.current';

// A conversation's link is #/c/<conversationId>; #/ is the list. The token
// is never part of it: it comes once, in the first link's fragment.
const LINK = /^#\/c\/(.+)$/;

/** linkedId returns the conversation the address names, or ''. */
function linkedId() {
  const m = LINK.exec(location.hash);
  if (!m) return '';
  try {
    return decodeURIComponent(m[1]);
  } catch {
    return '';
  }
}

function linkOf(id) {
  return `#/c/${encodeURIComponent(id)}`;
}

/**
 * tokenCheck asks the relay whether it would let token in (GET token:
 * {valid, required}); null when it cannot tell (no answer, an older
 * relay).
 */
async function tokenCheck(token) {
  try {
    const res = await fetch(new URL('token', new URL('.', location.href)), {
      cache: 'no-store', headers: token ? { Authorization: `Bearer ${token}` } : {},
    });
    if (!res.ok) return null;
    const t = await res.json();
    return typeof t.valid === 'boolean' ? t : null;
  } catch {
    return null;
  }
}

export class App {
  constructor() {
    this.token = takeToken();
    this.clock = { skew: 0 };
    this.identity = new Identity(this.token);
    this.convs = new Map(); // id → Conversation
    this.entries = new Map(); // id → the relay's list entry
    this.nextCursor = '';
    this.listRequests = []; // 'first' | 'more', in the order sent
    this.listedOnce = false;
    // A link names the conversation to open; else the one last open here.
    this.linked = linkedId();
    this.current = this.linked || load(CURRENT_KEY);
    this.role = 'owner'; // the relay says otherwise in copilot:conversations
    this.listPushed = false; // the drawer's #/ entry was pushed by this page
    this.lastPrompt = new Map(); // id → the prompt last sent, to restore when refused
    this.workspaces = null; // the relay's copilot:workspaces answer
    this.state = 'connecting';
    this.stateInfo = {};
    this.frame = 0;

    this.list = new ConversationList({ list: $('conv-list'), more: $('more'), fresh: $('new-conv') }, {
      open: (id) => this.open(id),
      more: () => this.requestList('more'),
      fresh: () => this.newConversation(),
    });
    this.transcript = new Transcript($('transcript'), $('new-below'), {
      diff: (checkpoint, path) => this.askDiff(checkpoint, path),
      restore: (checkpoint) => this.restore(checkpoint),
      undo: (checkpoint) => this.restore(checkpoint),
      effects: (checkpoint) => this.restoreEffects(checkpoint),
    });
    this.indicator = new Indicator($('indicator'));
    this.composer = new Composer(
      { form: $('composer'), input: $('prompt'), send: $('send'), plan: $('mode-plan'), act: $('mode-act'), banner: $('plan-banner'), why: $('send-why') },
      { send: (text) => this.send(text), stop: () => this.stop(), setMode: (m) => this.setMode(m) });
    this.question = new QuestionDialog($('question'), $('app'), {
      answer: (c, r, text, o) => this.answer(c, r, text, o),
      reject: (c, r) => this.reject(c, r),
    }, { inset: (px) => this.transcript.setInset(px) });
    this.notifier = new Notifier({ button: $('notify'), state: $('notify-state'), text: $('notify-text'), textRow: $('notify-text-row') },
      (id) => this.open(id), () => this.token);

    $('menu').addEventListener('click', () => this.toggleDrawer(undefined, { push: true }));
    $('scrim').addEventListener('click', () => this.toggleDrawer(false));
    $('retry').addEventListener('click', () => this.conn?.retryNow());
    // The back button: #/ is the list, #/c/<id> a conversation.
    window.addEventListener('popstate', () => this.route());
    // Back online, or back on the page: try the relay at once instead of
    // waiting out the backoff (a phone suspends a background tab's socket).
    window.addEventListener('online', () => this.conn?.retryNow());
    $('forget').addEventListener('click', () => this.forget());
    $('folder').addEventListener('change', () => {
      this.renderFolder();
      this.scheduleRender(); // the folder under the title
    });
    $('worktree').addEventListener('change', () => this.scheduleRender());
    $('login-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      this.login($('login-token').value);
    });
    $('elsewhere').addEventListener('click', (ev) => {
      const b = ev.target.closest('[data-id]');
      if (b) this.open(b.dataset.id);
    });
    document.addEventListener('keydown', (ev) => {
      if (ev.key === 'Escape' && !this.question.open) this.toggleDrawer(false);
    });
    document.addEventListener('visibilitychange', () => {
      if (document.hidden) return;
      this.conn?.retryNow();
      this.notifier.render();
      // Back on the page: a fresh first page of the list (not a poll: it
      // follows the user's coming back).
      this.requestList('first');
      this.render();
    });
    setInterval(() => this.tick(), 1000);
    $('drawer').inert = !wide.matches;
    wide.addEventListener('change', () => this.toggleDrawer(false, { history: 'none' }));
  }

  start() {
    // A new connection starts from nothing: its subscriptions replay each
    // conversation from the start, which must not land on an old copy.
    this.convs.clear();
    this.entries.clear();
    this.nextCursor = '';
    this.listedOnce = false;
    const url = new URL('ws', new URL('.', location.href));
    url.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
    this.conn = new Connection({
      url: url.href,
      token: this.token,
      onMessage: (m) => this.onMessage(m),
      onState: (s, info) => this.onState(s, info),
    });
    this.render();
    if (this.token) {
      this.conn.start();
      return;
    }
    // No token: ask the relay first whether it needs one (GET token,
    // docs/push.md): the page asks for it at once, without a socket the
    // relay would refuse; a relay without one (--insecure-no-auth) is
    // connected to.
    const conn = this.conn;
    tokenCheck('').then((t) => t !== null && !t.valid)
      .then((needed) => {
        if (conn !== this.conn || conn.stopped) return;
        if (!needed) {
          conn.start();
          return;
        }
        this.state = 'refused';
        this.stateInfo = { reason: 'missing' };
        document.body.dataset.state = 'refused';
        this.showLogin('missing');
        this.render();
      });
  }

  // ---- the relay ----

  onState(state, info = {}) {
    this.state = state;
    this.stateInfo = info;
    document.body.dataset.state = state;
    document.body.dataset.connects = String(this.conn.connects);
    document.body.dataset.attempts = String(this.conn.attempts);
    if (state === 'live') {
      this.listRequests = [];
      $('login').hidden = true;
      this.requestList('first');
      // The folders a new conversation may work in (docs/workspaces.md).
      this.conn.send('copilot:workspaces', {});
      if (this.current && this.convs.has(this.current)) this.conn.follow(this.current);
    }
    if (state === 'refused') this.refused(info.reason);
    this.scheduleRender();
  }

  onMessage({ type, data: d }) {
    switch (type) {
      case 'copilot:conversations':
        this.listed(d);
        break;
      case 'copilot:conversation':
        if (d.deleted) this.deleted(d.conversationId);
        else this.upsertEntry(d);
        break;
      case 'copilot:deleted':
        this.deleted(d.conversationId);
        break;
      case 'copilot:workspaces':
        this.workspaces = { default: String(d.default ?? ''), recent: Array.isArray(d.recent) ? d.recent : [], roots: Array.isArray(d.roots) ? d.roots : [] };
        this.folderOptions();
        break;
      case 'reset': {
        const c = this.convs.get(d.conversationId);
        if (c) c.resetCopy();
        break;
      }
      default: {
        if (type === 'copilot:subscribed' && typeof d.serverTime === 'string') {
          const t = Date.parse(d.serverTime);
          if (!Number.isNaN(t)) this.clock.skew = t - Date.now();
        }
        const id = d.conversationId;
        if (type === 'error' && d.type === 'copilot:send' && id) this.restorePrompt(id);
        const c = typeof id === 'string' ? this.conv(id) : null;
        if (!c) {
          if (type === 'error') this.toast(relayErrorText(d));
          break;
        }
        const live = c.synced;
        const ch = c.apply(type, d);
        if (live && ch.opened) this.notifier.questionOpened(c, ch.opened);
        // The turn that led to a question is what the user reads to answer.
        if (ch.opened && c.id === this.current) this.transcript.follow();
        if (live && ch.ended) this.notifier.turnEnded(c, ch.ended, d.message);
        if (ch.listing) this.upsertEntry(null, c);
      }
    }
    this.notifier.setCount(this.waitingIds().length);
    this.scheduleRender();
  }

  // conv returns the Conversation of id, made on first use.
  conv(id) {
    let c = this.convs.get(id);
    if (!c) {
      c = new Conversation(id, this.clock, this.identity);
      const e = this.entries.get(id);
      if (e) c.listed(e);
      this.convs.set(id, c);
    }
    return c;
  }

  requestList(kind) {
    if (!this.conn || !this.conn.live) return;
    if (kind === 'more' && !this.nextCursor) return;
    if (this.listRequests.includes(kind)) return;
    const data = { limit: PAGE, watch: true };
    if (kind === 'more') data.cursor = this.nextCursor;
    if (this.conn.send('copilot:list', data)) this.listRequests.push(kind);
  }

  listed(d) {
    // Only a viewer's or a controller's list names a role; the owner's none.
    this.role = ['viewer', 'controller'].includes(d.role) ? d.role : 'owner';
    document.body.dataset.role = this.role;
    const kind = this.listRequests.shift() || 'first';
    if (kind === 'first') this.entries = new Map();
    for (const e of Array.isArray(d.conversations) ? d.conversations : []) this.upsertEntry(e);
    this.nextCursor = typeof d.nextCursor === 'string' ? d.nextCursor : '';
    if (!this.listedOnce) {
      this.listedOnce = true;
      this.pickFirst();
    }
  }

  // upsertEntry records a list entry from the relay (info), or the entry of
  // a followed conversation (c), and follows conversations that are busy
  // so that their questions reach the title and the notifications.
  upsertEntry(info, c) {
    if (info) {
      this.entries.set(info.conversationId, info);
      const known = this.convs.get(info.conversationId);
      if (known) known.listed(info);
      if ((info.streaming || info.waitingInput) && this.conn.live) this.follow(info.conversationId);
    } else if (c) {
      const e = this.entries.get(c.id);
      if (e) Object.assign(e, { title: c.title, streaming: c.streaming, mode: c.mode, waitingInput: !!c.pending });
    }
  }

  follow(id) {
    this.conv(id);
    this.conn.follow(id);
  }

  deleted(id) {
    this.entries.delete(id);
    this.convs.delete(id);
    this.conn.forget(id);
    if (this.current === id) {
      this.current = null;
      this.toast('This conversation was deleted.');
      this.pickFirst();
    }
  }

  // pickFirst opens a conversation when none is: one waiting for an answer,
  // else the last one opened here, else the most recent, else a new one.
  pickFirst() {
    if (this.current && (this.current === this.linked || this.entries.has(this.current) || this.convs.has(this.current))) {
      this.open(this.current, { keepDrawer: true });
      return;
    }
    const entries = this.sortedEntries();
    const pick = entries.find((e) => e.waiting) || entries[0];
    if (pick) this.open(pick.id, { keepDrawer: true });
    else this.newConversation({ keepDrawer: true });
  }

  // ---- what the user does ----

  /** route follows the address after the back or forward button. */
  route() {
    const id = linkedId();
    if (id) {
      this.listPushed = false;
      if (id !== this.current) this.open(id, { history: 'none' });
      else this.toggleDrawer(false, { history: 'none' });
    } else if (location.hash === '#/') {
      this.toggleDrawer(true, { history: 'none' });
    }
  }

  /**
   * open shows a conversation. history: 'push' (a new entry, so that back
   * returns to the list: the user chose it), 'replace' (the page chose
   * it), 'none' (the address says it already).
   */
  open(id, { keepDrawer = false, history: how = keepDrawer ? 'replace' : 'push' } = {}) {
    this.current = id;
    store(CURRENT_KEY, id);
    if (how !== 'none' && location.hash !== linkOf(id)) {
      // From the list that this page pushed (#/), the conversation takes
      // the list's place after it: back from it returns to the list.
      if (how === 'push') history.pushState(null, '', linkOf(id));
      else history.replaceState(null, '', linkOf(id));
    }
    this.listPushed = false;
    const c = this.conv(id);
    if (this.conn && this.conn.live && (c.onRelay || this.entries.has(id) || id === this.linked)) this.conn.follow(id);
    if (!keepDrawer) this.toggleDrawer(false, { history: 'none' });
    this.scheduleRender();
  }

  newConversation(opts) {
    const id = uuid();
    const c = this.conv(id);
    c.updatedAt = Date.now();
    this.open(id, opts);
    if (!opts) $('prompt').focus();
  }

  send(text) {
    const c = this.current && this.convs.get(this.current);
    if (!c) return false;
    if (!this.conn.live) {
      c.note('error', 'Not connected to the relay: the prompt was not sent.');
      this.scheduleRender();
      return false;
    }
    this.conn.follow(c.id);
    const data = { conversationId: c.id, prompt: text, mode: c.mode };
    const ws = this.chosenWorkspace(c);
    if (ws) data.workspace = ws;
    this.conn.send('copilot:send', data);
    this.lastPrompt.set(c.id, text);
    c.markSending(text);
    c.updatedAt = Date.now();
    // The user's own prompt, the reply and how it ends are what they
    // want to see next, wherever they had scrolled.
    this.transcript.follow();
    return true;
  }

  // ---- workspaces (docs/workspaces.md) ----

  // isNew: c is not on the relay yet, so its first prompt fixes its folder.
  isNew(c) {
    return !!c && !c.onRelay && c.rows.length === 0 && !this.entries.has(c.id);
  }

  // folderOptions offers the relay's default folder and its recent ones.
  folderOptions() {
    const sel = $('folder');
    const ws = this.workspaces;
    const was = sel.value;
    const opts = [el('option', { value: '', text: ws.default ? `Default: ${ws.default}` : "The relay's default folder" })];
    for (const r of ws.recent) {
      if (!r || typeof r.path !== 'string' || r.path === ws.default) continue;
      opts.push(el('option', { value: r.path, dataset: { git: String(!!r.git) }, text: r.branch ? `${r.path} (${r.branch})` : r.path }));
    }
    clear(sel).append(...opts);
    if ([...sel.options].some((o) => o.value === was)) sel.value = was;
    this.renderFolder();
  }

  // renderFolder shows the worktree checkbox for a folder in a git repository.
  renderFolder() {
    const sel = $('folder');
    const opt = sel.selectedOptions[0];
    let git = opt?.dataset.git === 'true';
    if (opt && opt.value === '' && this.workspaces) git = this.workspaces.recent.some((r) => r.path === this.workspaces.default && r.git);
    $('worktree-label').hidden = !git;
    if (!git) $('worktree').checked = false;
  }

  // chosenWorkspace is what c's first prompt names: the folder chosen and
  // whether in a worktree (null: the relay's default folder, as is).
  chosenWorkspace(c) {
    if (!this.isNew(c) || $('new-folder').hidden) return null;
    const path = $('folder').value || (this.workspaces?.default ?? '');
    const worktree = $('worktree').checked;
    if (!path || (!$('folder').value && !worktree)) return null;
    return worktree ? { path, isolation: 'worktree' } : { path };
  }

  restorePrompt(id) {
    const text = this.lastPrompt.get(id);
    const input = $('prompt');
    if (text && id === this.current && !input.value) {
      input.value = text;
      this.composer.fit();
    }
  }

  stop() {
    const c = this.current && this.convs.get(this.current);
    if (c && !this.conn.send('copilot:abort', { conversationId: c.id })) {
      c.note('error', 'Not connected to the relay: Stop was not sent.');
      this.scheduleRender();
    }
  }

  setMode(mode) {
    const c = this.current && this.convs.get(this.current);
    if (!c || c.mode === mode) return;
    if (c.rows.length === 0 && !c.streaming) {
      // Not on the relay yet: the first copilot:send carries the mode.
      c.mode = mode;
    } else if (!this.conn.send('copilot:set_mode', { conversationId: c.id, mode })) {
      c.note('error', 'Not connected to the relay: the mode was not changed.');
    } else {
      c.markModeSent(mode);
    }
    this.scheduleRender();
  }

  answer(convId, requestId, text, { wasFreeform, index }) {
    const c = this.convs.get(convId);
    if (!c) return;
    c.markAnswering(requestId, text, false);
    this.transcript.follow();
    const data = { conversationId: convId, requestId, answer: text, wasFreeform: !!wasFreeform };
    if (Number.isInteger(index)) data.index = index;
    if (!this.conn.send('copilot:user_input_response', data)) {
      c.answerFailed(requestId, 'Not connected to the relay: the answer was not sent. Try again once the page is connected.');
    }
    this.scheduleRender();
  }

  reject(convId, requestId) {
    const c = this.convs.get(convId);
    if (!c) return;
    c.markAnswering(requestId, '', true);
    this.transcript.follow();
    if (!this.conn.send('copilot:user_input_response', { conversationId: convId, requestId, answer: 'reject', rejected: true })) {
      c.answerFailed(requestId, 'Not connected to the relay: the rejection was not sent. Try again once the page is connected.');
    }
    this.scheduleRender();
  }

  // ---- checkpoints (docs/checkpoints.md) ----

  askDiff(checkpoint, path) {
    const c = this.current && this.convs.get(this.current);
    if (!c || !c.askDiff(checkpoint, path)) return;
    if (!this.conn.send('copilot:diff', { conversationId: c.id, checkpoint, path })) {
      c.apply('error', { type: 'copilot:diff', conversationId: c.id, message: 'not connected to the relay' });
    }
    this.scheduleRender();
  }

  restore(checkpoint) {
    const c = this.current && this.convs.get(this.current);
    if (!c) return;
    if (c.streaming) {
      c.note('warning', 'A turn is running: stop it or wait for its end, then restore.');
    } else if (this.conn.send('copilot:restore', { conversationId: c.id, checkpoint })) {
      c.markRestoring(checkpoint);
    } else {
      c.note('error', 'Not connected to the relay: nothing was restored.');
    }
    this.scheduleRender();
  }

  // restoreEffects is what a restore of the open conversation to
  // checkpoint changes, and the other conversations in the same folder
  // without a worktree (the restore undoes their changes too).
  restoreEffects(checkpoint) {
    const c = this.current && this.convs.get(this.current);
    if (!c) return { files: [], others: [] };
    const ws = this.entries.get(c.id)?.workspace;
    const others = [];
    if (ws && ws.isolation !== 'worktree') {
      for (const [id, e] of this.entries) {
        if (id !== c.id && e.workspace && e.workspace.dir === ws.dir && e.workspace.isolation !== 'worktree') others.push(entryTitle(e.title));
      }
    }
    return { files: c.restoreEffects(checkpoint), others: others.sort() };
  }

  /**
   * refused: the relay does not take the token. A token it no longer
   * knows (revoked, expired: closed with 4003, or refused and GET token
   * says it is not valid) is forgotten, so that a reload asks for a new one
   * instead of trying the dead one again.
   */
  async refused(reason) {
    if (!this.token) {
      this.showLogin('missing');
      return;
    }
    let dead = reason === 'revoked';
    if (!dead && reason === 'token') {
      const t = await tokenCheck(this.token); // null: the relay went away meanwhile
      dead = t !== null && !t.valid;
    }
    if (dead && this.state === 'refused') {
      forgetDevice();
      this.token = '';
      document.body.dataset.token = 'forgotten';
    }
    this.showLogin(reason);
  }

  forget() {
    if (!window.confirm("Forget this device? The page will need the relay's link (or its token) again.")) return;
    this.notifier.turnOff(); // the relay is told with the token it had
    forgetDevice();
    this.notifier.keepOff();
    this.token = '';
    this.conn.stop();
    this.convs.clear();
    this.entries.clear();
    this.current = null;
    this.toggleDrawer(false);
    this.showLogin('forgotten');
    this.render();
  }

  login(text) {
    const token = tokenFromInput(text);
    if (!token) return;
    saveToken(token);
    this.token = token;
    $('login').hidden = true;
    if (this.conn) this.conn.stop();
    this.start();
  }

  showLogin(reason) {
    const why = {
      token: 'The relay is up but refused this page: the token is wrong or was revoked.',
      revoked: "This device's token was revoked or expired; ask for a new one.",
      forgotten: 'This device is forgotten: the token is no longer stored here.',
      missing: 'This page needs the token of the relay that served it.',
    }[reason] || '';
    $('login-why').textContent = why;
    $('login').hidden = false;
    if (reason !== 'token') $('login-token').focus();
  }

  /**
   * toggleDrawer opens or closes the list. push: an opening the user
   * asked for gets its own entry (#/), so that back closes it; history
   * 'none': the address changed already (the back button).
   */
  toggleDrawer(open, { push = false, history: how = '' } = {}) {
    const app = $('app');
    const was = app.classList.contains('drawer-open');
    const on = open === undefined ? !was : open;
    app.classList.toggle('drawer-open', on);
    $('menu').setAttribute('aria-expanded', String(on));
    $('scrim').hidden = !on;
    // Closed, the drawer is out of the Tab order and of what a screen
    // reader reads (on a wide screen it is a sidebar, always there).
    $('drawer').inert = !on && !wide.matches;
    if (how === 'none' || on === was) return;
    if (on && push) {
      history.pushState(null, '', '#/');
      this.listPushed = true;
    } else if (!on && this.listPushed && location.hash === '#/') {
      this.listPushed = false;
      history.back();
    }
  }

  toast(text) {
    const t = $('toast');
    t.textContent = text;
    t.hidden = false;
    clearTimeout(this.toastTimer);
    this.toastTimer = setTimeout(() => { t.hidden = true; }, 6000);
  }

  // ---- rendering ----

  // waitingIds lists the conversations with a question open.
  waitingIds() {
    const ids = new Set();
    for (const [id, c] of this.convs) if (c.pending && !c.pending.answering) ids.add(id);
    for (const [id, e] of this.entries) if (e.waitingInput && !this.conn?.following(id)) ids.add(id);
    return [...ids];
  }

  sortedEntries() {
    const out = new Map();
    for (const [id, e] of this.entries) {
      out.set(id, {
        id, title: e.title, streaming: !!e.streaming, mode: e.mode, waiting: !!e.waitingInput,
        updatedAt: Date.parse(e.updatedAt) || 0, agent: typeof e.agent === 'string' ? e.agent : '',
        folder: folderOf(e.workspace),
      });
    }
    for (const [id, c] of this.convs) {
      // A conversation made here shows once it has rows, or while it is open.
      if (!out.has(id) && c.rows.length === 0 && id !== this.current) continue;
      const prev = out.get(id) || {};
      out.set(id, {
        id, title: c.title || prev.title, streaming: c.synced ? c.streaming : prev.streaming,
        mode: c.mode, waiting: c.synced ? !!c.pending : prev.waiting, updatedAt: Math.max(c.updatedAt || 0, prev.updatedAt || 0),
        agent: prev.agent || c.agent, folder: prev.folder || folderOf(c.workspace),
      });
    }
    return [...out.values()].sort((a, b) => b.updatedAt - a.updatedAt);
  }

  scheduleRender() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.render();
    });
  }

  render() {
    const c = this.current ? this.convs.get(this.current) : null;
    const live = !!(this.conn && this.conn.live);
    $('title').textContent = c ? entryTitle(c.title) : 'pilotdesk';
    this.transcript.render(c);
    $('transcript').classList.toggle('paused', !!(c && c.pending));
    this.indicator.render(c, Date.now());
    const viewer = this.role === 'viewer';
    this.composer.render(c, live, { viewer, why: this.sendWhy(c, live, viewer) });
    // A question of the history is asked once the replay is in: until
    // then a later event may answer it.
    this.question.show(c && c.synced ? c : null, { viewer });
    $('new-folder').hidden = viewer || !this.workspaces || !this.isNew(c);
    this.renderFolderLabel(c);
    $('usage').textContent = c ? [usageText(c.usage, c.turn, Date.now()), totalsText(c.usage)].filter(Boolean).join('  ·  ') : '';
    this.list.render(this.sortedEntries(), this.current, !!this.nextCursor);
    this.renderElsewhere();
    this.renderState();
  }

  // renderFolderLabel names, under the title, the folder the conversation
  // works in (and a worktree's branch), as the window's title does; the
  // whole folder where the agent runs on hover.
  // Before its first prompt a new conversation names the folder chosen
  // ("api · new worktree").
  renderFolderLabel(c) {
    let ws = (c && (c.workspace || this.entries.get(c.id)?.workspace)) || null;
    if (!ws && this.isNew(c) && !$('new-folder').hidden) {
      const path = $('folder').value || (this.workspaces?.default ?? '');
      if (path) ws = { path, isolation: $('worktree').checked ? 'worktree' : 'none' };
    }
    const label = $('folder-label');
    label.textContent = folderOf(ws);
    label.title = ws ? String(ws.dir || ws.path || '') : '';
    label.hidden = !label.textContent;
  }

  // renderElsewhere points at questions waiting in other conversations.
  renderElsewhere() {
    const others = this.waitingIds().filter((id) => id !== this.current);
    const box = $('elsewhere');
    box.hidden = others.length === 0;
    const badge = $('menu-badge');
    badge.hidden = others.length === 0;
    badge.textContent = String(others.length);
    if (!others.length) return;
    const c = this.convs.get(others[0]);
    const title = (c && c.title) || this.entries.get(others[0])?.title || 'another conversation';
    clear(box).append(
      el('span', { text: others.length === 1 ? `A question waits in “${title}”.` : `${others.length} questions wait in other conversations.` }),
      el('button', { type: 'button', dataset: { id: others[0] }, text: 'Open' }));
  }

  // sendWhy says in words why Send is off ('' when it is on).
  sendWhy(c, live, viewer) {
    if (viewer) return 'This device is a viewer: it follows conversations but cannot send, answer or change the mode. A controller or the owner can.';
    if (!c) return 'No conversation is open.';
    if (live) return '';
    switch (this.state) {
      case 'refused': return 'The relay refused this page: Send comes back once it is connected again.';
      case 'closed': return 'Not connected to the relay.';
      default: return 'Not connected to the relay: reconnecting, Send comes back once it is connected.';
    }
  }

  renderState() {
    $('retry').hidden = this.state !== 'reconnecting';
    const s = $('conn');
    const words = {
      connecting: 'connecting…',
      live: 'live',
      reconnecting: `reconnecting${this.stateInfo.inMs ? ` in ${Math.max(1, Math.round(this.stateInfo.inMs / 1000))} s` : ''}…`,
      refused: 'refused',
      closed: 'offline',
    };
    if (this.state === 'reconnecting' && this.stateInfo.failures >= MOVED_AFTER) {
      // The relay keeps its port across restarts; one that has not answered
      // for this long may have had to take another (the old one was taken).
      words.reconnecting = `no relay answers at ${location.host}: if pilotdesk restarted on another port, ` +
        'open its new link (Connect a device… in its window) on this device';
    }
    s.textContent = words[this.state] || this.state;
    s.dataset.state = this.state;
    document.body.dataset.retryIn = String(this.state === 'reconnecting' && this.stateInfo.inMs ? this.stateInfo.inMs : 0);
  }

  tick() {
    const c = this.current ? this.convs.get(this.current) : null;
    if (c && c.pending && c.pending.deadline) {
      const now = Date.now();
      this.indicator.render(c, now);
      this.question.tick(now);
    }
  }
}

// wide is when the drawer is a sidebar (app.css's breakpoint).
const wide = window.matchMedia('(min-width: 860px)');

// MOVED_AFTER is how many failed reconnections (half a minute of the
// backoff) make the status say what to do if the relay moved.
const MOVED_AFTER = 6;

function load(key) {
  try {
    return localStorage.getItem(key);
  } catch {
    return null;
  }
}

function store(key, value) {
  try {
    localStorage.setItem(key, value);
  } catch {
    // not kept across reloads
  }
}
