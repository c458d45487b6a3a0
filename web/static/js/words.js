// words.js: how the page words what happened, the same words as the window
// and the terminal client (conversation/text.go and conversation/usage.go
// in the Go code): turn endings, tool summaries, usage and quotas.

export const REJECTED_TEXT = 'Rejected. Agent response cancelled.';
const TOOL_SUMMARY_MAX = 100;
// The argument keys that say most about a tool call, in the order they
// are looked for: a shell command, a file (filePath: opencode's tools), a
// URL, a search.
const TOOL_KEYS = ['command', 'path', 'file_path', 'filePath', 'file', 'url', 'pattern', 'query'];

/** oneLine returns the first non-blank line of s, cut to max characters. */
export function oneLine(s, max) {
  for (const raw of String(s ?? '').split('\n')) {
    const line = raw.trim();
    if (!line) continue;
    const chars = Array.from(line);
    if (chars.length > max) return chars.slice(0, max - 1).join('').trim() + '…';
    return line;
  }
  return '';
}

/** titleFrom makes a conversation's title from its first prompt. */
export function titleFrom(prompt) {
  return oneLine(prompt, 48) || 'Untitled';
}

// INVISIBLE matches what visible spells out: format characters (bidi
// controls, zero-width spaces and joiners, U+FEFF…) and control characters
// other than a newline or a tab.
const INVISIBLE = /[\p{Cf}\p{Cc}]/gu;

/**
 * visible shows the characters a reader cannot see as what they are,
 * "\u202Eexe.txt" as "⟨U+202E⟩exe.txt", so that a tool's arguments, a
 * file name or a question's choice cannot hide or reverse what it says:
 * the rule of conversation.Visible in the Go code.
 */
export function visible(s) {
  return String(s ?? '').replace(INVISIBLE, (c) => {
    if (c === '\n' || c === '\t') return c;
    return `⟨U+${c.codePointAt(0).toString(16).toUpperCase().padStart(4, '0')}⟩`;
  });
}

/**
 * summaryLine is s on one line of at most TOOL_SUMMARY_MAX characters: its
 * first non-blank line, then " +N lines" when N more non-blank lines
 * follow (conversation.summaryLine in the Go code).
 */
function summaryLine(s) {
  s = visible(s);
  const more = s.split('\n').filter((l) => l.trim() !== '').length - 1;
  if (more <= 0) return oneLine(s, TOOL_SUMMARY_MAX);
  const mark = more === 1 ? ' +1 line' : ` +${more} lines`;
  return oneLine(s, TOOL_SUMMARY_MAX - mark.length) + mark;
}

/**
 * commandLine is a command given as its argv (Codex's exec calls) as a
 * person would type it: a shell's -c or -lc script alone, else the words
 * joined, quoted where a shell would need it (conversation.commandLine).
 */
function commandLine(argv) {
  if (argv.length === 3 && (argv[1] === '-c' || argv[1] === '-lc')
    && ['sh', 'bash', 'zsh', 'dash'].includes(argv[0].slice(argv[0].lastIndexOf('/') + 1))) {
    return argv[2];
  }
  return argv.map((w) => (w !== '' && /^[A-Za-z0-9\-_./=:,+@%]+$/.test(w) ? w : `'${w.replaceAll("'", "'\\''")}'`)).join(' ');
}

/**
 * toolSummary puts a tool call's arguments on one short line: a command of
 * several lines shows its first and "+N lines" (the row shows it whole,
 * toolCommand).
 */
export function toolSummary(args) {
  if (args === undefined || args === null) return '';
  if (typeof args !== 'object' || Array.isArray(args)) {
    return summaryLine(JSON.stringify(args));
  }
  for (const key of TOOL_KEYS) {
    const v = args[key];
    if (typeof v === 'string' && v.trim() !== '') return summaryLine(v);
  }
  const argv = args.command;
  if (Array.isArray(argv) && argv.length > 0 && argv.every((w) => typeof w === 'string')) {
    return summaryLine(commandLine(argv));
  }
  const keys = Object.keys(args).sort();
  const parts = keys.map((k) => {
    const v = typeof args[k] === 'string' ? args[k] : JSON.stringify(args[k]);
    return keys.length === 1 ? v : `${k}=${v}`;
  });
  return summaryLine(parts.join(' '));
}

/**
 * toolCommand is a shell tool's whole command, made visible, when it has
 * more than one line (its summary shows only the first); '' otherwise.
 */
export function toolCommand(args) {
  if (!args || typeof args !== 'object') return '';
  const cmd = typeof args.command === 'string' ? args.command : typeof args.cmd === 'string' ? args.cmd : '';
  return cmd.trim().includes('\n') ? visible(cmd.trim()) : '';
}

/** statusText is how a turn's end is worded. */
export function statusText(status) {
  switch (status) {
    case 'completed': return 'Completed';
    case 'aborted': return "Stopped. The agent's response so far is kept above.";
    case 'rejected': return REJECTED_TEXT;
    case 'error': return 'The turn failed.';
    default: return `Ended: ${status}`;
  }
}

/** modeChangeText says what a mode switch does. */
export function modeChangeText(mode, streaming) {
  const when = streaming ? 'from the next tool call' : 'from the next turn';
  return mode === 'plan'
    ? `Switched to Plan: every tool call is denied ${when}.`
    : `Switched to Act: tool calls run ${when}.`;
}

/**
 * byText names the device and client kind of an answeredBy or sentBy, as
 * the window does (conversation.Who): "Pixel (web)"; the relay's own
 * device, whose name is "this device" for the relay, is the relay's
 * computer here (this page may be on a phone).
 */
