package conversation

import (
	"slices"
	"strings"
	"testing"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// A turn's copilot:changes is a note row that carries its change set, and
// the conversation's checkpoints are those rows' change sets, in order; a
// copilot:restored is a note naming its undo.
func TestChangesRows(t *testing.T) {
	t.Parallel()
	st := New("c", Options{})
	ch := &protocol.Changes{Header: protocol.Header{ConversationID: "c", Seq: 1}, MessageID: "m", Checkpoint: "aaaaaaaaaa", After: "bbbbbbbbbb",
		Files: []protocol.ChangedFile{{Path: "a.go", Status: protocol.FileModified, Additions: 10, Deletions: 4}, {Path: "b.go", Status: protocol.FileAdded, Additions: 2}, {Path: "c.png", Status: protocol.FileDeleted, Binary: true}}}
	st.Apply(client.Event{Type: protocol.TypeChanges, Data: ch})
	ch.Files[0].Path = "changed later" // the fold keeps a copy
	st.Apply(client.Event{Type: protocol.TypeRestored, Data: &protocol.Restored{Header: protocol.Header{ConversationID: "c", Seq: 2}, Checkpoint: "aaaaaaaaaa", Undo: "cccccccccc",
		Files: []protocol.ChangedFile{{Path: "a.go", Status: protocol.FileModified}, {Path: "big", Status: protocol.FileSkipped}}}})
	if len(st.Rows) != 2 || st.Rows[0].Text != "3 files changed +12 −4" || st.Rows[0].Kind != RowNote {
		t.Fatalf("rows %+v", st.Rows)
	}
	if cps := st.Checkpoints(); len(cps) != 1 || cps[0].Checkpoint != "aaaaaaaaaa" || cps[0].Files[0].Path != "a.go" {
		t.Fatalf("checkpoints %+v", cps)
	}
	if got, want := st.Rows[1].Text, "Files restored to checkpoint aaaaaaaa: 1 changed, 1 left as they are (over 10 MiB)."; got != want {
		t.Fatalf("restored note %q, want %q", got, want)
	}
	if got := FileChangeText(protocol.ChangedFile{Path: "c.png", Status: protocol.FileDeleted, Binary: true}); got != "D c.png (binary)" {
		t.Fatalf("file line %q", got)
	}
}

// A changes card keeps the diffs asked for: AskDiff marks a file loading
// once (a second ask, or one for a diff held, sends nothing), the reply
// fills it in a new Card (a renderer's copy keeps the old one), a refused
// diff says why; a restore asked for is marked on its card until the
// relay's copilot:restored, whose notice's Undo, restored in turn, marks
// it undone.
func TestChangesCard(t *testing.T) {
	t.Parallel()
	st := New("c", Options{})
	hdr := protocol.Header{ConversationID: "c"}
	st.Apply(client.Event{Type: protocol.TypeChanges, Data: &protocol.Changes{Header: hdr, Checkpoint: "c1", After: "c2",
		Files: []protocol.ChangedFile{{Path: "a.go", Status: protocol.FileModified, Additions: 1, Deletions: 1}, {Path: "img.png", Status: protocol.FileAdded, Binary: true}}}})
	if !st.AskDiff("c1", "a.go") || st.AskDiff("c1", "a.go") || st.AskDiff("nope", "a.go") {
		t.Fatal("AskDiff: want true once for a card's file, then false")
	}
	before := st.Rows[0]
	if !before.Card().Loading["a.go"] {
		t.Fatalf("card %+v: a.go not loading", before.Card())
	}
	u := st.Apply(client.Event{Type: protocol.TypeDiff, Data: &protocol.DiffReply{ConversationID: "c", Checkpoint: "c1",
		Files: []protocol.FilePatch{{Path: "a.go", Status: protocol.FileModified, Patch: "diff --git a/a.go b/a.go\nindex 1..2 100644\n--- a/a.go\n+++ b/a.go\n@@ -1 +1 @@\n-old\n+new\n\\ No newline at end of file\n"}}}})
	if len(u.Rows) != 1 || u.Rows[0] != 0 {
		t.Fatalf("the diff changed rows %v, want the card's", u.Rows)
	}
	c := st.Rows[0].Card()
	if c.Loading["a.go"] || c.Patches["a.go"].Patch == "" || !before.Card().Loading["a.go"] {
		t.Fatalf("after the reply: card %+v, the copy before it %+v", c, before.Card())
	}
	lines := PatchLines(c.Patches["a.go"].Patch)
	if len(lines) != 4 || lines[0].Op != '@' || lines[1] != (DiffLine{'-', "old"}) || lines[2] != (DiffLine{'+', "new"}) || lines[3].Op != '@' {
		t.Fatalf("patch lines %+v", lines)
	}
	if st.AskDiff("c1", "a.go") {
		t.Fatal("a diff held was asked for again")
	}
	st.AskDiff("c1", "img.png")
	st.Apply(client.Event{Type: protocol.TypeError, Data: &protocol.Error{Code: protocol.CodeInvalidField, Type: protocol.TypeDiff, ConversationID: "c", Message: "unknown checkpoint"}})
	if c := st.Rows[0].Card(); c.Error != "unknown checkpoint" || c.Loading["img.png"] || len(st.Rows) != 1 {
		t.Fatalf("after a refused diff: card %+v, %d rows", c, len(st.Rows))
	}

	st.MarkRestoring("c1")
	if !st.Rows[0].Card().Restoring {
		t.Fatal("the card is not restoring")
	}
	st.Apply(client.Event{Type: protocol.TypeError, Data: &protocol.Error{Code: protocol.CodeConversationBusy, Type: protocol.TypeRestore, ConversationID: "c", Message: "a turn runs"}})
	if st.Rows[0].Card().Restoring || st.Rows[1].Text != "The relay refused the request: a turn runs" {
		t.Fatalf("after a refused restore: card %+v, rows %+v", st.Rows[0].Card(), st.Rows[1:])
	}
	st.MarkRestoring("c1")
	st.Apply(client.Event{Type: protocol.TypeRestored, Data: &protocol.Restored{Header: hdr, Checkpoint: "c1", Undo: "u1", Files: []protocol.ChangedFile{{Path: "a.go", Status: protocol.FileModified}}}})
	notice := len(st.Rows) - 1
	if st.Rows[0].Card().Restoring || st.Rows[notice].Restored() == nil || st.Rows[notice].Restored().Undo != "u1" {
		t.Fatalf("after the restore: card %+v, notice %+v", st.Rows[0].Card(), st.Rows[notice])
	}
	st.MarkRestoring("u1")
	if !st.Rows[notice].Card().Restoring {
		t.Fatal("the notice's Undo is not marked")
	}
	st.Apply(client.Event{Type: protocol.TypeRestored, Data: &protocol.Restored{Header: hdr, Checkpoint: "u1", Undo: "u2"}})
	if c := st.Rows[notice].Card(); c.Restoring || !c.Undone {
		t.Fatalf("after the undo: notice card %+v", c)
	}
}

// RestoreEffects names each file the turn and later turns touched, once,
// with what a restore to the turn's checkpoint does to it.
func TestRestoreEffects(t *testing.T) {
	t.Parallel()
	st := New("c", Options{})
	turn := func(cp string, files ...protocol.ChangedFile) {
		st.Apply(client.Event{Type: protocol.TypeChanges, Data: &protocol.Changes{Header: protocol.Header{ConversationID: "c"}, Checkpoint: cp, Files: files}})
	}
	f := func(p, status string) protocol.ChangedFile { return protocol.ChangedFile{Path: p, Status: status} }
	turn("t0", f("before.go", protocol.FileModified))
	turn("t1", f("new.go", protocol.FileAdded), f("gone.go", protocol.FileDeleted), f("mod.go", protocol.FileModified), f("tmp.go", protocol.FileAdded))
	turn("t2", f("tmp.go", protocol.FileDeleted), f("mod.go", protocol.FileDeleted), f("gone.go", protocol.FileAdded))
	got := st.RestoreEffects("t1")
	want := []RestoreItem{{"gone.go", EffectRewritten}, {"mod.go", EffectBroughtBack}, {"new.go", EffectRemoved}}
	if !slices.Equal(got, want) {
		t.Fatalf("RestoreEffects(t1) = %v, want %v", got, want)
	}
	// A file over 10 MiB (large) is left as it is: no snapshot has its
	// content. One made and removed since is not named at all.
	large := func(p, status string) protocol.ChangedFile {
		return protocol.ChangedFile{Path: p, Status: status, Binary: true, Large: true}
	}
	turn("t3", large("big.bin", protocol.FileAdded), large("tmp.bin", protocol.FileAdded), f("video.mp4", protocol.FileModified))
	turn("t4", large("video.mp4", protocol.FileModified), large("tmp.bin", protocol.FileDeleted))
	got = st.RestoreEffects("t3")
	want = []RestoreItem{{"big.bin", EffectLeftAsIs}, {"video.mp4", EffectLeftAsIs}}
	if !slices.Equal(got, want) {
		t.Fatalf("RestoreEffects(t3) = %v, want %v", got, want)
	}
	if got := RestoreCaveat([]string{"Fix the build"}); !strings.HasPrefix(got, `Another conversation works in this folder ("Fix the build")`) {
		t.Fatalf("caveat %q", got)
	}
}
