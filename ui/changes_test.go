package ui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/checkpoint"
	"github.com/pilotdesk/pilotdesk/session/script"
)

// changesHarness is a window on a relay that snapshots dir, whose scripted
// agent rewrites notes.md and adds added.txt in every turn.
func changesHarness(t *testing.T, size fyne.Size) (*harness, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.md"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := script.Parse("s", []byte(`{"turns": [{"steps": [
		{"tool": {"name": "edit", "write": {"path": "notes.md", "content": "new\n"}}},
		{"tool": {"name": "edit", "write": {"path": "added.txt", "content": "a\nb\n"}}},
		{"delta": "Edited the notes."}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	cps, err := checkpoint.New(t.TempDir())
	if err != nil {
		t.Skip(err) // no git
	}
	h := newHarness(t, harnessConfig{size: size, relay: relay.Config{Agent: script.New(sc), Checkpoints: cps, WorkDir: dir}})
	return h, dir
}

// cardRow is the index of the last changes card.
func cardRow(h *harness) int {
	rows := h.rows()
	for i := len(rows) - 1; i >= 0; i-- {
		if rows[i].Changes() != nil {
			return i
		}
	}
	return -1
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return string(b)
}

// TestChangesCard: an Act turn that changed files ends with a card that
// lists them with their counts; a file opens to its diff, fetched from the
// relay; Restore asks first, naming what it changes, then puts the files
// back; the restore's notice offers Undo, which puts them back again and
// then says Undone. A viewer's window shows neither button.
func TestChangesCard(t *testing.T) {
	h, dir := changesHarness(t, fyne.NewSize(1000, 900))
	h.send("edit the notes")
	h.waitFor("the changes card", func() bool { return cardRow(h) >= 0 && completedTurns(h) == 1 })
	h.frame()
	i := cardRow(h)
	card := h.shownRowOf(i).changes
	if card == nil || h.shownRowOf(i).cur != card.obj {
		t.Fatalf("row %d is not drawn as a card:\n%s", i, h.dump())
	}
	got := shownText(card.obj)
	for _, want := range []string{"2 files changed +3 −1", "A  added.txt", "M  notes.md", "Restore files to before this turn…"} {
		if !strings.Contains(got, want) {
			t.Fatalf("the card lacks %q:\n%s", want, got)
		}
	}
	if a, m := card.lines[0].counts.text(), card.lines[1].counts.text(); a != "+2 −0" || m != "+1 −1" {
		t.Fatalf("the files' counts are %q and %q", a, m)
	}

	// notes.md is the second file (the relay lists them by path).
	test.Tap(card.lines[1].open)
	h.waitFor("the diff of notes.md", func() bool {
		c := h.rows()[i].Card()
		return c != nil && c.Patches["notes.md"].Patch != ""
	})
	h.frame()
	card = h.shownRowOf(i).changes
	if got := shownText(card.lines[1].body); !strings.Contains(got, "- old") || !strings.Contains(got, "+ new") {
		t.Fatalf("the open file shows:\n%s", got)
	}
	if c := h.w.Window().Canvas().Focused(); c != h.w.composer {
		t.Fatalf("a click on a file left the keyboard on %T", c)
	}

	test.Tap(card.restore)
	h.frame()
	c := h.w.restoring
	if c == nil {
		t.Fatal("Restore asked nothing")
	}
	for _, want := range []string{"added.txt  (removed)", "notes.md  (rewritten)", "can be undone"} {
		if !strings.Contains(c.text, want) {
			t.Fatalf("the confirmation lacks %q:\n%s", want, c.text)
		}
	}
	if readFile(t, filepath.Join(dir, "notes.md")) != "new\n" {
		t.Fatal("the folder changed before the restore was confirmed")
	}
	// Escape cancels, as Cancel does (the keyboard is the canvas's).
	if f := h.w.Window().Canvas().Focused(); f != nil {
		t.Fatalf("the keyboard is on %T in the confirmation, which then gets Escape", f)
	}
	h.w.Window().Canvas().OnTypedKey()(&fyne.KeyEvent{Name: fyne.KeyEscape})
	h.frame()
	if h.w.restoring != nil || readFile(t, filepath.Join(dir, "notes.md")) != "new\n" {
		t.Fatal("Escape did not cancel the restore, or restored")
	}
	test.Tap(card.restore)
	h.frame()
	c = h.w.restoring
	test.Tap(c.ok)
	h.waitFor("the restore's notice", func() bool { r := h.lastRow(conversation.RowNote); return r.Restored() != nil })
	if got := readFile(t, filepath.Join(dir, "notes.md")); got != "old\n" {
		t.Fatalf("notes.md is %q after the restore", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "added.txt")); err == nil {
		t.Fatal("added.txt is still there after the restore")
	}
	h.frame()
	notice := len(h.rows()) - 1
	line := h.shownRowOf(notice).line
	if !line.undo.Visible() || line.undo.Disabled() || !strings.Contains(line.text.Text, "Files restored to checkpoint") {
		t.Fatalf("the notice says %q, Undo shown %v", line.text.Text, line.undo.Visible())
	}
	// make screenshots (-update) photographs the card and the notice.
	(&shooter{t: t, variant: "dark"}).shot(h, "restore-undo")
	test.Tap(line.undo)
	h.waitFor("the undo", func() bool { c := h.rows()[notice].Card(); return c != nil && c.Undone })
	if got := readFile(t, filepath.Join(dir, "notes.md")); got != "new\n" {
		t.Fatalf("notes.md is %q after the undo", got)
	}
	h.frame()
	if u := h.shownRowOf(notice).line.undo; u.Text != "Undone" || !u.Disabled() {
		t.Fatalf("after the undo its button says %q (disabled %v)", u.Text, u.Disabled())
	}

	// A viewer may read the diffs but restores nothing.
	h.w.store.Apply(client.Event{Type: protocol.TypeConversations, Data: &protocol.Conversations{Role: protocol.RoleViewer}})
	h.frame()
	if h.shownRowOf(i).changes.restore.Visible() {
		t.Fatal("a viewer's card offers Restore")
	}
	if n := len(h.rows()) - 1; h.shownRowOf(n).line.undo.Visible() {
		t.Fatal("a viewer's notice offers Undo")
	}
}

