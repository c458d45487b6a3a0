package script

import (
	"context"
	"testing"

	"github.com/pilotdesk/pilotdesk/session"
)

// {{workspace}} is the folder the turn runs in: the conversation's folder
// the relay opened the session with.
func TestWorkspaceSubstitution(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	host := newFakeHost("act")
	sess, err := New(mustParse(t, `{"turns": [{"steps": [{"delta": "working in {{workspace}}"}]}]}`)).
		Open(context.Background(), "c", session.OpenOptions{WorkDir: dir}, host)
	if err != nil {
		t.Fatal(err)
	}
	if err := run(t, sess, "where?"); err != nil {
		t.Fatal(err)
	}
	events, _, _ := host.recorded()
	if got := deltasOf(events); len(got) != 1 || got[0] != "working in "+dir {
		t.Fatalf("deltas %q", got)
	}
}
