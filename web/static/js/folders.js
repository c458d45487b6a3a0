// folders.js: the folder a new conversation works in (docs/workspaces.md):
// the relay's default folder or one of its recent ones, and, in a git
// repository, a worktree of its own. The first prompt carries the choice.

import { $, el, clear } from './dom.js';

export class FolderPicker {
  /** @param {function} changed called when the user picks another folder */
  constructor(changed) {
    this.workspaces = null; // the relay's copilot:workspaces answer
    $('folder').addEventListener('change', () => {
      this.renderFolder();
      changed(); // the folder under the title
    });
    $('worktree').addEventListener('change', () => changed());
  }

  /** offered takes the relay's copilot:workspaces answer. */
  offered(d) {
    this.workspaces = { default: String(d.default ?? ''), recent: Array.isArray(d.recent) ? d.recent : [], roots: Array.isArray(d.roots) ? d.roots : [] };
    this.folderOptions();
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

  /** render shows the picker while a new conversation (isNew) is open. */
  render(isNew) {
    $('new-folder').hidden = !this.workspaces || !isNew;
  }

  // chosen is what a new conversation's first prompt names: the folder
  // chosen and whether in a worktree (null: the relay's default folder, as
  // is, or no picker shown).
  chosen() {
    if ($('new-folder').hidden) return null;
    const path = $('folder').value || (this.workspaces?.default ?? '');
    const worktree = $('worktree').checked;
    if (!path || (!$('folder').value && !worktree)) return null;
    return worktree ? { path, isolation: 'worktree' } : { path };
  }

  // pending is the folder chosen, as the label under the title names it
  // before the first prompt ("api · new worktree"); null for none.
  pending() {
    if ($('new-folder').hidden) return null;
    const path = $('folder').value || (this.workspaces?.default ?? '');
    return path ? { path, isolation: $('worktree').checked ? 'worktree' : 'none' } : null;
  }
}
