package ui

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
	"github.com/google/uuid"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// newConvDialog asks where a new conversation works (docs/workspaces.md):
// a folder on the relay's machine, typed or picked from the relay's
// recent folders and its default one (copilot:workspaces), or, when the
// relay is this app's own, found with Browse…; and, for a folder in a git
// repository, whether to work on a separate branch in a git worktree.
// Start opens the conversation; its first prompt carries the folder.
type newConvDialog struct {
	w        *Window
	dlg      *dialog.CustomDialog
	folder   *escapeSelectEntry
	browse   *escapeButton
	worktree *escapeCheck
	hint     *widget.Label
	problem  *widget.Label
	start    *escapeButton
	// ws is the relay's answer to copilot:workspaces (nil until it came).
	ws *protocol.Workspaces
}

// worktreeLabel is the checkbox's words.
const worktreeLabel = "Work on a separate branch (git worktree)"

// askNewConversation opens the new-conversation dialog (New conversation,
// Ctrl+N). Without a relay yet it opens a conversation in the default
// folder at once, as the window does when it starts.
func (w *Window) askNewConversation() {
	if w.client == nil {
		w.newConversation()
		return
	}
	if w.newConv != nil {
		w.newConv.dlg.Show()
		return
	}
	d := &newConvDialog{w: w}
	hide := func() { d.dlg.Hide() }
	d.folder = newEscapeSelectEntry(hide)
	d.folder.SetPlaceHolder("the relay's default folder")
	d.folder.OnChanged = func(string) { d.refresh() }
	d.folder.OnSubmitted = func(string) { d.submit() }
	d.browse = newEscapeButton("Browse…", theme.FolderOpenIcon(), d.openBrowser, hide)
	if w.opts.Remote {
		// The relay's disk is another machine's: the folder is typed or
		// picked from the relay's recent ones.
		d.browse.Hide()
	}
	d.worktree = newEscapeCheck(worktreeLabel, hide)
	d.hint = widget.NewLabel("")
	d.hint.Wrapping = fyne.TextWrapWord
	d.hint.SizeName = theme.SizeNameCaptionText
	d.problem = widget.NewLabel("")
	d.problem.Wrapping = fyne.TextWrapWord
	d.problem.Importance = widget.DangerImportance
	d.problem.Hide()
	cancel := newEscapeButton("Cancel", theme.CancelIcon(), hide, hide)
	d.start = newEscapeButton("Start", theme.ConfirmIcon(), d.submit, hide)
	d.start.Importance = widget.HighImportance
	question := widget.NewLabelWithStyle("Where should the agent work?", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	row := container.NewBorder(nil, nil, nil, d.browse, d.folder)
	content := container.NewVBox(question, row, d.worktree, d.hint, d.problem)
	d.dlg = dialog.NewCustomWithoutButtons("New conversation", content, w.win)
	d.dlg.SetButtons([]fyne.CanvasObject{cancel, d.start})
	d.dlg.SetOnClosed(func() {
		if w.newConv == d {
			w.newConv = nil
		}
		w.focusComposer()
	})
	d.dlg.Resize(fyne.NewSize(min(620, w.win.Canvas().Size().Width-40), 0))
	w.newConv = d
	d.setWorkspaces(w.store.Workspaces())
	w.enqueue(func(ctx context.Context) {
		if err := w.client.Workspaces(ctx); err != nil {
			w.log.Debug("asking for the relay's folders failed", "err", err)
		}
	})
	d.dlg.Show()
	w.win.Canvas().Focus(d.folder)
}

// setWorkspaces offers the default folder (the Settings' working folder
// for the app's own relay, else the relay's) and the relay's recent ones.
func (d *newConvDialog) setWorkspaces(ws *protocol.Workspaces) {
	def := d.w.defaultFolder()
	if ws == nil {
		if d.folder.Text == "" && def != "" {
			d.offer(def)
		}
		d.refresh()
		return
	}
	d.ws = ws
	if def == "" {
		def = ws.Default
	}
	var opts []string
	if def != "" {
		opts = append(opts, def)
	}
	for _, r := range ws.Recent {
		if r.Path != def {
			opts = append(opts, r.Path)
		}
	}
	d.folder.SetOptions(opts)
	if d.folder.Text == "" && def != "" {
		d.offer(def)
	}
	d.refresh()
}

// offer puts folder in the entry with the cursor after it, where a typed
// subfolder goes: at the start, where SetText leaves it, what the user
// typed went in front of the folder ("tool/tmp/repo", seen in a walk).
func (d *newConvDialog) offer(folder string) {
	d.folder.SetText(folder)
	d.folder.CursorColumn = utf8.RuneCountInString(folder)
	d.folder.Refresh()
}

// defaultFolder is where a new conversation works when the user names no
// folder, when the relay is this app's own (Options.CheckFolder): the
// Settings' working folder as it is now, made absolute ("": where
// pilotdesk started, its current directory, as the relay takes it). ""
// for another relay, whose own default folder applies.
func (w *Window) defaultFolder() string {
	if w.opts.CheckFolder == nil {
		return ""
	}
	dir := strings.TrimSpace(w.opts.Effective.WorkDir)
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		w.log.Warn("the working folder has no absolute path: new conversations use the relay's default folder", "dir", dir, "err", err)
		return ""
	}
	return abs
}

