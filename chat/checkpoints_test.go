package chat

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/checkpoint"
	"github.com/pilotdesk/pilotdesk/session/script"
)

// /changes, /diff N and /restore N against a real relay whose scripted
// agent changes files: the turn's changes are printed, the diff too, and a
// restore asks first, names the files, and prints its undo checkpoint,
// which /undo restores.
func TestChangesDiffRestoreCommands(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.md"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := startCheckpointREPL(t, dir, `{"turns": [{"steps": [
		{"tool": {"name": "edit", "write": {"path": "notes.md", "content": "new\n"}}},
		{"tool": {"name": "edit", "write": {"path": "added.txt", "content": "a\nb\n"}}},
		{"delta": "Edited."}]}]}`)

	h.typeIn("/changes\n")
	h.waitFor("No turn of this conversation changed files yet.")
	h.typeIn("/undo\n")
	h.waitFor("Nothing to undo: no restore of this conversation yet.")
	h.typeIn("edit the notes\n")
	h.waitFor("2 files changed +3 −1 (/diff 1, /restore 1)")
	h.typeIn("/changes\n")
	h.waitFor("1. 2 files changed +3 −1 (checkpoint ")
	h.waitFor("   A added.txt +2 −0\n   M notes.md +1 −1\n")
	h.typeIn("/diff 1 notes.md\n")
	h.waitFor("-old\n+new\n")
	h.typeIn("/restore 1\n")
	h.waitFor("   added.txt (removed)\n   notes.md (rewritten)\n")
	h.waitFor("Restore? [y/N]")
	h.typeIn("n\n")
	h.waitFor("Not restored.")
	h.typeIn("/restore 1\n")
	h.waitFor("Restore? [y/N]")
	h.typeIn("y\n")
	h.waitFor("Files restored to checkpoint ")
	h.waitFor("/undo undoes the last restore (its undo checkpoint: ")
	if b, _ := os.ReadFile(filepath.Join(dir, "notes.md")); string(b) != "old\n" {
		t.Fatalf("notes.md is %q after the restore", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "added.txt")); err == nil {
		t.Fatal("added.txt is still there")
	}

	// /undo puts back what the restore changed, at once as the window's
	// Undo does, and is itself the last restore: /undo again undoes it.
	h.typeIn("/undo\n")
	h.waitFor("Files restored to checkpoint ")
	h.waitFor("/undo undoes the last restore")
	if b, _ := os.ReadFile(filepath.Join(dir, "notes.md")); string(b) != "new\n" {
		t.Fatalf("notes.md is %q after /undo", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "added.txt")); string(b) != "a\nb\n" {
		t.Fatalf("added.txt is %q after /undo", b)
	}
	h.typeIn("/undo\n")
	h.waitFor("Files restored to checkpoint ")
	h.waitFor("/undo undoes the last restore")
	if b, _ := os.ReadFile(filepath.Join(dir, "notes.md")); string(b) != "old\n" {
		t.Fatalf("notes.md is %q after the second /undo", b)
	}
}

// A folder or a file with spaces in its name can be named on the prompt
// line: /new "DIR" in quotes, /diff N PATH with PATH in quotes or as the
// rest of the line, as /changes prints it. Split at every space, /new
// said its usage and /diff too, so neither could be reached.
func TestCommandsTakeNamesWithSpaces(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "my project")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	h := startCheckpointREPL(t, root, `{"turns": [{"steps": [
		{"tool": {"name": "edit", "write": {"path": "my  notes.md", "content": "new\n"}}},
		{"delta": "Edited {{workspace}}."}]}]}`)

	h.typeIn("/new \"" + dir + "\n")
	h.waitFor("is not closed")
	h.typeIn("/new \"" + dir + "\"\n")
	h.typeIn("edit the notes\n")
	h.waitFor("Folder: " + dir + "\n")
	h.waitFor("Edited " + dir + ".")
	h.waitFor("1 file changed +1 −0 (/diff 1, /restore 1)")
	h.typeIn("/diff 1 my  notes.md\n")
	h.waitFor("act> /diff 1 my  notes.md\n" + "diff --git a/my  notes.md b/my  notes.md\n")
	h.typeIn("/diff 1 'my  notes.md'\n")
	h.waitFor("+new\n" + "act> /diff 1 'my  notes.md'\n" + "diff --git a/my  notes.md b/my  notes.md\n")
}

// commandWords splits at spaces, keeps a quoted word whole, and leaves a
// quote inside a word and a backslash as they are.
func TestCommandWords(t *testing.T) {
	for line, want := range map[string][]string{
		`/new "~/my project" --worktree`: {"/new", "~/my project", "--worktree"},
		`/diff 2 'a "b" c.txt'`:          {"/diff", "2", `a "b" c.txt`},
		`/diff  2   don't.txt `:          {"/diff", "2", "don't.txt"},
		`/new C:\Users\me\src`:           {"/new", `C:\Users\me\src`},
		`/diff 1 "it"s.txt"`:             {"/diff", "1", `it"s.txt`},
	} {
		got, problem := commandWords(line)
		if problem != "" || !slices.Equal(got, want) {
			t.Errorf("commandWords(%q) = %q, %q; want %q", line, got, problem, want)
		}
	}
	if _, problem := commandWords(`/new "~/my project`); problem == "" {
		t.Error("an unclosed quote is no problem")
	}
}