// TestCheckpointsOffSaidOnce: that checkpoints are off is said once in the
// window's chrome, in a notice: at start when the app's relay records none
// (no git), or when a turn's snapshot fails (here a data dir the relay
// cannot write), not again for the next failure.
func TestCheckpointsOffSaidOnce(t *testing.T) {
	const why = "checkpoints are off: the git command was not found (install git to record and undo what each turn changes)"
	h := newHarness(t, harnessConfig{options: Options{CheckpointsOff: why}})
	if n := h.w.notice; n == nil || n.id != checkpointsNoticeID || !strings.HasPrefix(strings.ReplaceAll(n.body.String(), zeroWidth, ""), "Checkpoints are off: the git command was not found") {
		t.Fatalf("no notice that checkpoints are off at start: %+v", n)
	}
	h.w.dismissNotice(checkpointsNoticeID)
	h.w.showStartNotices()
	if h.w.notice != nil {
		t.Fatalf("said twice: %q", h.w.notice.title.Text)
	}

	// A relay whose snapshots fail: its data dir is under a file.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cps, err := checkpoint.New(filepath.Join(file, "data"))
	if err != nil {
		t.Skip(err)
	}
	h = newHarness(t, harnessConfig{relay: relay.Config{Checkpoints: cps, WorkDir: t.TempDir()}})
	if h.w.notice != nil {
		t.Fatalf("a notice before any turn: %q", h.w.notice.title.Text)
	}
	h.send("markdown")
	h.waitFor("the notice of the failed snapshot", func() bool {
		return h.w.notice != nil && h.w.notice.id == checkpointsNoticeID && completedTurns(h) == 1
	})
	if body := strings.ReplaceAll(h.w.notice.body.String(), zeroWidth, ""); !strings.HasPrefix(body, "This turn's changes are not recorded (no checkpoint): ") {
		t.Fatalf("notice %q", body)
	}
	if !strings.Contains(h.dump(), protocol.NoCheckpoint) {
		t.Fatalf("the conversation does not say it:\n%s", h.dump())
	}
	h.w.dismissNotice(checkpointsNoticeID)
	h.w.newConversation()
	h.send("markdown")
	h.waitFor("the second conversation's turn", func() bool { return completedTurns(h) == 1 && strings.Contains(h.dump(), protocol.NoCheckpoint) })
	h.frame()
	if h.w.notice != nil {
		t.Fatalf("said twice: %q", h.w.notice.title.Text)
	}
}

