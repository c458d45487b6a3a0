package ui

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"

	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/workspace"
	"github.com/pilotdesk/pilotdesk/settings"
)

// TestNewConversationFolder: New conversation asks where: the relay's
// default folder comes first, a relative path is refused in the dialog, a
// folder in a git repository offers a worktree; the first prompt carries
// the folder, and the list, the header and the window's title name it
// (with the worktree's branch once the relay made it).
func TestNewConversationFolder(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	root := t.TempDir()
	def, repo := filepath.Join(root, "home"), filepath.Join(root, "api")
	for _, d := range []string{def, repo} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	if err := os.WriteFile(filepath.Join(repo, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "main.go")
	git("commit", "-q", "-m", "first")
	ws, err := workspace.New(workspace.Options{Roots: []string{root}, Default: def, WorktreeDir: filepath.Join(t.TempDir(), "worktrees")})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessConfig{relay: relay.Config{WorkDir: def, Workspaces: ws}})
	first := h.w.current

	h.w.shortcut(shortcutNew)
	d := h.w.newConv
	if d == nil {
		t.Fatal("Ctrl+N asked nothing")
	}
	h.waitFor("the relay's folders", func() bool { return d.ws != nil })
	if d.folder.Text != def || d.worktree.Visible() {
		t.Fatalf("the dialog offers %q (worktree shown %v), want the default folder %q without a worktree", d.folder.Text, d.worktree.Visible(), def)
	}
	d.folder.SetText("src/api")
	test.Tap(d.start)
	if !d.problem.Visible() || h.w.current != first {
		t.Fatal("a relative folder was taken")
	}
	d.folder.SetText(repo)
	if !d.worktree.Visible() {
		t.Fatal("a folder in a git repository offers no worktree")
	}
	test.Tap(d.worktree)
	test.Tap(d.start)
	h.frame()
	if h.w.current == first || h.w.newConv != nil {
		t.Fatal("Start opened no conversation")
	}
	if got := h.w.Window().Title(); !strings.HasPrefix(got, "api · new worktree — pilotdesk") {
		t.Fatalf("before its first prompt the window's title is %q", got)
	}
	h.send("markdown")
	h.waitFor("the turn in the worktree", func() bool {
		return completedTurns(h) == 1 && h.w.view.Folder != "" && strings.Contains(h.w.view.Folder, "pilotdesk/")
	})
	h.frame()
	branch := "pilotdesk/" + h.w.current[:8]
	if want := "api · " + branch; h.w.view.Folder != want {
		t.Fatalf("the conversation's folder is %q, want %q", h.w.view.Folder, want)
	}
	if got := h.w.Window().Title(); !strings.HasPrefix(got, "api · "+branch+" — pilotdesk") {
		t.Fatalf("the window's title is %q", got)
	}
	found := false
	for _, e := range h.w.sidebar.entries {
		if e.ID == h.w.current {
			found = e.Folder == "api · "+branch
		}
	}
	if !found {
		t.Fatalf("the list's entry does not name the folder: %+v", h.w.sidebar.entries)
	}
	// The user's checkout stays on its branch.
	out, err := exec.Command("git", "-C", repo, "branch", "--show-current").Output()
	if err != nil || strings.TrimSpace(string(out)) == branch {
		t.Fatalf("the repository is on %q (%v)", out, err)
	}
}