export function byText(by) {
  if (!by || typeof by.device !== 'string') return '';
  const client = oneLine(by.client, 20);
  if (by.device === 'this device') return `${CLIENT_NAMES[client] || 'another client'} on the relay's computer`;
  return `${oneLine(by.device, 40)} (${client})`;
}

/**
 * agentChangeText is the note where a conversation's agent changed (the
 * relay restarted with another), as the window says it
 * (conversation.AgentChangeText).
 */
export function agentChangeText(from, to) {
  return `The agent changed from ${from} to ${to}.`;
}

/**
 * modeByText puts who switched into a mode change's text, as the window
 * does (conversation.ModeByText): "Switched to Plan by zebra-phone (web): …".
 */
export function modeByText(text, by) {
  const who = byText(by);
  if (!who) return text;
  const i = text.indexOf(':');
  return i < 0 ? `${text} (by ${who})` : `${text.slice(0, i)} by ${who}${text.slice(i)}`;
}

const CLIENT_NAMES = { window: 'a window', terminal: 'a terminal', web: 'the web client' };

/**
 * closedText says how an open question was closed: by this page now
 * (answeredHere, what it sent), by this page before (byMe: answeredBy
 * names this page's device and kind, as after a reload), or by whom the
 * relay names (by, its answeredBy), or by another window when an older
 * relay names nobody.
 */
export function closedText(question, answeredHere, reason, by, byMe = false) {
  const q = JSON.stringify(oneLine(question, 80));
  const who = byText(by) || 'another window';
  switch (reason) {
    case 'answered':
      if (answeredHere !== undefined) return `You answered ${JSON.stringify(oneLine(answeredHere, 80))} to ${q}.`;
      return byMe ? `You answered ${q}.` : `${q} was answered from ${who}.`;
    case 'rejected':
      return answeredHere !== undefined || byMe ? `You rejected ${q}.` : `${q} was rejected from ${who}.`;
    case 'aborted':
      return `The question ${q} was withdrawn: the turn was stopped.`;
    default:
      return `The question ${q} was closed (${reason}).`;
  }
}

/**
 * planProgress says how far the agent's plan is, as the window does
 * (conversation.PlanProgress): "2 of 5 steps done".
 */
export function planProgress(entries) {
  const done = entries.filter((e) => e.status === 'completed').length;
  if (entries.length === 0) return 'no steps left';
  if (entries.length === 1) return `${done} of 1 step done`;
  return `${done} of ${entries.length} steps done`;
}

/** AGENT_PLAN_TITLE heads the plan an agent reports as it works (conversation.AgentPlanTitle). */
export const AGENT_PLAN_TITLE = "The agent's plan";

/** planMark marks a step of the agent's plan: ✓ done, ▶ in progress, ○ pending. */
export function planMark(status) {
  return status === 'completed' ? '✓' : status === 'in_progress' ? '▶' : '○';
}

/** priorityText says a step of the agent's plan's priority: a high one alone (conversation.PriorityText). */
export function priorityText(priority) {
  return priority === 'high' ? 'high priority' : '';
}

