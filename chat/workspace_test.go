package chat

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// /new DIR starts a conversation whose sends name DIR as its workspace:
// the relay fixes it there (its list says so), and a bad /new says how to
// use it and starts nothing. "Folder: DIR" is said once the relay took
// the folder, at the first prompt's echo: a folder it refuses is never
// announced (it was, at /new, and then refused).
func TestNewInFolder(t *testing.T) {
	h := startRelayREPL(t)
	wd, err := os.Getwd() // the relay's default folder, its one root
	if err != nil {
		t.Fatal(err)
	}
	h.typeIn("/new --worktree\n")
	h.waitFor("--worktree needs a folder")
	missing := filepath.Join(wd, "no such folder")
	h.typeIn("/new '" + missing + "'\n")
	h.typeIn("hello nowhere\n")
	h.waitFor("Not sent: ")
	h.waitFor("does not exist")
	if out := h.out.text(); strings.Contains(out, "Folder: "+missing) {
		t.Fatalf("the refused folder was announced:\n%s", out)
	}
	h.typeIn("/new .\n")
	h.typeIn("hello there\n")
	h.waitFor("hello there\n" + "Folder: " + wd + "\n")
	h.waitFor("Echo: hello there")

	h.typeIn("/list\n")
	h.waitFor("· " + wd)

	cl := h.srv.Dial(t)
	cl.Send("copilot:list", nil)
	list := cl.WaitFor("copilot:conversations", nil)
	found := false
	for _, e := range list.Field("conversations").([]any) {
		if w, _ := e.(map[string]any)["workspace"].(map[string]any); w != nil && w["path"] == wd && w["isolation"] == "none" {
			found = true
		}
	}
	if !found {
		t.Fatalf("no conversation in %s: %s", wd, list.Raw)
	}
}

// /new ~/DIR names DIR in the home folder, as the same words in a shell
// would (docs/workspaces.md's example): the prompt line has no shell to
// expand ~, so /new does it, and a ~ that is part of a name stays.
func TestNewExpandsHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("USERPROFILE", home) // os.UserHomeDir on Windows
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for arg, want := range map[string]string{
		"~":           home,
		"~/src/api":   filepath.Join(home, "src", "api"),
		"~user/x":     filepath.Join(wd, "~user", "x"),
		"notes~/x":    filepath.Join(wd, "notes~", "x"),
		"/abs/~/path": filepath.Clean("/abs/~/path"),
	} {
		ws, problem := workspaceArg([]string{arg})
		if problem != "" {
			t.Fatalf("/new %s: %s", arg, problem)
		}
		got := ws.Path
		if arg == "/abs/~/path" {
			want, _ = filepath.Abs(want)
		}
		if got != want {
			t.Errorf("/new %s: folder %q, want %q", arg, got, want)
		}
	}
}