// TestUndoAsksWhenTurnsChangedFilesSince: Undo of a restore after a turn
// that changed files since asks first, naming them (the undo takes them
// back too: the folder goes back to what it held before the restore), and
// undoes nothing until confirmed; with no such turn it undoes at once
// (TestChangesCard).
func TestUndoAsksWhenTurnsChangedFilesSince(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.md"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := script.Parse("s", []byte(`{"turns": [
		{"match": "later", "steps": [{"tool": {"name": "edit", "write": {"path": "later.txt", "content": "kept\n"}}}, {"delta": "Later."}]},
		{"steps": [{"tool": {"name": "edit", "write": {"path": "notes.md", "content": "new\n"}}}, {"delta": "Edited."}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	cps, err := checkpoint.New(t.TempDir())
	if err != nil {
		t.Skip(err) // no git
	}
	h := newHarness(t, harnessConfig{size: fyne.NewSize(1000, 900), relay: relay.Config{Agent: script.New(sc), Checkpoints: cps, WorkDir: dir}})
	h.send("edit the notes")
	h.waitFor("the changes card", func() bool { return cardRow(h) >= 0 && completedTurns(h) == 1 })
	h.frame()
	test.Tap(h.shownRowOf(cardRow(h)).changes.restore)
	h.frame()
	test.Tap(h.w.restoring.ok)
	h.waitFor("the restore's notice", func() bool { return h.lastRow(conversation.RowNote).Restored() != nil })
	notice := len(h.rows()) - 1
	h.send("later")
	h.waitFor("the later turn's card", func() bool { return cardRow(h) > notice && completedTurns(h) == 2 })
	h.frame()

	test.Tap(h.shownRowOf(notice).line.undo)
	h.frame()
	c := h.w.restoring
	if c == nil {
		t.Fatal("Undo asked nothing after a turn that changed files since the restore")
	}
	if !strings.HasPrefix(c.text, conversation.UndoQuestion) || !strings.Contains(c.text, "later.txt  (removed)") {
		t.Fatalf("the question:\n%s", c.text)
	}
	if readFile(t, filepath.Join(dir, "later.txt")) != "kept\n" || readFile(t, filepath.Join(dir, "notes.md")) != "old\n" {
		t.Fatal("the folder changed before the undo was confirmed")
	}
	test.Tap(c.ok)
	h.waitFor("the undo", func() bool { c := h.rows()[notice].Card(); return c != nil && c.Undone })
	if got := readFile(t, filepath.Join(dir, "notes.md")); got != "new\n" {
		t.Fatalf("notes.md is %q after the undo", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "later.txt")); err == nil {
		t.Fatal("later.txt is still there after the undo it was named in")
	}
}

// A file whose diff has no lines says why, in the words of every front
// end (conversation.NoLinesText): a change of its mode alone names the
// modes, where it said "No lines changed (a mode or an empty file)"; one
// with no diff at all says how to ask again, where it said "No diff yet.".
func TestFileDiffSaysWhyItHasNoLines(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	for _, tc := range []struct {
		f     protocol.ChangedFile
		patch string
		want  string
	}{
		{protocol.ChangedFile{Path: "run.sh", Status: protocol.FileModified}, "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n", "Mode changed: 100644 → 100755"},
		{protocol.ChangedFile{Path: "logo.png", Status: protocol.FileModified, Binary: true}, "", "A binary file: no diff to show."},
		{protocol.ChangedFile{Path: "empty", Status: protocol.FileAdded}, "diff --git a/empty b/empty\nnew file mode 100644\nindex 0000000..e69de29\n", "An empty file, added: no lines to show."},
	} {
		card := &conversation.Card{Patches: map[string]protocol.FilePatch{tc.f.Path: {Path: tc.f.Path, Patch: tc.patch}}}
		objs := fileDiff("cp", tc.f, card, toolOpened, h.w.transcript)
		if len(objs) != 1 || strings.TrimSpace(shownText(objs[0])) != tc.want {
			t.Errorf("%s: the open file says %q, want %q", tc.f.Path, shownText(objs[0]), tc.want)
		}
	}
	// A file whose diff the relay refused has none, nor one on its way:
	// it says how to ask again (the page says the same, words.js NO_DIFF).
	f := protocol.ChangedFile{Path: "main.go", Status: protocol.FileModified}
	objs := fileDiff("cp", f, &conversation.Card{Error: "no such checkpoint"}, toolOpened, h.w.transcript)
	if want := "No diff yet: close the file and open it again to ask for it."; len(objs) != 1 || strings.TrimSpace(shownText(objs[0])) != want {
		t.Errorf("a refused diff: the open file says %q, want %q", shownText(objs[0]), want)
	}
}
