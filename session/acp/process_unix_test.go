//go:build unix

package acp_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/pilotdesk/pilotdesk/internal/testsupport"
	"github.com/pilotdesk/pilotdesk/session"
)

// TestCloseStopsTheProcessGroup: what the agent started (a tool's shell, the
// native binary behind an npm launcher) goes with it.
func TestCloseStopsTheProcessGroup(t *testing.T) {
	opts, f := newFake(t)
	a := newAgent(t, opts)
	h := newHost("act")
	s := open(t, a, "c1", session.OpenOptions{}, h)
	if err := run(t, s, "orphan"); err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimPrefix(testsupport.Text(h.Events()), "child "))
	if err != nil {
		t.Fatalf("the fake said %q", testsupport.Text(h.Events()))
	}
	if testsupport.Gone(child) {
		t.Fatalf("child %d is not running: the check below would prove nothing", child)
	}
	a.Close()
	testsupport.WaitGone(t, child, wait)
	for _, pid := range f.pids() {
		testsupport.WaitGone(t, pid, wait)
	}
}
