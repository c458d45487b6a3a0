package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestRelayProfiles: -relay-profile fetches a CPU profile of the streaming
// window from each relay that serves its profiles, into the folder, named
// by the run's tag and the relay; a relay without profiles is skipped.
func TestRelayProfiles(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/debug/pprof/profile" || r.URL.Query().Get("seconds") != "29" {
			http.Error(w, "unexpected "+r.URL.String(), http.StatusBadRequest)
			return
		}
		io.WriteString(w, "profile bytes")
	}))
	defer srv.Close()
	dir := t.TempDir()
	relays := []*relayProc{{Pprof: srv.URL + "/debug/pprof/"}, nil, {}}
	var p relayProfiles
	p.start(context.Background(), slog.New(slog.DiscardHandler), dir, "run1-relays3-", relays, 29*time.Second+500*time.Millisecond)
	p.wait()
	b, err := os.ReadFile(filepath.Join(dir, "run1-relays3-relay1.pprof"))
	if err != nil || string(b) != "profile bytes" {
		t.Fatalf("relay 1's profile: %q, %v", b, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d files, want relay 1's only", len(entries))
	}
}
