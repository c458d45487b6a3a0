// app.js: the page's state and what the user can do with it. It owns the
// connection, one Conversation per conversation it follows, and the list
// of the relay's conversations; the views (list, transcript, indicator,
// composer, question, notifier) only render what it hands them. The drawer
// (drawer.js) and the new conversation's folder picker (folders.js) keep
// their own state; entries.js merges the list it shows, status.js words
// the connection's state, route.js reads and writes the address, login.js
// shows the login box.

import { $, el, clear } from './dom.js';
import { Connection, UNSENT_KEY } from './connection.js';
import { Conversation } from './conversation.js';
import { ConversationList } from './list.js';
import { Transcript } from './transcript.js';
import { Indicator } from './indicator.js';
import { Composer } from './composer.js';
import { QuestionDialog } from './question.js';
import { Notifier } from './notify.js';
import { uuid } from './ids.js';
import { Identity } from './identity.js';
import { forgetDevice, saveToken, takeToken, tokenCheck, tokenFromInput } from './token.js';
import { PLAN_BUSY, PLAN_PROMPT_HEAD, RESTORE_BUSY, deleteText, entryTitle, relayErrorText, totalsText, usageText } from './words.js';
import { load, store } from './storage.js';
import { linkedId, linkOf } from './route.js';
import { Drawer } from './drawer.js';
import { FolderPicker } from './folders.js';
import { folderOf, sortedEntries, waitingIds } from './entries.js';
import { renderState, sendWhy } from './status.js';
import { showLogin } from './login.js';

const PAGE = 50; // conversations per copilot:list page

