package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

// The profiles are served only where PILOTDESK_PPROF asks, on the loopback
// alone, until the context ends; without it nothing is served.
func TestServePprof(t *testing.T) {
	envOf := func(addr string) Env {
		return Env{Getenv: func(k string) string {
			if k == pprofEnv {
				return addr
			}
			return ""
		}}
	}
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	wait, err := servePprof(ctx, envOf(""), logger)
	if err != nil || logs.Len() != 0 {
		t.Fatalf("without %s: %v, logged %q", pprofEnv, err, logs.String())
	}
	wait()
	if _, err := servePprof(ctx, envOf("192.0.2.1:6060"), logger); err == nil || !strings.Contains(err.Error(), "loopback only") {
		t.Fatalf("an address off the loopback: %v", err)
	}

	wait, err = servePprof(ctx, envOf("127.0.0.1:0"), logger)
	if err != nil {
		t.Fatal(err)
	}
	var rec struct{ URL string }
	if err := json.Unmarshal(logs.Bytes(), &rec); err != nil || rec.URL == "" {
		t.Fatalf("the log names no URL: %q (%v)", logs.String(), err)
	}
	resp, err := http.Get(rec.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", rec.URL, resp.Status)
	}
	cancel()
	wait() // the server stops with ctx
	if _, err := http.Get(rec.URL); err == nil {
		t.Fatalf("%s still answers after its context ended", rec.URL)
	}
}
