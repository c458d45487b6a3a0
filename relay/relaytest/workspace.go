package relaytest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/uuid"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// WorkspaceEdit is an Act turn in which a real agent changes one file of a
// conversation's own folder (docs/workspaces.md, docs/checkpoints.md): the
// end-to-end tests of the Copilot CLI and of an ACP agent make it the same
// way, each with its mock model answering Prompt with a tool that writes
// File.
type WorkspaceEdit struct {
	Dir    string // the conversation's workspace, not the relay's default folder
	Prompt string // what makes the agent change File
	File   string // relative to Dir
	// Before is File's content before the turn (the test writes it),
	// After what the agent writes; Additions and Deletions the line
	// counts copilot:changes must give.
	Before, After        string
	Additions, Deletions int
}

// CheckWorkspaceEdit runs e in a new conversation whose first send names
// e.Dir as its workspace, on a relay with checkpoints, and checks: the
// agent's tool changed the file there (not in the relay's default folder,
// defaultDir); copilot:changes names it with its counts and is the turn's
// last event before copilot:idle; copilot:restore of the turn's checkpoint
// puts the file back as it was. It returns the changes.
func CheckWorkspaceEdit(t testing.TB, s *Server, defaultDir string, e WorkspaceEdit) protocol.Changes {
	t.Helper()
	path := filepath.Join(e.Dir, e.File)
	if err := os.WriteFile(path, []byte(e.Before), 0o644); err != nil {
		t.Fatal(err)
	}
	cl := s.Dial(t)
	conv := uuid.NewString()
	isConv := func(f Frame) bool { return f.Field("conversationId") == conv }
	cl.Send(protocol.TypeSend, map[string]any{"conversationId": conv, "prompt": e.Prompt, "mode": "act",
		"workspace": map[string]any{"path": e.Dir}})
	// A real agent's turn (a Node program, a model call to a loopback
	// mock, a tool) takes seconds on a quiet machine and more than
	// Timeout on a busy one.
	idle, frames := cl.WaitForCollectWithin(4*Timeout, protocol.TypeIdle, isConv)
	if idle.Field("status") != "completed" {
		t.Fatalf("the edit turn ended %s", idle.Raw)
	}
	var mine []Frame
	for _, f := range frames {
		if isConv(f) {
			mine = append(mine, f)
		}
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != e.After {
		t.Fatalf("%s after the turn: %q (%v), want %q", path, got, err, e.After)
	}
	if _, err := os.Stat(filepath.Join(defaultDir, e.File)); err == nil {
		t.Fatalf("the agent wrote %s in the relay's default folder %s, not in the conversation's", e.File, defaultDir)
	}
	if len(mine) == 0 || mine[len(mine)-1].Type != protocol.TypeChanges {
		types := make([]string, 0, len(mine))
		for _, f := range mine {
			types = append(types, f.Type)
		}
		t.Fatalf("the turn's last event before copilot:idle is not copilot:changes: %v", types)
	}
	var ch protocol.Changes
	mine[len(mine)-1].Decode(t, &ch)
	want := protocol.ChangedFile{Path: e.File, Status: "modified", Additions: e.Additions, Deletions: e.Deletions}
	if len(ch.Files) != 1 || ch.Files[0] != want || ch.Checkpoint == "" || ch.After == "" {
		t.Fatalf("copilot:changes %s, want the one file %+v", mine[len(mine)-1].Raw, want)
	}

	cl.Send(protocol.TypeRestore, map[string]any{"conversationId": conv, "checkpoint": ch.Checkpoint})
	var restored protocol.Restored
	cl.WaitFor(protocol.TypeRestored, isConv).Decode(t, &restored)
	if got, err := os.ReadFile(path); err != nil || string(got) != e.Before {
		t.Fatalf("%s after copilot:restore: %q (%v), want %q back", path, got, err, e.Before)
	}
	if restored.Undo == "" || len(restored.Files) != 1 || restored.Files[0].Path != e.File {
		t.Fatalf("copilot:restored %+v, want the file and an undo checkpoint", restored)
	}
	return ch
}