const CURRENT_KEY = 'pilotdesk.current';

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
    this.lastPrompt = new Map(); // id → the prompt last sent, to restore when an older relay refuses one (naming no clientId)
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
      undoDiscards: (undo) => this.current && this.convs.get(this.current)?.undoDiscards(undo),
      putBack: (clientId) => this.putBack(clientId),
      copy: (text) => this.copyText(text),
      runPlan: (prompt) => this.runPlan(prompt),
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

    this.drawer = new Drawer();
    this.folders = new FolderPicker(() => this.scheduleRender());
    $('retry').addEventListener('click', () => this.conn?.retryNow());
    // The back button: #/ is the list, #/c/<id> a conversation.
    window.addEventListener('popstate', () => this.route());
    // Back online, or back on the page: try the relay at once instead of
    // waiting out the backoff (a phone suspends a background tab's socket).
    window.addEventListener('online', () => this.conn?.retryNow());
    $('forget').addEventListener('click', () => this.forget());
    $('delete-conv').addEventListener('click', () => this.deleteCurrent());
    $('login-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      this.login($('login-token').value);
    });
    $('elsewhere').addEventListener('click', (ev) => {
      const b = ev.target.closest('[data-id]');
      if (b) this.open(b.dataset.id);
    });
    document.addEventListener('keydown', (ev) => {
      if (ev.key === 'Escape' && !this.question.open) this.drawer.toggle(false);
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
    // The prompts an earlier page of this tab sent and had not seen
    // echoed: the connection asks the relay about them; they are this
    // page's own, to give back if the relay never got them.
    for (const u of this.conn.restored) this.conv(u.conversationId).markSending(u.prompt, u.clientId);
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
        showLogin('missing');
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
        this.folders.offered(d);
        break;
      case 'reset': {
        const c = this.convs.get(d.conversationId);
        if (c) c.resetCopy();
        break;
      }
      case 'lost':
        this.lostSend(d.conversationId, d.clientId);
        break;
      default: {
        if (type === 'copilot:subscribed' && typeof d.serverTime === 'string') {
          const t = Date.parse(d.serverTime);
          if (!Number.isNaN(t)) this.clock.skew = t - Date.now();
        }
        const id = d.conversationId;
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
        if (ch.arrived !== null) this.arrivedLate(c, ch.arrived);
        if (ch.listing) this.upsertEntry(null, c);
        // A refused prompt goes back to the user, under the relay's error:
        // the one the error names; an older relay names none, and the
        // conversation's last prompt goes back.
        if (type === 'error' && d.type === 'copilot:send') {
          if (typeof d.clientId === 'string' && d.clientId !== '') this.giveBack(id, d.clientId, true);
          else this.restorePrompt(id);
        }
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
      this.drawer.listPushed = false;
      if (id !== this.current) this.open(id, { history: 'none' });
      else this.drawer.toggle(false, { history: 'none' });
    } else if (location.hash === '#/') {
      this.drawer.toggle(true, { history: 'none' });
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
    this.drawer.listPushed = false;
    const c = this.conv(id);
    if (this.conn && this.conn.live && (c.onRelay || this.entries.has(id) || id === this.linked)) this.conn.follow(id);
    if (!keepDrawer) this.drawer.toggle(false, { history: 'none' });
    this.scheduleRender();
  }

  newConversation(opts) {
    const id = uuid();
    const c = this.conv(id);
    c.updatedAt = Date.now();
    this.open(id, opts);
    if (!opts) $('prompt').focus();
  }

  // send sends text as a prompt of the open conversation, in mode (the
  // conversation's when not given); it returns the clientId it went with,
  // '' when it did not go.
  send(text, mode) {
    const c = this.current && this.convs.get(this.current);
    if (!c) return '';
    if (!this.conn.live) {
      c.note('error', 'Not connected to the relay: the prompt was not sent.');
      this.scheduleRender();
      return '';
    }
    this.conn.follow(c.id);
    // The clientId tells its echo, and whether the relay got it should
    // the socket drop now (docs/protocol.md, Lost sends).
    const data = { conversationId: c.id, prompt: text, mode: mode ?? c.mode, clientId: uuid() };
    const ws = this.chosenWorkspace(c);
    if (ws) data.workspace = ws;
    this.conn.sendPrompt(data);
    this.lastPrompt.set(c.id, text);
    // A send in another mode switches the conversation to it (its
    // copilot:mode_changed is this page's own).
    c.markSending(text, data.clientId, data.mode !== c.mode ? data.mode : '');
    c.updatedAt = Date.now();
    // The user's own prompt, the reply and how it ends are what they
    // want to see next, wherever they had scrolled.
    this.transcript.follow();
    return data.clientId;
  }

  // runPlan sends a plan card's prompt (its ticked steps) in Act, as the
  // window's Run in Act does: the send carries the mode its turn runs in,
  // and the relay switches the conversation to Act with it (its
  // copilot:mode_changed, this page's own, moves the fold's mode, so the
  // fold keeps its mode until then). It returns the send's clientId, ''
  // when the prompt did not go.
  runPlan(prompt) {
    const c = this.current && this.convs.get(this.current);
    if (!c) return '';
    if (c.streaming) {
      c.note('warning', PLAN_BUSY);
      this.scheduleRender();
      return '';
    }
    const sent = this.send(prompt, 'act');
    this.scheduleRender();
    return sent;
  }

  // ---- workspaces (docs/workspaces.md) ----

  // isNew: c is not on the relay yet, so its first prompt fixes its folder.
  isNew(c) {
    return !!c && !c.onRelay && c.rows.length === 0 && !this.entries.has(c.id);
  }

  // unfixed: c's next prompt fixes its folder: it is new, or the relay,
  // which has all of it (synced), names no folder for it and holds no
  // prompt of it, and none sent from here is on its way. A first prompt
  // the relay refused or never got leaves it so: sent again, it goes to
  // the folder chosen, not the relay's default.
  unfixed(c) {
    if (this.isNew(c)) return true;
    return !!c && c.synced && !c.streaming && !c.workspace && !this.entries.get(c.id)?.workspace
      && c.sentHere.length === 0 && !c.rows.some((r) => r.kind === 'user');
  }

  // chosenWorkspace is what c's first prompt names: the folder chosen and
  // whether in a worktree (null: the relay's default folder, as is).
  chosenWorkspace(c) {
    return this.unfixed(c) ? this.folders.chosen() : null;
  }

  // lostSend gives back a prompt the relay did not get (the socket
  // dropped before it read it).
  lostSend(id, clientId) {
    this.giveBack(id, clientId, false);
  }

  // giveBack gives back the prompt sent as clientId, which the relay did
  // not get or (refused) refused: into the prompt box when it shows that
  // conversation and is empty, else in a note, to put back or copy, so
  // that nothing typed is overwritten and nothing is lost. It is never
  // sent again from here: the user decides. A plan card it was sent from
  // has not run, and can run again.
  giveBack(id, clientId, refused) {
    const c = this.convs.get(id);
    if (!c) return;
    const input = $('prompt');
    const back = id === this.current && !input.value.trim();
    const text = refused ? c.refused(clientId, back) : c.lost(clientId, back);
    if (text === null) return;
    if (back) {
      input.value = text;
      this.composer.fit();
    }
    if (text.startsWith(`${PLAN_PROMPT_HEAD}\n`)) this.transcript.planGivenBack(id, clientId);
    if (id === this.current) this.transcript.follow();
  }

  // putBack puts a lost prompt's text in the prompt box: after what the
  // box holds, so that nothing in it is lost either.
  putBack(clientId) {
    const c = this.current && this.convs.get(this.current);
    const row = c && c.lostHere.get(clientId);
    if (!row) return;
    const input = $('prompt');
    input.value = input.value.trim() ? `${input.value.replace(/\s+$/, '')}\n\n${row.lost.prompt}` : row.lost.prompt;
    this.composer.fit();
    c.putBack(clientId);
    input.focus();
    this.scheduleRender();
  }

  async copyText(text) {
    try {
      await navigator.clipboard.writeText(text);
      this.toast('Copied.');
    } catch {
      // No clipboard (plain http on a phone): the note shows the text to
      // select by hand.
      this.toast('This browser did not let the page copy: select the text in the note.');
    }
  }

  // arrivedLate: the echo of a prompt given back as lost came after all;
  // the box is emptied of it if it holds it as it was given back.
  arrivedLate(c, text) {
    const input = $('prompt');
    if (c.id === this.current && input.value === text) {
      input.value = '';
      this.composer.fit();
    }
  }

  // restorePrompt puts the conversation's last prompt back into an empty
  // box: an older relay's refusal names no send.
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
      c.note('warning', RESTORE_BUSY);
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
      showLogin('missing');
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
    showLogin(reason);
  }

  // deleteCurrent deletes the open conversation on the relay after asking,
  // in the words the window and the terminal ask with; the relay's
  // copilot:deleted then takes it out of the page (deleted). No front end
  // could delete a conversation before.
  deleteCurrent() {
    const c = this.current ? this.convs.get(this.current) : null;
    if (!c || this.isNew(c)) return;
    // The list entry first: the watch keeps it as of the last turn
    // (whether the worktree holds ignored files), the subscription's as
    // of when it began.
    const ws = this.entries.get(c.id)?.workspace || c.workspace || null;
    if (!window.confirm(deleteText(c.title, ws))) return;
    if (this.conn.send('copilot:delete', { conversationId: c.id })) this.drawer.toggle(false);
    else this.toast('Not deleted: the relay cannot be reached now.');
  }

  forget() {
    if (!window.confirm("Forget this device? The page will need the relay's link (or its token) again.")) return;
    this.notifier.turnOff(); // the relay is told with the token it had
    forgetDevice();
    // The tab's prompts waiting for their echo too (a token the relay
    // refused keeps them, for the page to ask about with the next one).
    store(UNSENT_KEY, '', { session: true });
    this.notifier.keepOff();
    this.token = '';
    this.conn.stop();
    this.convs.clear();
    this.entries.clear();
    this.current = null;
    this.drawer.toggle(false);
    showLogin('forgotten');
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
    return waitingIds(this.convs, this.entries, (id) => this.conn?.following(id));
  }

  // sortedEntries is the list to show, most recently updated first.
  sortedEntries() {
    return sortedEntries(this.entries, this.convs, this.current);
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
    this.composer.render(c, live, { viewer, why: sendWhy(c, live, viewer, this.state) });
    // A question of the history is asked once the replay is in: until
    // then a later event may answer it.
    this.question.show(c && c.synced ? c : null, { viewer });
    this.folders.render(!viewer && this.unfixed(c));
    this.renderFolderLabel(c);
    $('delete-conv').hidden = !c || this.isNew(c);
    $('usage').textContent = c ? [usageText(c.usage, c.turn, Date.now()), totalsText(c.usage)].filter(Boolean).join('  ·  ') : '';
    this.list.render(this.sortedEntries(), this.current, !!this.nextCursor);
    this.renderElsewhere();
    renderState(this.state, this.stateInfo);
  }

  // renderFolderLabel names, under the title, the folder the conversation
  // works in (and a worktree's branch), as the window's title does; the
  // whole folder where the agent runs on hover.
  // Before its first prompt a new conversation names the folder chosen
  // ("api · new worktree").
  renderFolderLabel(c) {
    let ws = (c && (c.workspace || this.entries.get(c.id)?.workspace)) || null;
    if (!ws && this.unfixed(c)) ws = this.folders.pending();
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

  tick() {
    const c = this.current ? this.convs.get(this.current) : null;
    if (c && c.pending && c.pending.deadline) {
      const now = Date.now();
      this.indicator.render(c, now);
      this.question.tick(now);
    }
  }
}