// defaultWorkspace is what the first prompt of a new conversation with no
// folder chosen names: the default folder (nil: the relay's own).
func (w *Window) defaultWorkspace() *protocol.WorkspaceRequest {
	if dir := w.defaultFolder(); dir != "" {
		return &protocol.WorkspaceRequest{Path: dir}
	}
	return nil
}

// refresh shows the worktree checkbox for a folder known to be in a git
// repository, and says which folders the relay accepts.
func (d *newConvDialog) refresh() {
	path := d.path()
	git, branch := d.isRepository(path)
	if git {
		d.worktree.Enable()
		d.worktree.Show()
	} else {
		d.worktree.SetChecked(false)
		d.worktree.Hide()
	}
	var hint []string
	if branch != "" {
		hint = append(hint, "A git repository, on branch "+branch+". A worktree leaves your checkout as it is: the agent works on a new branch pilotdesk/….")
	} else if git {
		hint = append(hint, "A git repository. A worktree leaves your checkout as it is: the agent works on a new branch pilotdesk/….")
	}
	if d.ws != nil && len(d.ws.Roots) > 0 {
		hint = append(hint, "The relay accepts folders inside "+strings.Join(d.ws.Roots, ", ")+".")
	}
	d.hint.SetText(strings.Join(hint, " "))
	d.problem.Hide()
}

// isRepository says whether path is in a git repository, as the relay's
// recent folders say, or, when the relay runs on this machine, as the
// folder itself says (a .git in it or above it).
func (d *newConvDialog) isRepository(path string) (git bool, branch string) {
	if path == "" {
		return false, ""
	}
	if d.ws != nil {
		for _, r := range d.ws.Recent {
			if r.Path == path {
				return r.Git, r.Branch
			}
		}
	}
	if d.w.opts.Remote || !filepath.IsAbs(path) {
		return false, ""
	}
	for dir := filepath.Clean(path); ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
			return true, ""
		}
		if filepath.Dir(dir) == dir {
			return false, ""
		}
	}
}

// openBrowser picks a folder with Fyne's folder dialog (the relay is this
// app's, so its disk is this machine's).
func (d *newConvDialog) openBrowser() {
	fd := dialog.NewFolderOpen(func(u fyne.ListableURI, err error) {
		if err != nil || u == nil {
			return
		}
		d.folder.SetText(u.Path())
	}, d.w.win)
	if p := strings.TrimSpace(d.folder.Text); filepath.IsAbs(p) {
		startIn(fd, p)
	}
	fd.Show()
}

// startIn has a picker (this one, and Settings' file and folder pickers)
// open at the folder dir, where Fyne can list it; elsewhere it opens where
// it would have.
func startIn(fd *dialog.FileDialog, dir string) {
	if l, err := storage.ListerForURI(storage.NewFileURI(dir)); err == nil {
		fd.SetLocation(l)
	}
}

// submit opens the conversation in the folder chosen.
func (d *newConvDialog) submit() {
	path := d.path()
	if path != "" && !filepath.IsAbs(path) && !isWindowsAbs(path) {
		d.problem.SetText("The folder must be an absolute path on the relay's machine, such as /home/you/src/api.")
		d.problem.Show()
		return
	}
	var ws *protocol.WorkspaceRequest
	if path != "" {
		ws = &protocol.WorkspaceRequest{Path: path}
		if d.worktree.Visible() && d.worktree.Checked {
			ws.Isolation = protocol.IsolationWorktree
		}
	}
	d.dlg.Hide()
	d.w.openNew(ws)
}

// path is the folder typed or picked; when the relay's machine is this
// one, a leading ~ is this user's home, as in a shell (the terminal's
// /new takes ~/src/api too): "~/src/api" was refused as not absolute.
func (d *newConvDialog) path() string {
	path := strings.TrimSpace(d.folder.Text)
	if d.w.opts.Remote {
		return path
	}
	return expandHome(path)
}

// expandHome turns a leading ~ (alone, or before a separator) into the
// user's home folder; anything else, or no home folder, is left as it is.
func expandHome(path string) string {
	rest, ok := strings.CutPrefix(path, "~")
	if !ok || (rest != "" && !os.IsPathSeparator(rest[0])) {
		return path
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return path
	}
	return home + rest
}

// isWindowsAbs reports whether path is an absolute Windows path (a relay
// on Windows, from a window elsewhere): C:\… or \\server\….
func isWindowsAbs(path string) bool {
	return len(path) >= 3 && path[1] == ':' && (path[2] == '\\' || path[2] == '/') || strings.HasPrefix(path, `\\`)
}

// openNew opens a new conversation whose first prompt names ws (nil: the
// relay's default folder).
func (w *Window) openNew(ws *protocol.WorkspaceRequest) {
	id := uuid.NewString()
	w.store.Create(id)
	if ws != nil {
		w.store.WantWorkspace(id, *ws)
	}
	w.switchTo(id)
	w.focusComposer()
}
