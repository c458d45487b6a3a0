// entries.js: the conversation list as the page shows it: the relay's list
// entries merged with the conversations this page follows, and which of
// them have a question waiting.

import { folderLabel } from './words.js';

// folderOf names a workspace of the relay's (a list entry's, a
// subscription's) in short: "api", "api · pilotdesk/1a2b3c4d"; '' for none.
export function folderOf(ws) {
  if (!ws || typeof ws !== 'object' || typeof ws.path !== 'string' || !ws.path) return '';
  return folderLabel(ws.path, typeof ws.branch === 'string' ? ws.branch : '', ws.isolation === 'worktree');
}

/**
 * waitingIds lists the conversations with a question open: those followed
 * (convs, id → Conversation) from their own copy, the others (entries, id
 * → the relay's list entry) from the list; following(id) says which.
 */
export function waitingIds(convs, entries, following) {
  const ids = new Set();
  for (const [id, c] of convs) if (c.pending && !c.pending.answering) ids.add(id);
  for (const [id, e] of entries) if (e.waitingInput && !following(id)) ids.add(id);
  return [...ids];
}

/**
 * sortedEntries is the list to show, most recently updated first: the
 * relay's entries, with what the followed conversations know newer, and
 * the conversations made here (once they have rows, or while open:
 * current).
 */
export function sortedEntries(entries, convs, current) {
  const out = new Map();
  for (const [id, e] of entries) {
    out.set(id, {
      id, title: e.title, streaming: !!e.streaming, mode: e.mode, waiting: !!e.waitingInput,
      updatedAt: Date.parse(e.updatedAt) || 0, agent: typeof e.agent === 'string' ? e.agent : '',
      folder: folderOf(e.workspace),
    });
  }
  for (const [id, c] of convs) {
    // A conversation made here shows once it has rows, or while it is open.
    if (!out.has(id) && c.rows.length === 0 && id !== current) continue;
    const prev = out.get(id) || {};
    out.set(id, {
      id, title: c.title || prev.title, streaming: c.synced ? c.streaming : prev.streaming,
      mode: c.mode, waiting: c.synced ? !!c.pending : prev.waiting, updatedAt: Math.max(c.updatedAt || 0, prev.updatedAt || 0),
      agent: prev.agent || c.agent, folder: prev.folder || folderOf(c.workspace),
    });
  }
  return [...out.values()].sort((a, b) => b.updatedAt - a.updatedAt);
}
