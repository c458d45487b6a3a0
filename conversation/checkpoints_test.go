package conversation

import (
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
	if got, want := st.Rows[1].Text, "Files restored to checkpoint aaaaaaaa: 1 changed, 1 left as they are (over 10 MiB). Undo: restore checkpoint cccccccc."; got != want {
		t.Fatalf("restored note %q, want %q", got, want)
	}
	if got := FileChangeText(protocol.ChangedFile{Path: "c.png", Status: protocol.FileDeleted, Binary: true}); got != "D c.png (binary)" {
		t.Fatalf("file line %q", got)
	}
}