// /undo after turns that changed files since the restore would undo them
// too (the folder goes back to what it held before the restore): it names
// their files and asks first, where it wiped them at once.
func TestUndoAsksWhenTurnsChangedFilesSince(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.md"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := startCheckpointREPL(t, dir, `{"turns": [
		{"match": "later", "steps": [{"tool": {"name": "edit", "write": {"path": "later.txt", "content": "kept\n"}}}, {"delta": "Later."}]},
		{"steps": [{"tool": {"name": "edit", "write": {"path": "notes.md", "content": "new\n"}}}, {"delta": "Edited."}]}]}`)

	h.typeIn("edit the notes\n")
	h.waitFor("1 file changed +1 −1 (/diff 1, /restore 1)")
	h.typeIn("/restore 1\n")
	h.waitFor("Restore? [y/N]")
	h.typeIn("y\n")
	h.waitFor("/undo undoes the last restore")
	h.typeIn("later work\n")
	h.waitFor("1 file changed +1 −0 (/diff 2, /restore 2)")
	h.typeIn("/undo\n")
	h.waitFor("so it also undoes them:\n   later.txt (removed)\n")
	h.waitFor("Undo? [y/N]")
	h.typeIn("n\n")
	h.waitFor("Not undone.")
	if b, _ := os.ReadFile(filepath.Join(dir, "later.txt")); string(b) != "kept\n" {
		t.Fatalf("later.txt is %q after an undo answered no", b)
	}
	h.typeIn("/undo\n")
	h.waitFor("Undo? [y/N]")
	h.typeIn("y\n")
	h.waitFor("Files restored to checkpoint ")
	if b, _ := os.ReadFile(filepath.Join(dir, "notes.md")); string(b) != "new\n" {
		t.Fatalf("notes.md is %q after the undo", b)
	}
}

// startCheckpointREPL is a REPL on a relay whose scripted agent plays
// scenario in workDir, with checkpoints (skipped without git).
func startCheckpointREPL(t *testing.T, workDir, scenario string) *relayHarness {
	t.Helper()
	sc, err := script.Parse("s", []byte(scenario))
	if err != nil {
		t.Fatal(err)
	}
	cps, err := checkpoint.New(t.TempDir())
	if err != nil {
		t.Skip(err)
	}
	return startREPLOn(t, relay.Config{Agent: script.New(sc), Checkpoints: cps, WorkDir: workDir})
}

// A diff the relay cut says so in the words of every front end
// (conversation.DiffCut), where the terminal had its own.
func TestDiffCutSaysSo(t *testing.T) {
	h := startREPL(t, plain, nil)
	h.subscribed(nil)
	h.emit(protocol.TypeDiff, map[string]any{"checkpoint": "815da21a0000000000000000000000000000aaaa",
		"files": []map[string]any{{"path": "big.txt", "status": "modified", "patch": "@@ -1 +1 @@\n-a\n+b\n", "truncated": true}}})
	h.waitFor("+b")
	h.waitFor(conversation.DiffCut)
}
