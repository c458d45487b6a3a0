package chat

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/relaytest"
)

// TestPipedLinesWaitForReplies: piped lines wait for the diff /diff asked
// for and the page /list asked for before they run, so that a script's
// printf '/diff 1\n/list\n/quit\n' | pilotdesk chat prints both, where the
// /quit ran at once and ended the chat before either came: nothing was
// printed (seen in a walk; so too with the input's end for /quit).
func TestPipedLinesWaitForReplies(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.md"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := startCheckpointREPL(t, dir, `{"turns": [{"steps": [
		{"tool": {"name": "edit", "write": {"path": "notes.md", "content": "new\n"}}},
		{"delta": "Edited."}]}]}`)
	h.typeIn("edit the notes\n")
	h.waitFor("1 file changed +1 −1 (/diff 1, /restore 1)")
	h.typeIn("/diff 1\n/list\n/quit\n")
	select {
	case err := <-h.done:
		h.done <- err // for the harness's cleanup
	case <-time.After(relaytest.Timeout):
		t.Fatal("the chat did not quit")
	}
	out := h.out.text()
	diff, list, quit := strings.Index(out, "-old\n+new\n"), strings.Index(out, "Conversations (1):"), strings.LastIndex(out, "act> /quit")
	if diff < 0 || list < 0 || quit < list || list < diff {
		t.Fatalf("the diff (at %d) and the list (at %d) did not come before the /quit (at %d):\n%s", diff, list, quit, out)
	}
}