/** clock formats milliseconds as m:ss (conversation.Clock). */
export function clock(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

/**
 * relayErrorText is the note for an error the relay answered a request of
 * this conversation with (conversation.RelayErrorText).
 */
export function relayErrorText(e) {
  if (e.code === 'conversation_busy' && e.type === 'copilot:send') {
    return 'Not sent: the agent is still working on the last prompt. Wait for it to finish, or stop it.';
  }
  return `The relay refused the request: ${e.message || e.code}`;
}

/**
 * entryTitle is a conversation's title where a list, a header or a
 * notification names it: "New conversation" while it has none
 * (conversation.EntryTitle).
 */
export function entryTitle(title) {
  return title && title.trim() ? title : 'New conversation';
}

/**
 * questionNotification is the [title, body] of the notification of a
 * question (conversation.QuestionNotification).
 */
export function questionNotification(title, question) {
  return [`Question: ${entryTitle(title)}`, question || 'The agent is waiting for your answer.'];
}

/**
 * turnNotification is the [title, body] of the notification of a turn's
 * end (conversation.TurnNotification).
 */
export function turnNotification(title, status, message) {
  let body = 'The turn was stopped.';
  if (status === 'completed') body = 'The agent finished its turn.';
  else if (status === 'error') body = message ? `The turn ended with an error: ${oneLine(message, 200)}` : 'The turn ended with an error.';
  return [entryTitle(title), body];
}

/** UNSENT_WHY says why a prompt comes back: the relay did not get it (conversation.UnsentWhy). */
export const UNSENT_WHY = 'The relay did not get your message (the connection dropped before it arrived)';

/** ARRIVED_LATE says a prompt given back reached the relay after all (conversation.ArrivedLate). */
export const ARRIVED_LATE = 'Your message reached the relay after all: it was sent.';

// The dialog of an open question, the page's and the window's: its title,
// the keys both take alike, and the words that teach them
// (conversation/question.go).

/** questionTitle is the title of the dialog of a question of inputType (conversation.QuestionTitle). */
export function questionTitle(inputType) {
  switch (inputType) {
    case 'approval': return 'Approval needed';
    case 'choice': return 'Choose an option';
    case 'text': return 'The agent needs your input';
    default: return 'The agent asks';
  }
}

/** answerRefusedText is the hint of a question the relay reopened, with its reason (conversation.AnswerRefusedText). */
export function answerRefusedText(why) {
  return `The relay did not accept that answer: ${why}`;
}

/** APPROVAL_KEYS is the line under an approval (conversation.ApprovalKeys). */
export const APPROVAL_KEYS = 'Keys: a or 1 approves, r or 2 rejects (rejecting stops the agent).';

/** APPROVAL_HINT answers a key an approval does not take (conversation.ApprovalHint). */
export const APPROVAL_HINT = 'Press a or 1 to approve, r or 2 to reject.';

/** TEXT_KEYS is the line under a question answered in words (conversation.TextKeys). */
export const TEXT_KEYS = 'Enter sends. Type r or /reject alone to reject (that stops the agent).';

/** ANSWER_REQUIRED answers an empty answer to a question answered in words (conversation.AnswerRequired). */
export const ANSWER_REQUIRED = 'An answer is required. Type it and press Enter, or type r to reject.';

/** ANSWER_OR_PICK answers an empty answer to a choice that takes the user's own too (conversation.AnswerOrPick). */
export const ANSWER_OR_PICK = 'Type an answer first, or pick one of the options.';

/** VIEWER_CANNOT_ANSWER is under a question shown to a viewer, which may only read it (conversation.ViewerCannotAnswer). */
export const VIEWER_CANNOT_ANSWER = 'This device is a viewer: it cannot answer. The agent waits for a controller or the owner to answer or reject it.';

/** choiceKeys is the line under a choice of n options (conversation.ChoiceKeys). */
export function choiceKeys(n) {
  return n === 1 ? 'Keys: 1 picks, ↑/↓ then Enter, r rejects.' : `Keys: 1–${n} picks, ↑/↓ then Enter, r rejects.`;
}

/** choiceHint answers a key a choice of n options does not take (conversation.ChoiceHint). */
export function choiceHint(n) {
  if (n === 0) return 'Type your answer in the field, or press r to reject.';
  if (n === 1) return 'Press 1 (or ↓ then Enter) to pick the option, or r to reject.';
  return `Press a number from 1 to ${n}, or ↑/↓ then Enter, or r to reject.`;
}

/** typedChoiceHint says what Enter does after the digits typed of an option's number (conversation.TypedChoiceHint). */
export function typedChoiceHint(typed) {
  return `${typed}: press Enter to pick it.`;
}

/** nothingSelectedHint answers Enter on a choice of n options none of which is selected (conversation.NothingSelectedHint). */
export function nothingSelectedHint(n) {
  return `Nothing is selected. ${choiceHint(n)}`;
}

/** THINKING_TEXT is the indicator's line while a turn has shown nothing yet. */
export const THINKING_TEXT = 'Thinking…';

/**
 * waitingText is the indicator's line while a question is open, with the
 * time left to the relay's deadline (ms, 0 for none) at now
 * (conversation.WaitingText).
 */
export function waitingText(deadline, now) {
  return `Waiting for your answer${timeLeft(deadline, now)}`;
}

/**
 * entryStatus is what a conversation's entry in the list says it is
 * doing: waiting for an answer, working, or '' when no turn runs
 * (conversation.EntryStatus).
 */
export function entryStatus(waiting, deadline, streaming, now) {
  if (waiting) return `waiting for your answer${timeLeft(deadline, now)}`;
  return streaming ? 'working…' : '';
}

// timeLeft is what waitingText and entryStatus add for a deadline (ms).
function timeLeft(deadline, now) {
  if (!deadline) return '';
  const left = deadline - now;
  return Math.round(left / 1000) <= 0 ? ' · time is up' : ` · ${clock(left)} left`;
}

/**
 * countdownText is the question's own line about its deadline (ms, 0 for
 * none) at now (conversation.CountdownText).
 */
export function countdownText(deadline, now) {
  if (!deadline) return 'No time limit: the agent waits for your answer.';
  const left = deadline - now;
  if (Math.round(left / 1000) <= 0) return 'Time is up: the agent goes on without an answer.';
  return `Times out in ${clock(left)}; then the agent goes on without an answer.`;
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const MINUTE = 60e3, HOUR = 60 * MINUTE, DAY = 24 * HOUR;

/**
 * ago says how long before now (ms) a time ms was: "just now", "5 min
 * ago", "3 h ago", "yesterday", "3 days ago", then the date ("2 Jan", with
 * the year when it is another year's), calendar days in the page's time
 * zone: conversation.Ago in the Go code, whose comment says why.
 */
export function ago(ms, now) {
  const d = now - ms;
  if (d < MINUTE) return 'just now';
  if (d < HOUR) return `${Math.floor(d / MINUTE)} min ago`;
  if (d < DAY) return `${Math.floor(d / HOUR)} h ago`;
  const t = new Date(ms), n = new Date(now);
  const days = Math.round((Date.UTC(n.getFullYear(), n.getMonth(), n.getDate()) - Date.UTC(t.getFullYear(), t.getMonth(), t.getDate())) / DAY);
  if (days <= 1) return 'yesterday';
  if (days < 7) return `${days} days ago`;
  const date = localDay(ms);
  return t.getFullYear() === n.getFullYear() ? date : `${date} ${t.getFullYear()}`;
}

// ---- usage ----
// The same figures and words as conversation/usage.go: the usage bar's
// line, a turn's line and the session's totals read alike in the window,
// the terminal and here (web/unit/fold.test.mjs checks them against the
// recorded streams' contracts).

/** newUsage is an empty usage record (see conversation.Usage in Go). */
export function newUsage() {
  return {
    calls: 0, model: '', cost: null, costSum: 0, cacheRead: null, cacheWrite: null,
    inputTokens: 0, outputTokens: 0, cachedTokens: 0, haveTokens: false,
    credits: 0, haveCredits: false, creditsStatus: '', creditsPerDay: 0, quotas: [],
    haveTotals: false, totalPremium: 0, models: [], sessionCredits: null, unreported: false,
  };
}

const isNum = (v) => typeof v === 'number' && Number.isFinite(v);

/** addQuota folds one copilot:quota into u. */
export function addQuota(u, q) {
  if (q.unreported === true) {
    u.unreported = true; // the agent reports no usage: no call, no figures
    return;
  }
  u.calls++;
  if (q.model) u.model = q.model;
  if (isNum(q.cost)) { u.cost = q.cost; u.costSum += q.cost; }
  if (isNum(q.cacheReadTokens)) { u.cacheRead = q.cacheReadTokens; u.cachedTokens += q.cacheReadTokens; }
  if (isNum(q.aiCredits)) { u.credits += q.aiCredits; u.haveCredits = true; }
  if (q.aiCreditsStatus) u.creditsStatus = q.aiCreditsStatus;
  if (isNum(q.creditsPerDay) && q.creditsPerDay > 0) u.creditsPerDay = q.creditsPerDay;
  if (isNum(q.cacheWriteTokens)) u.cacheWrite = q.cacheWriteTokens;
  if (isNum(q.inputTokens)) { u.inputTokens += q.inputTokens; u.haveTokens = true; }
  if (isNum(q.outputTokens)) { u.outputTokens += q.outputTokens; u.haveTokens = true; }
  const snaps = q.quotaSnapshots && typeof q.quotaSnapshots === 'object' ? q.quotaSnapshots : {};
  const names = Object.keys(snaps);
  if (names.length === 0) return; // a bring-your-own-model provider reports {}
  u.quotas = names.map((name) => {
    const s = snaps[name] || {};
    return {
      name,
      unlimited: s.isUnlimitedEntitlement === true,
      hasUsed: isNum(s.entitlementRequests) && isNum(s.usedRequests),
      entitlement: s.entitlementRequests, used: s.usedRequests,
      hasRemaining: isNum(s.remainingPercentage), remaining: s.remainingPercentage,
      resetDate: typeof s.resetDate === 'string' ? s.resetDate : '',
      inCredits: s.tokenBasedBilling === true,
    };
  });
  // premium_interactions first: it is the one people pay for.
  u.quotas.sort((a, b) => (a.name === 'premium_interactions' ? -1 : b.name === 'premium_interactions' ? 1 : a.name < b.name ? -1 : 1));
}

/** addShutdown folds copilot:shutdown (the session's totals) into u. */
export function addShutdown(u, d) {
  u.haveTotals = true;
  u.totalPremium = isNum(d.totalPremiumRequests) ? d.totalPremiumRequests : 0;
  if (isNum(d.aiCredits)) u.sessionCredits = d.aiCredits;
  const metrics = d.modelMetrics && typeof d.modelMetrics === 'object' ? d.modelMetrics : {};
  u.models = Object.keys(metrics).sort().map((model) => {
    const m = metrics[model] || {};
    return {
      model,
      requests: m.requests?.count ?? 0,
      cost: m.requests?.cost ?? 0,
      inputTokens: m.usage?.inputTokens ?? 0,
      outputTokens: m.usage?.outputTokens ?? 0,
    };
  });
}

/** num prints a figure with at most two decimals and no trailing zeros. */
export function num(f) {
  if (Number.isInteger(f)) return String(f);
  return fixed2(f).replace(/0+$/, '').replace(/\.$/, '');
}

// fixed2 is f with two decimals as Go's %.2f writes it: a figure exactly
// halfway between two hundredths (1.125: a multiple of 1/8) goes to the
// even one, where toFixed goes up ("1.13" for Go's "1.12").
function fixed2(f) {
  if (Number.isInteger(f * 8) && !Number.isInteger(f * 100)) {
    const lo = Math.floor(f * 100);
    return ((lo % 2 === 0 ? lo : lo + 1) / 100).toFixed(2);
  }
  return f.toFixed(2);
}

/** tokens prints a token count, in thousands from 10,000 on. */
export function tokens(n) {
  return n >= 10000 ? `${(n / 1000).toFixed(1)}k` : String(n);
}

/** plural says "1 request", "2 requests", "1.5 requests". */
export function plural(n, what) {
  return n === 1 ? `1 ${what}` : `${num(n)} ${what}s`;
}

/** creditsText is "0.42 credits", "1 credit", "<0.01 credits". */
export function creditsText(c) {
  if (c > 0 && c < 0.01) return '<0.01 credits';
  if (c === 1) return '1 credit';
  return `${num(c)} credits`;
}

/**
 * quotaText describes one quota: "12 of 300 premium requests used, 96%
 * left", "chat unlimited"; '' when it says nothing.
 */
export function quotaText(q) {
  const name = q.name === 'premium_interactions' ? 'premium requests' : q.name.replaceAll('_', ' ');
  if (q.unlimited) return `${name} unlimited`;
  if (q.hasUsed && q.entitlement > 0) {
    let s = `${num(q.used)} of ${num(q.entitlement)} ${name} used`;
    if (q.hasRemaining) s += `, ${num(q.remaining)}% left`;
    return s;
  }
  if (q.hasRemaining) return `${name} ${num(q.remaining)}% left`;
  return '';
}

// resetDay is a quota's reset date in ms, NaN when it has none.
function resetDay(q) {
  return q.resetDate ? Date.parse(q.resetDate) : NaN;
}

// dayText is "1 Dec": a reset date on the relay's calendar (UTC), a day
// the pace reaches on this one's.
const utcDay = (ms) => { const d = new Date(ms); return `${d.getUTCDate()} ${MONTHS[d.getUTCMonth()]}`; };
const localDay = (ms) => { const d = new Date(ms); return `${d.getDate()} ${MONTHS[d.getMonth()]}`; };

/**
 * pace says when a monthly quota runs out at the pace it is used (as
 * conversation.Pace): "at this pace it runs out on 19 Dec", "used up", or
 * '' when it lasts until its reset or nothing can be said.
 */
export function pace(q, creditsPerDay, now) {
  const reset = resetDay(q);
  if (Number.isNaN(reset) || q.unlimited || !q.hasUsed || !(q.entitlement > 0) || now >= reset) return '';
  if (q.used >= q.entitlement) return 'used up';
  let perDay = creditsPerDay;
  if (!q.inCredits || !(perDay > 0)) {
    const r = new Date(reset);
    const start = Date.UTC(r.getUTCFullYear(), r.getUTCMonth() - 1, r.getUTCDate(), r.getUTCHours(), r.getUTCMinutes(), r.getUTCSeconds(), r.getUTCMilliseconds());
    const elapsed = now - start;
    if (elapsed <= 0 || q.used <= 0) return '';
    perDay = (q.used / (elapsed / 3600000)) * 24;
  }
  const out = now + ((q.entitlement - q.used) / perDay) * 24 * 3600000;
  if (out >= reset) return '';
  return `at this pace it runs out on ${localDay(out)}`;
}

// ownModel: a bring-your-own-model provider's usage: tokens but no quota,
// no premium cost and no credits.
function ownModel(u) {
  return u.quotas.length === 0 && !u.haveCredits && (u.cost === null || u.cost === 0) && (u.haveTokens || u.creditsStatus === 'unavailable');
}

function tokenText(u) {
  let s = `${tokens(u.inputTokens)} in / ${tokens(u.outputTokens)} out`;
  if (u.cachedTokens > 0) s += ` / ${tokens(u.cachedTokens)} cached`;
  return `${s} tokens`;
}

function usageEmpty(u) {
  return !u.model && u.cost === null && u.cacheRead === null && u.cacheWrite === null && u.quotas.length === 0 && !u.haveTotals && !u.haveTokens;
}

/** NO_USAGE is the usage line of an agent that reports no usage. */
export const NO_USAGE = "This agent reports no usage: its turns' tokens and cost cannot be shown";

/**
 * usageText is a conversation's usage on one line (conv the
 * conversation's, turn the running or last turn's, now in ms).
 */
export function usageText(conv, turn = newUsage(), now = Date.now()) {
  if (usageEmpty(conv)) return conv.unreported ? NO_USAGE : 'No usage reported yet';
  const parts = [];
  if (conv.model) parts.push(`Model ${conv.model}`);
  if (conv.haveCredits) parts.push(`this turn ${creditsText(turn.credits)} · conversation ${creditsText(conv.credits)}`);
  else if (ownModel(conv) && conv.haveTokens) parts.push(`this turn ${tokenText(turn)}`, `conversation ${tokenText(conv)}`);
  for (const q of conv.quotas) {
    let s = quotaText(q);
    if (!s) continue;
    const reset = resetDay(q);
    if (!Number.isNaN(reset)) s += `, resets ${utcDay(reset)}`;
    const p = pace(q, conv.creditsPerDay, now);
    if (p) s += ` · ${p}`;
    parts.push(s);
  }
  if (conv.cost !== null && (conv.cost !== 0 || !ownModel(conv))) parts.push(`×${num(conv.cost)} premium per request`);
  if (!ownModel(conv) && (conv.cacheRead !== null || conv.cacheWrite !== null)) {
    parts.push(`cache ${tokens(conv.cacheRead ?? 0)} read / ${tokens(conv.cacheWrite ?? 0)} written`);
  }
  return parts.join('  ·  ');
}

/**
 * reportsNoTotals: the session ended with totals of nothing from an agent
 * that said it reports no usage; its "0 premium requests" would be a
 * figure nobody measured (conversation.Usage.reportsNoTotals).
 */
function reportsNoTotals(u) {
  return u.unreported && u.totalPremium === 0 && u.models.length === 0;
}

/** totalsText is the session's totals, '' before the session ended. */
export function totalsText(u) {
  if (!u.haveTotals) return '';
  if (reportsNoTotals(u)) return 'Session ended: this agent reports no usage';
  let s = `Session total: ${plural(u.totalPremium, 'premium request')}`;
  for (const m of u.models) {
    s += `  ·  ${m.model}: ${plural(m.requests, 'request')}, ${tokens(m.inputTokens)} tokens in / ${tokens(m.outputTokens)} out`;
  }
  return s;
}

/**
 * turnText is one turn's usage on one line (u the turn's, conv the
 * conversation's, now in ms), as the terminal prints it after each turn.
 */
export function turnText(u, conv = u, now = Date.now()) {
  if (u.calls === 0 && !u.haveTotals) return conv.unreported && usageEmpty(conv) ? 'usage: this agent reports none' : 'usage: none reported for this turn';
  const parts = [];
  if (u.model) parts.push(oneLine(u.model, 60));
  if (u.haveTokens) parts.push(u.cachedTokens > 0 ? tokenText(u) : `${tokens(u.inputTokens)} in / ${tokens(u.outputTokens)} out tokens`);
  if (u.haveCredits) parts.push(`${creditsText(u.credits)} (conversation ${creditsText(conv.credits)})`);
  if (u.calls > 0 && !ownModel(u)) parts.push(`cost ${num(u.costSum)}`);
  for (const q of u.quotas) {
    let s = quotaText(q);
    if (!s) continue;
    const p = pace(q, conv.creditsPerDay, now);
    if (p) s += `, ${p}`;
    parts.push(s);
    break;
  }
  if (u.haveTotals && (u.unreported || conv.unreported) && u.totalPremium === 0 && u.models.length === 0) parts.push('session ended');
  else if (u.haveTotals) parts.push(`session ended: ${plural(u.totalPremium, 'premium request')}`);
  return `usage: ${parts.join(' · ')}`;
}

/**
 * changesText sums up what a turn changed in its folder, as the window
 * says it (conversation.ChangesText): "3 files changed +12 −4".
 */
export function changesText(files, truncated) {
  const list = Array.isArray(files) ? files : [];
  let adds = 0;
  let dels = 0;
  for (const f of list) {
    adds += f.additions || 0;
    dels += f.deletions || 0;
  }
  let n = list.length === 1 ? '1 file changed' : `${list.length} files changed`;
  if (truncated) n = `more than ${list.length} files changed`;
  return `${n} +${adds} −${dels}`;
}

/** fileMark is a changed file's mark: A, M, D (conversation.FileMark). */
export function fileMark(status) {
  return { added: 'A', modified: 'M', deleted: 'D', skipped: 'skipped', failed: 'FAILED' }[status] || String(status ?? '');
}

/**
 * fileChangeText is one file of a change set, as the window and the
 * terminal list it (conversation.FileChangeText): "M path +3 −1", a
 * binary file without counts, a failed one with its error.
 */
export function fileChangeText(f) {
  let line = `${fileMark(f.status)} ${f.path}`;
  if (f.error) line += ` (${f.error})`;
  else if (f.binary) line += ' (binary)';
  else line += ` +${f.additions || 0} −${f.deletions || 0}`;
  return line;
}

/**
 * restoreEffects is what a restore to checkpoint would change, as the
 * change sets from that turn on say (conversation.State.RestoreEffects):
 * [{path, effect: removed|rewritten|brought back|EFFECT_LEFT_AS_IS}], by
 * path; a file over 10 MiB (large) is left as it is.
 */
export function restoreEffects(changeSets, checkpoint) {
  const first = new Map();
  const last = new Map();
  const large = new Set();
  let on = false;
  for (const ch of changeSets) {
    on = on || ch.checkpoint === checkpoint;
    if (!on) continue;
    for (const f of ch.files) {
      if (!first.has(f.path)) first.set(f.path, f.status);
      last.set(f.path, f.status);
      if (f.large) large.add(f.path);
    }
  }
  const out = [];
  for (const [path, st] of first) {
    let effect = 'rewritten';
    if (st === 'added' && last.get(path) === 'deleted') continue;
    if (large.has(path)) effect = EFFECT_LEFT_AS_IS;
    else if (st === 'added') effect = 'removed';
    else if (last.get(path) === 'deleted') effect = 'brought back';
    out.push({ path, effect });
  }
  return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/**
 * undoDiscards is what the undo of a restore (undo: its undo checkpoint)
 * also undoes, as the fold's rows say (conversation.State.UndoDiscards):
 * the files the turns since the restore changed, the folder going back to
 * what it held before the restore; [] when none did (Undo goes at once).
 */
export function undoDiscards(rows, undo) {
  const at = rows.findIndex((r) => r.restored?.undo === undo);
  if (at < 0) return [];
  const later = rows.slice(at + 1).find((r) => r.changes);
  if (!later) return [];
  return restoreEffects(rows.filter((r) => r.changes).map((r) => r.changes), later.changes.checkpoint);
}

/** EFFECT_LEFT_AS_IS is a file over 10 MiB in a restore's list: the restore does not touch it (conversation.EffectLeftAsIs). */
export const EFFECT_LEFT_AS_IS = 'left as it is: over 10 MiB';

/** UNDO_QUESTION heads the files undoDiscards names, asked before such an undo (conversation.UndoQuestion). */
export const UNDO_QUESTION = 'Turns since that restore changed files: undoing it puts the folder back as it was before the restore, so it also undoes them:';

// The words of a plan card, the page's and the window's
// (conversation/plan.go).

/** PLAN_CARD_HINT is under the card's steps until the plan runs (conversation.PlanCardHint). */
export const PLAN_CARD_HINT = 'Untick what should not run. Run in Act switches this conversation to Act and asks the agent for exactly these steps.';

/** RUN_IN_ACT is the card's button, RAN_IN_ACT the button once the plan ran (conversation.RunInAct, RanInAct). */
export const RUN_IN_ACT = 'Run in Act';
export const RAN_IN_ACT = 'Ran in Act';

/** PLAN_BUSY is said in place of a plan run while a turn runs (conversation.PlanBusy). */
export const PLAN_BUSY = 'A turn is still running: stop it or wait for its end, then run the plan.';

/** planCardTitle is the title of a plan card of n steps, run in Act or not yet (conversation.PlanCardTitle). */
export function planCardTitle(n, ran) {
  return `The plan: ${n === 1 ? '1 step' : `${n} steps`}, ${ran ? 'run in Act' : 'denied in Plan'}`;
}

// The words of a turn's changes card, the page's and the window's
// (conversation/checkpoints.go).

/** RESTORE_BUTTON asks for a restore to before the card's turn (conversation.RestoreButton). */
export const RESTORE_BUTTON = 'Restore files to before this turn…';

/** RESTORING_TEXT is the button while the restore is on its way (conversation.RestoringText). */
export const RESTORING_TEXT = 'Restoring…';

/** DIFF_CUT follows a file's diff that the relay cut (conversation.DiffCut). */
export const DIFF_CUT = 'The diff was cut: too long for one message.';

/** DIFF_LOADING stands in for a file's diff on its way from the relay (conversation.DiffLoading). */
export const DIFF_LOADING = 'Loading the diff…';

/** NO_DIFF stands in for the diff of a file opened that has none and waits for none (conversation.NoDiff). */
export const NO_DIFF = 'No diff yet: close the file and open it again to ask for it.';

/** moreFilesText counts a card's files past the ones it lists (conversation.MoreFilesText). */
export function moreFilesText(n, truncated) {
  return truncated ? 'and more files than the relay lists' : `and ${n} more files`;
}

/** diffRefusedText says that the relay refused a file's diff, and why (conversation.DiffRefusedText). */
export function diffRefusedText(why) {
  return `The relay refused the diff: ${why}`;
}

/** showAllLinesText opens the whole of a diff of n lines (conversation.ShowAllLinesText). */
export function showAllLinesText(n) {
  return `Show all ${n} lines`;
}

/** firstLinesText says that a diff shows only its first shown of n lines (conversation.FirstLinesText). */
export function firstLinesText(shown, n) {
  return `… the first ${shown} of ${n} lines`;
}

/** RESTORE_BUSY is said in place of a restore while a turn runs (conversation.RestoreBusy). */
export const RESTORE_BUSY = 'A turn is running: stop it or wait for its end, then restore.';

/** RESTORE_QUESTION is asked before a restore (conversation.RestoreQuestion). */
export const RESTORE_QUESTION = "Put the folder's files back as they were before this turn? This changes:";

/**
 * restoreCaveat says what else a restore puts back; others are the titles
 * of other conversations working in the same folder (conversation.RestoreCaveat).
 */
export function restoreCaveat(others = []) {
  let text = 'It also undoes whatever else changed in the folder since. The restore can be undone.';
  if (others.length) {
    text = `Another conversation works in this folder (${others.map((o) => JSON.stringify(oneLine(o, 60))).join(', ')}): the restore also undoes what it changed since. ${text}`;
  }
  return text;
}

/**
 * patchLines are the lines of one file's patch to draw: its hunks, without
 * git's header lines before the first (conversation.PatchLines):
 * [{op: '+'|'-'|' '|'@', text}].
 */
export function patchLines(patch) {
  let p = String(patch ?? '');
  const i = p.indexOf('\n@@');
  if (!p.startsWith('@@')) {
    if (i < 0) return [];
    p = p.slice(i + 1);
  }
  return p.replace(/\n+$/, '').split('\n').map((l) => {
    if (l.startsWith('@@') || l.startsWith('\\ ')) return { op: '@', text: l };
    if (l.startsWith('+') || l.startsWith('-') || l.startsWith(' ')) return { op: l[0], text: l.slice(1) };
    return { op: ' ', text: l };
  });
}

/**
 * noLinesText says why a changed file's diff has no lines to show
 * (conversation.NoLinesText): a binary file, a change of its mode alone
 * ("Mode changed: 100644 → 100755"), an empty file added or deleted, else
 * none changed.
 */
export function noLinesText(binary, patch) {
  let oldMode = '', newMode = '', added = false, deleted = false;
  for (const l of String(patch ?? '').split('\n')) {
    if (l.startsWith('old mode ')) oldMode = l.slice('old mode '.length);
    else if (l.startsWith('new mode ')) newMode = l.slice('new mode '.length);
    else if (l.startsWith('new file mode ')) added = true;
    else if (l.startsWith('deleted file mode ')) deleted = true;
    else if (l.startsWith('Binary files ')) binary = true;
  }
  if (binary) return 'A binary file: no diff to show.';
  if (oldMode && newMode) return `Mode changed: ${oldMode} → ${newMode}`;
  if (added) return 'An empty file, added: no lines to show.';
  if (deleted) return 'An empty file, deleted: no lines to show.';
  return 'No lines changed.';
}

/**
 * toolStateText is what the page says of a tool call in state, as the
 * window and the terminal do (conversation.ToolStateText): the fold's
 * running, approved, denied, failed or stopped.
 */
export function toolStateText(state) {
  return { running: 'running…', approved: 'approved', denied: 'denied by plan', stopped: 'stopped with the turn' }[state] || 'failed';
}

/**
 * folderLabel names a conversation's folder in short, as the window's
 * title and list do (conversation.FolderLabel): the folder's last name
 * and, for a worktree, its branch ("api · pilotdesk/1a2b3c4d"), or "new
 * worktree" before the relay made it. A Windows relay's path (backslashes
 * only) is read as such.
 */
export function folderLabel(path, branch, worktree) {
  const p = String(path ?? '');
  let name;
  if (p.includes('\\') && !p.includes('/')) {
    const t = p.replace(/\\+$/, '');
    name = p.slice(t.lastIndexOf('\\') + 1).replace(/\\+$/, '');
  } else {
    // filepath.Base(filepath.Clean(p)): "." and ".." folded, trailing
    // slashes dropped.
    const abs = p.startsWith('/');
    const parts = [];
    for (const s of p.split('/')) {
      if (s === '' || s === '.') continue;
      if (s === '..' && parts.length && parts[parts.length - 1] !== '..') parts.pop();
      else if (s !== '..' || !abs) parts.push(s);
    }
    name = parts.length ? parts[parts.length - 1] : abs ? '/' : '.';
  }
  if (!worktree) return name;
  return branch ? `${name} · ${branch}` : `${name} · new worktree`;
}

/**
 * restoredText says what a restore did, as the window does
 * (conversation.RestoredText); the notice's Undo undoes it.
 */
export function restoredText(d) {
  const files = Array.isArray(d.files) ? d.files : [];
  const failed = files.filter((f) => f.status === 'failed').length;
  const skipped = files.filter((f) => f.status === 'skipped').length;
  const short = (id) => String(id ?? '').slice(0, 8);
  let text = `Files restored to checkpoint ${short(d.checkpoint)}: ${files.length - failed - skipped} changed`;
  if (skipped) text += `, ${skipped} left as they are (over 10 MiB)`;
  if (failed) text += `, ${failed} could not be written`;
  return `${text}.`;
}

/**
 * deleteText is what deleting a conversation does, asked before the page
 * deletes it, as the window and the terminal ask (conversation.DeleteText).
 */
export function deleteText(title, ws) {
  let text = `Delete “${entryTitle(title)}” and its history, on the relay and for every device? This cannot be undone.`;
  if (ws && ws.isolation === 'worktree' && ws.branch) {
    text += ` Its worktree's work is committed on its branch ${ws.branch}, which stays in the repository; the worktree's folder is removed.`;
  } else if (ws && ws.isolation === 'worktree') {
    text += " Its worktree's work is committed on its branch, which stays in the repository; the worktree's folder is removed.";
  } else if (ws && ws.path) {
    text += ` The files in its folder, ${ws.path}, stay as they are.`;
  }
  if (ws && ws.isolation === 'worktree' && ws.ignored) text += ` ${DELETE_LOSES_IGNORED}`;
  return text;
}

/** DELETE_LOSES_IGNORED ends deleteText for a worktree that holds ignored files (conversation.DeleteLosesIgnored). */
export const DELETE_LOSES_IGNORED = 'Files its .gitignore ignores (.env, build output) are not committed: they are lost with the folder.';

// ---- a plan's steps (conversation/plan.go and DescribeTool in
// conversation/tools.go): the tool calls Plan denied, which the plan card
// lists and Run in Act asks the agent to carry out.

/**
 * describeTool works out what a tool call would do from its name and its
 * arguments, as far as a plan's words need it: kind (shell, edit, create,
 * read, search or other), command, path, query, and whether an edit
 * changes anything (diff). Agents name their tools differently, so the
 * arguments decide where the name does not (conversation.DescribeTool).
 */
export function describeTool(name, args) {
  const a = args && typeof args === 'object' && !Array.isArray(args) ? args : {};
  const str = (...keys) => {
    for (const k of keys) if (typeof a[k] === 'string' && a[k] !== '') return a[k];
    return '';
  };
  const lower = String(name ?? '').toLowerCase();
  const oneOf = (...words) => words.some((w) => lower.includes(w));
  const path = str('path', 'file_path', 'filePath', 'file', 'fileName');
  const w = { kind: 'other', command: '', path: '', query: '', diff: false };
  const old = str('old_str', 'oldString', 'old_string');
  const now = str('new_str', 'newString', 'new_string');
  if (str('command', 'cmd') !== '' || oneOf('bash', 'shell', 'powershell', 'execute', 'run')) {
    Object.assign(w, { kind: 'shell', command: str('command', 'cmd') });
  } else if (old !== '' || now !== '' || oneOf('edit', 'str_replace', 'replace', 'patch')) {
    // Either string makes a diff (Go's unifiedDiff has a hunk header
    // even for the same lines): the change the agent proposed.
    Object.assign(w, { kind: 'edit', path, diff: old !== '' || now !== '' });
  } else if (str('file_text', 'content', 'contents') !== '' || oneOf('create', 'write')) {
    Object.assign(w, { kind: 'create', path });
  } else if (str('pattern', 'query', 'regex', 'glob') !== '' || oneOf('grep', 'glob', 'search', 'find')) {
    Object.assign(w, { kind: 'search', query: str('pattern', 'query', 'regex', 'glob'), path });
  } else if (path !== '' || oneOf('view', 'read', 'cat')) {
    Object.assign(w, { kind: 'read', path });
  }
  w.command = visible(w.command);
  w.path = visible(w.path);
  w.query = visible(w.query);
  return w;
}

/** planStep is a step of a plan: a tool call Plan denied, by its name and arguments. */
export function planStep(tool, args) {
  return { tool: String(tool ?? ''), work: describeTool(tool, args) };
}

// goQuote quotes s as Go's %q does for what visible left: printable
// characters as they are, a quote, a backslash and a newline or a tab
// escaped.
function goQuote(s) {
  const esc = { '"': '\\"', '\\': '\\\\', '\n': '\\n', '\t': '\\t' };
  return `"${Array.from(s, (c) => esc[c] ?? c).join('')}"`;
}

/** stepText says what a step does, on one line: "run `go test ./...`", "edit main.go". */
export function stepText(p) {
  const w = p.work;
  switch (w.kind) {
    case 'shell':
      return `run \`${oneLine(w.command, 200)}\``;
    case 'edit':
      return `edit ${w.path || 'a file'}`;
    case 'create':
      return `create ${w.path || 'a file'}`;
    case 'read':
      return `read ${w.path || 'a file'}`;
    case 'search':
      return `search for ${goQuote(w.query)} in ${w.path || 'the project'}`;
  }
  return p.tool;
}

/** PLAN_PROMPT_HEAD is the first line of planPrompt, which tells a prompt that ran a plan. */
export const PLAN_PROMPT_HEAD = 'Carry out exactly these steps of your plan, in this order, and nothing else:';

/** planPrompt is the prompt that asks the agent to carry out exactly these steps, in order. */
export function planPrompt(steps) {
  let out = `${PLAN_PROMPT_HEAD}\n`;
  steps.forEach((p, i) => {
    out += `${i + 1}. ${stepText(p)}`;
    if (p.work.kind === 'edit' && p.work.diff) out += ' (the change you proposed)';
    out += '\n';
  });
  return out;
}

/**
 * planPromptSteps returns the steps a prompt of planPrompt's asks for, by
 * their stepText: which of a plan's steps ran.
 */
export function planPromptSteps(prompt) {
  const lines = String(prompt ?? '').split('\n');
  if (lines[0] !== PLAN_PROMPT_HEAD) return [];
  return lines.slice(1).map((l) => /^\d+\. (.*?)(?: \(the change you proposed\))?$/.exec(l)?.[1]).filter((t) => t !== undefined);
}

/**
 * planRan reports whether the plan card rows[row] was run: a prompt of
 * planPrompt's came after it, before the next plan card.
 */
export function planRan(rows, row) {
  for (const r of rows.slice(row + 1)) {
    if (r.kind === 'plancard') return false;
    if (r.kind === 'user' && String(r.text ?? '').startsWith(`${PLAN_PROMPT_HEAD}\n`)) return true;
  }
  return false;
}
