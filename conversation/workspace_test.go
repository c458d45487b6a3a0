package conversation

import (
	"testing"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// The folder chosen for a new conversation is what its first send names
// and what the list shows, until the relay says which it fixed; a
// conversation the relay knows takes no wish.
func TestWorkspaceFolder(t *testing.T) {
	t.Parallel()
	st := New("1a2b3c4d-e", Options{})
	if l, p := st.Folder(); l != "" || p != "" || st.Wanted() != nil {
		t.Fatalf("a new conversation names %q %q", l, p)
	}
	st.WantWorkspace(protocol.WorkspaceRequest{Path: "/src/api", Isolation: protocol.IsolationWorktree})
	if w := st.Wanted(); w == nil || w.Path != "/src/api" || !w.Worktree() {
		t.Fatalf("wanted %+v", w)
	}
	if l, _ := st.Folder(); l != "api · new worktree" {
		t.Fatalf("before the first send: %q", l)
	}
	st.Apply(client.Event{Type: protocol.TypeSubscribed, Data: &protocol.Subscribed{ConversationID: "1a2b3c4d-e", Mode: protocol.ModeAct,
		Workspace: &protocol.Workspace{Path: "/src/api", Isolation: protocol.IsolationWorktree, Dir: "/data/worktrees/x/api", Branch: "pilotdesk/1a2b3c4d"}}})
	if l, p := st.Folder(); l != "api · pilotdesk/1a2b3c4d" || p != "/data/worktrees/x/api" || st.Wanted() != nil {
		t.Fatalf("once fixed: %q %q, wanted %+v", l, p, st.Wanted())
	}
	st.WantWorkspace(protocol.WorkspaceRequest{Path: "/elsewhere"})
	if l, _ := st.Folder(); l != "api · pilotdesk/1a2b3c4d" {
		t.Fatalf("a wish changed a fixed folder: %q", l)
	}
	if got := FolderLabel(`C:\src\web\`, "", false); got != "web" {
		t.Fatalf("a Windows path's label %q", got)
	}
}

// TestDeleteText: the question before a delete says what goes and what
// stays: the history always, a worktree's branch stays, a folder's files
// stay.
func TestDeleteText(t *testing.T) {
	for _, c := range []struct {
		title string
		ws    *protocol.Workspace
		want  string
	}{
		{"", nil, "Delete “New conversation” and its history, on the relay and for every device? This cannot be undone."},
		{"fix the build", &protocol.Workspace{Path: "/src/api", Isolation: protocol.IsolationNone, Dir: "/src/api"},
			"Delete “fix the build” and its history, on the relay and for every device? This cannot be undone. The files in its folder, /src/api, stay as they are."},
		{"try it", &protocol.Workspace{Path: "/src/api", Isolation: protocol.IsolationWorktree, Dir: "/d/worktrees/api-1", Branch: "pilotdesk/1a2b3c4d"},
			"Delete “try it” and its history, on the relay and for every device? This cannot be undone. Its worktree's work is committed on its branch pilotdesk/1a2b3c4d, which stays in the repository; the worktree's folder is removed."},
	} {
		if got := DeleteText(c.title, c.ws); got != c.want {
			t.Errorf("DeleteText(%q, %+v) =\n%q\nwant\n%q", c.title, c.ws, got, c.want)
		}
	}
}
