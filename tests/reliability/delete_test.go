package reliability

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// filesWith lists the files under dir whose bytes contain text.
func filesWith(t *testing.T, dir, text string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		// The relay may be removing what the walk comes to (a restarted
		// relay prunes the checkpoints of deleted conversations): what is
		// gone holds nothing.
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(text)) {
			found = append(found, filepath.Base(path))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("read %s: %v", dir, err)
	}
	return found
}

// TestDeleteLeavesNoText sends a prompt with a unique marker to the relay
// binary, restarts it so that the text is in the database file as well as
// in the write-ahead log, deletes the conversation, and checks that within
// seconds no file of the data dir holds the marker, also after a SIGKILL
// and a restart (docs/protocol.md, Durability).
func TestDeleteLeavesNoText(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	const token = "delete-test-token-9a1f"
	script := map[string]any{"turns": []any{map[string]any{"steps": []map[string]any{{"delta": "You said: {{prompt}}"}}}}}
	args := []string{"--agent", "script", "--script", writeScript(t, script),
		"--data-dir", dataDir, "--listen", "127.0.0.1:0", "--token", token}
	p := startRelay(t, nil, args...)
	w := newWatcher(t, "w", p.URL, token)

	// Another conversation stays, so the database is not simply empty.
	keep, conv := uuid.NewString(), uuid.NewString()
	w.subscribe(keep, -1)
	w.subscribe(conv, -1)
	w.cl.Send("copilot:send", map[string]any{"conversationId": keep, "prompt": "a conversation that stays"})
	w.until("the kept turn's end", isType("copilot:idle", keep))

	marker := "secret-marker-" + strings.ReplaceAll(uuid.NewString(), "-", "")
	w.cl.Send("copilot:send", map[string]any{"conversationId": conv, "prompt": "please forget " + marker})
	w.until("the turn's end", isType("copilot:idle", conv))
	if found := filesWith(t, dataDir, marker); len(found) == 0 {
		t.Fatal("the marker is in no file of the data dir before the delete: the test cannot show anything")
	} else {
		t.Logf("before the delete the marker is in %v", found)
	}
	// Once more with the text in the database file too: a clean stop
	// checkpoints the log into it. The delete must overwrite it there
	// (secure_delete), not only drop the log.
	p.stop()
	w.drain()
	if found := filesWith(t, dataDir, marker); !slices.Contains(found, "history.db") {
		t.Fatalf("after a clean stop the marker is in %v, want history.db", found)
	}
	p = startRelay(t, nil, args...)
	w = newWatcher(t, "w2", p.URL, token)
	w.subscribe(conv, -1)

	w.cl.Send("copilot:delete", map[string]any{"conversationId": conv})
	w.until("copilot:deleted", isType("copilot:deleted", conv))
	deleted := time.Now()
	var found []string
	for {
		if found = filesWith(t, dataDir, marker); len(found) == 0 || time.Since(deleted) > 5*time.Second {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(found) > 0 {
		t.Fatalf("5 s after copilot:delete the marker is still in %v", found)
	}
	t.Logf("%s after copilot:deleted no file of the data dir holds the marker", time.Since(deleted).Round(time.Millisecond))

	p.kill()
	if found := filesWith(t, dataDir, marker); len(found) > 0 {
		t.Fatalf("after SIGKILL the marker is in %v", found)
	}
	p = startRelay(t, nil, args...)
	r := newWatcher(t, "r", p.URL, token)
	if sub := r.subscribe(conv, 0); sub["seq"] != 0.0 {
		t.Fatalf("the deleted conversation came back after the restart: %v", sub)
	}
	if sub := r.subscribe(keep, 0); sub["seq"] == 0.0 {
		t.Fatalf("the kept conversation is gone after the restart: %v", sub)
	}
	if found := filesWith(t, dataDir, marker); len(found) > 0 {
		t.Fatalf("after the restart the marker is in %v", found)
	}
	p.stop()
	if found := filesWith(t, dataDir, marker); len(found) > 0 {
		t.Fatalf("after a clean stop the marker is in %v", found)
	}
}
