package chat

import (
	"os"
	"testing"
)

// /new DIR starts a conversation whose sends name DIR as its workspace:
// the relay fixes it there (its list says so), and a bad /new says how to
// use it and starts nothing.
func TestNewInFolder(t *testing.T) {
	h := startRelayREPL(t)
	wd, err := os.Getwd() // the relay's default folder, its one root
	if err != nil {
		t.Fatal(err)
	}
	h.typeIn("/new --worktree\n")
	h.waitFor("--worktree needs a folder")
	h.typeIn("/new .\n")
	h.waitFor("Folder: " + wd)
	h.typeIn("hello there\n")
	h.waitFor("Echo: hello there")

	h.typeIn("/list\n")
	h.waitFor("· " + wd)

	cl := h.srv.Dial(t)
	cl.Send("copilot:list", nil)
	list := cl.WaitFor("copilot:conversations", nil)
	found := false
	for _, e := range list.Field("conversations").([]any) {
		if w, _ := e.(map[string]any)["workspace"].(map[string]any); w != nil && w["path"] == wd && w["isolation"] == "none" {
			found = true
		}
	}
	if !found {
		t.Fatalf("no conversation in %s: %s", wd, list.Raw)
	}
}