// TestWorkingFolderIsTheDefaultOfNewConversations: the Settings' working
// folder is where new conversations work when the user names no folder:
// the window sends it as the first prompt's workspace, so changing it
// restarts nothing, a running conversation keeps its folder, and the next
// conversation (and the new-conversation dialog) takes the new one. A
// folder the app's relay would refuse (outside its roots) restarts the
// relay, whose default folder it becomes.
func TestWorkingFolderIsTheDefaultOfNewConversations(t *testing.T) {
	root := t.TempDir()
	home, other := filepath.Join(root, "home"), filepath.Join(root, "other")
	for _, d := range []string{home, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := workspace.New(workspace.Options{Roots: []string{root}, Default: home})
	if err != nil {
		t.Fatal(err)
	}
	restarts := 0
	opts := Options{
		Restart:     func(done func(error)) { restarts++; done(nil) },
		CheckFolder: ws.Check,
		Effective:   settings.Settings{WorkDir: home},
	}
	h := newHarness(t, harnessConfig{relay: relay.Config{WorkDir: home, Workspaces: ws}, options: opts})
	folderOf := func(id string) string {
		for _, e := range h.w.sidebar.entries {
			if e.ID == id {
				return e.Folder
			}
		}
		return ""
	}
	first := h.w.current
	h.send("markdown")
	h.waitFor("the first turn, in the working folder", func() bool { return completedTurns(h) == 1 && h.w.view.Folder == "home" })

	h.w.ShowSettings()
	h.w.settings.entry(settings.FieldWorkDir).SetText(other)
	test.Tap(h.w.settings.apply)
	if restarts != 0 || h.w.settings != nil {
		t.Fatalf("changing the working folder restarted the relay %d times (dialog open %v)", restarts, h.w.settings != nil)
	}
	if got := settings.Load(h.app.Preferences(), settings.Defaults()).WorkDir; got != other {
		t.Fatalf("saved working folder %q, want %q", got, other)
	}

	h.w.shortcut(shortcutNew)
	d := h.w.newConv
	h.waitFor("the relay's folders", func() bool { return d.ws != nil })
	if d.folder.Text != other {
		t.Fatalf("the dialog offers %q, want the new working folder %q", d.folder.Text, other)
	}
	d.dlg.Hide()

	h.w.newConversation()
	second := h.w.current
	h.send("markdown")
	h.waitFor("the second conversation's turn", func() bool { return completedTurns(h) == 1 && h.w.view.Folder != "" })
	h.frame()
	if h.w.view.Folder != "other" {
		t.Fatalf("a new conversation works in %q, want the new working folder %q", h.w.view.Folder, other)
	}
	if got := folderOf(first); got != "home" {
		t.Fatalf("the running conversation moved to %q, want it kept in home", got)
	}
	if got := folderOf(second); got != "other" {
		t.Fatalf("the list names the new conversation's folder %q", got)
	}

	// Outside the relay's roots: only a relay started on it takes it.
	outside := t.TempDir()
	h.w.ShowSettings()
	h.w.settings.entry(settings.FieldWorkDir).SetText(outside)
	test.Tap(h.w.settings.apply)
	if restarts != 1 {
		t.Fatalf("a working folder outside the relay's roots: %d restarts, want 1", restarts)
	}
}

// TestNewConversationReplacesAnUnusedOne: New conversation (Ctrl+N,
// Start) on a conversation nothing was sent in replaces it instead of
// leaving an empty "New conversation" entry behind, one more at each New;
// so does opening another conversation from the list. A conversation that
// was used stays.
func TestNewConversationReplacesAnUnusedOne(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	entries := func() []string {
		h.frame()
		var ids []string
		for _, e := range h.w.sidebar.entries {
			ids = append(ids, e.ID)
		}
		return ids
	}
	newConv := func() {
		t.Helper()
		h.w.shortcut(shortcutNew)
		d := h.w.newConv
		if d == nil {
			t.Fatal("Ctrl+N asked nothing")
		}
		test.Tap(d.start)
		h.frame()
	}
	first := h.w.current
	if got := entries(); len(got) != 1 || got[0] != first {
		t.Fatalf("at start the list is %v, want the one new conversation %s", got, first)
	}
	newConv()
	newConv()
	if got := entries(); len(got) != 1 || got[0] != h.w.current || h.w.current == first {
		t.Fatalf("after two New conversation the list is %v (showing %s), want only the one shown", got, h.w.current)
	}
	if h.w.store.Has(first) {
		t.Fatal("the unused conversation of the start is still known")
	}

	used := h.w.current
	h.send("markdown")
	h.waitFor("the turn", func() bool { return completedTurns(h) == 1 })
	newConv()
	fresh := h.w.current
	if got := entries(); len(got) != 2 || !slices.Contains(got, used) || !slices.Contains(got, fresh) {
		t.Fatalf("after New on a used conversation the list is %v, want %s and %s", got, used, fresh)
	}
	h.w.switchTo(used)
	if got := entries(); len(got) != 1 || got[0] != used {
		t.Fatalf("after leaving the unused conversation for another the list is %v, want only %s", got, used)
	}
}

// TestNewConversationFolderTilde: with the relay on this machine, a
// folder typed as ~/DIR is DIR in the home folder, as in a shell and in
// the terminal's /new; it was refused as not an absolute path.
func TestNewConversationFolderTilde(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("USERPROFILE", home) // os.UserHomeDir on Windows
	api := filepath.Join(home, "api")
	if err := os.Mkdir(api, 0o755); err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.New(workspace.Options{Roots: []string{home}, Default: home, WorktreeDir: filepath.Join(t.TempDir(), "worktrees")})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessConfig{relay: relay.Config{WorkDir: home, Workspaces: ws}})
	first := h.w.current
	h.w.shortcut(shortcutNew)
	d := h.w.newConv
	if d == nil {
		t.Fatal("Ctrl+N asked nothing")
	}
	d.folder.SetText("~/api")
	test.Tap(d.start)
	h.frame()
	if d.problem.Visible() || h.w.current == first {
		t.Fatalf("~/api was refused: %q", d.problem.Text)
	}
	if got := h.w.store.Wanted(h.w.current); got == nil || got.Path != api {
		t.Fatalf("the new conversation's folder is %+v, want %s", got, api)
	}
	h.send("markdown")
	h.waitFor("the turn in ~/api", func() bool { return completedTurns(h) == 1 && h.w.view.Dir != "" })
	if real, _ := filepath.EvalSymlinks(api); h.w.view.Dir != real && h.w.view.Dir != api {
		t.Fatalf("the conversation works in %q, want %s", h.w.view.Dir, api)
	}
}

// TestNewConversationTypesAfterTheFolder: the dialog opens with the
// default folder in its focused entry and the cursor after it, so what the
// user types goes on the end of the folder, where it went in front of it
// ("sub/home" for "home/sub", seen in a walk).
func TestNewConversationTypesAfterTheFolder(t *testing.T) {
	root := t.TempDir()
	ws, err := workspace.New(workspace.Options{Roots: []string{root}, Default: root})
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{CheckFolder: ws.Check, Effective: settings.Settings{WorkDir: root}}
	h := newHarness(t, harnessConfig{relay: relay.Config{WorkDir: root, Workspaces: ws}, options: opts})
	h.w.shortcut(shortcutNew)
	d := h.w.newConv
	h.waitFor("the relay's folders", func() bool { return d.ws != nil })
	if h.w.Window().Canvas().Focused() != d.folder {
		t.Fatalf("the focus is on %T, want the folder", h.w.Window().Canvas().Focused())
	}
	test.Type(d.folder, "/sub")
	if want := root + "/sub"; d.folder.Text != want {
		t.Fatalf("typed into the offered folder: %q, want %q", d.folder.Text, want)
	}
}
