package chat

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/relay/workspace"
	"github.com/pilotdesk/pilotdesk/session/script"
)

// /delete deletes the conversation on the relay after a y/N confirmation
// that says what goes: the relay's list no longer has it, and the
// terminal goes on in a new conversation. Before, no front end could
// delete a conversation.
func TestDeleteCommand(t *testing.T) {
	h := startRelayREPL(t)
	h.typeIn("/delete\n")
	h.waitFor("Nothing to delete: the relay does not know this conversation yet")
	h.typeIn("hello there\n")
	h.waitFor("Echo: hello there")
	h.typeIn("/delete\n")
	h.waitFor("and its history, on the relay and for every device? This cannot be undone.")
	h.waitFor("Delete? [y/N]")
	h.typeIn("n\n")
	h.waitFor("Not deleted.")
	if !h.listed(testConv) {
		t.Fatal("the conversation is gone after n")
	}
	h.typeIn("/delete\n")
	h.waitFor("Delete? [y/N]")
	h.typeIn("y\n")
	h.waitFor("This conversation was deleted on the relay. Starting a new one.")
	if h.listed(testConv) {
		t.Fatal("the relay still lists the deleted conversation")
	}
}

// listed reports whether the relay's list holds conversation id.
func (h *relayHarness) listed(id string) bool {
	cl := h.srv.Dial(h.t)
	cl.Send("copilot:list", nil)
	return strings.Contains(string(cl.WaitFor("copilot:conversations", nil).Raw), id)
}

// /delete of a conversation this terminal started in a worktree names its
// branch and, once a turn left files its .gitignore ignores there, says
// they are lost: the list's notices (client.Watch) keep the fold's entry
// as of the last turn, where the terminal knew no more of a conversation
// it started than its subscription said before its first prompt (no
// folder at all).
func TestDeleteSaysAWorktreeLosesItsIgnoredFiles(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	home := t.TempDir()
	repo := filepath.Join(home, "project")
	for _, args := range [][]string{{"init", "-q", "-b", "main", repo}, {"-C", repo, "commit", "-q", "--allow-empty", "-m", "first"}} {
		cmd := exec.Command("git", args...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	ws, err := workspace.New(workspace.Options{Roots: []string{home}, Default: home, WorktreeDir: filepath.Join(t.TempDir(), "worktrees")})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := script.Parse("build", []byte(`{"turns": [{"steps": [
		{"tool": {"name": "bash", "arguments": {"command": "make"}, "run": "printf '*.log\\n' > .gitignore && echo built > build.log"}},
		{"delta": "Built."}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	h := startREPLOn(t, relay.Config{Agent: script.New(sc), Workspaces: ws})
	h.typeIn("/new " + repo + " --worktree\n")
	h.typeIn("build it\n")
	h.waitFor("usage: none reported for this turn")
	// The list's notice of the turn's end comes within 100 ms of it:
	// asked until the confirmation says it, or 30 s.
	deadline := time.Now().Add(relaytest.Timeout)
	for {
		from := len(h.out.text())
		h.typeIn("/delete\n")
		h.waitFor("Delete? [y/N]")
		h.typeIn("n\n")
		h.waitFor("Not deleted.")
		said := h.out.text()[from:]
		if strings.Contains(said, conversation.DeleteLosesIgnored) {
			if !strings.Contains(said, "Its worktree's work is committed on its branch pilotdesk/") {
				t.Fatalf("the confirmation does not name the worktree's branch:\n%s", said)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/delete never said the worktree's ignored files are lost:\n%s", said)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if strings.Contains(h.out.text(), "No conversations yet.") {
		t.Fatalf("the list's first page was shown unasked:\n%s", h.out.text())
	}
	h.typeIn("/list\n")
	h.waitFor("Conversations (1):")
}
