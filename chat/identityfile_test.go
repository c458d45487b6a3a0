package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// The identities file gives a device token's chat who it was, per relay
// and token; an unreadable file is a warning, then replaced, readable by
// this user only; it stays bounded.
func TestIdentityFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	path := filepath.Join(dir, IdentityFileName)
	var logs bytes.Buffer
	f := NewIdentityFile(path, slog.New(slog.NewTextHandler(&logs, nil)))
	pixel := protocol.By{Device: "Pixel", Client: protocol.ClientTerminal}

	// Nothing kept yet: a device token's device is not known.
	id := client.NewIdentity("ws://relay/ws", "pdt_secret", protocol.ClientTerminal)
	f.Keep(id)
	if _, known := id.Self(); known {
		t.Fatal("known with nothing kept")
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatal("reading made a file")
	}
	if err := f.store(id.Key(), pixel); err != nil {
		t.Fatal(err)
	}

	// The same relay and token again: known before any echo. Another
	// token, or another relay: not.
	again := client.NewIdentity("ws://relay/ws", "pdt_secret", protocol.ClientTerminal)
	f.Keep(again)
	if self, known := again.Self(); !known || self != pixel {
		t.Fatalf("remembered %+v, %v; want %+v", self, known, pixel)
	}
	for _, other := range []*client.Identity{
		client.NewIdentity("ws://relay/ws", "pdt_other", protocol.ClientTerminal),
		client.NewIdentity("ws://elsewhere/ws", "pdt_secret", protocol.ClientTerminal),
	} {
		f.Keep(other)
		if _, known := other.Self(); known {
			t.Fatal("another relay or token took this one's device")
		}
	}
	raw, _ := os.ReadFile(path)
	if strings.Contains(string(raw), "secret") {
		t.Fatalf("the file holds the token:\n%s", raw)
	}

	// Unreadable, and readable by others: a warning, and nothing taken;
	// the next store replaces it, for this user only.
	if err := os.WriteFile(path, []byte("not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	broken := client.NewIdentity("ws://relay/ws", "pdt_secret", protocol.ClientTerminal)
	f.Keep(broken)
	if _, known := broken.Self(); known || !strings.Contains(logs.String(), "is not an identities file") {
		t.Fatalf("known %v from a broken file; logs:\n%s", known, logs.String())
	}
	if err := f.store(id.Key(), pixel); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("after a store: %v, %v", info, err)
	}

	// Bounded: the ones seen longest ago go.
	for i := 0; i < maxIdentities+5; i++ {
		if err := f.store(fmt.Sprint("key", i), pixel); err != nil {
			t.Fatal(err)
		}
	}
	raw, _ = os.ReadFile(path)
	var entries map[string]identityEntry
	if err := json.Unmarshal(raw, &entries); err != nil {
		t.Fatal(err)
	}
	if len(entries) != maxIdentities {
		t.Fatalf("%d entries, want %d", len(entries), maxIdentities)
	}
	if _, ok := entries[fmt.Sprint("key", maxIdentities+4)]; !ok {
		t.Fatal("the newest entry went")
	}
	if _, ok := entries[id.Key()]; ok {
		t.Fatal("the oldest entry stayed")
	}
	left, _ := filepath.Glob(filepath.Join(dir, IdentityFileName+".*"))
	if len(left) > 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}
