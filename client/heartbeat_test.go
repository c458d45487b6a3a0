package client

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"testing"
)

//go:generate go test -run TestHeartbeatFile . -update

var update = flag.Bool("update", false, "rewrite testdata/heartbeat.json from the Go client's defaults")

// heartbeatFile holds the heartbeat's defaults in milliseconds, for the web
// client: web/unit/connection.test.mjs checks that connection.js pings and
// gives up after the same silences, so that a browser leaves a relay that
// stopped as soon as the window and pilotdesk chat do.
const heartbeatFile = "testdata/heartbeat.json"

// TestHeartbeatFile checks that heartbeatFile says what the Go client's
// defaults are now (go generate ./client writes it anew), and that a
// Config left empty, as pilotdesk chat's and the window's are, gets them.
func TestHeartbeatFile(t *testing.T) {
	want := map[string]int64{
		"pingAfterMs":           DefaultPingInterval.Milliseconds(),
		"pongWithinMs":          DefaultPongTimeout.Milliseconds(),
		"streamingPingAfterMs":  DefaultStreamingPingInterval.Milliseconds(),
		"streamingPongWithinMs": DefaultStreamingPongTimeout.Milliseconds(),
	}
	got, err := json.MarshalIndent(want, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if *update {
		if err := os.WriteFile(heartbeatFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file, err := os.ReadFile(heartbeatFile)
	if err != nil {
		t.Fatalf("%v (write it with go generate ./client)", err)
	}
	if !bytes.Equal(file, got) {
		t.Errorf("%s says\n%s\nbut the Go client's defaults are\n%s\n(go generate ./client writes them; then web/static/js/connection.js must say the same)", heartbeatFile, file, got)
	}

	var cfg Config
	cfg.setDefaults()
	if cfg.PingInterval != DefaultPingInterval || cfg.PongTimeout != DefaultPongTimeout ||
		cfg.StreamingPingInterval != DefaultStreamingPingInterval || cfg.StreamingPongTimeout != DefaultStreamingPongTimeout {
		t.Errorf("an empty Config gets %v/%v, streaming %v/%v", cfg.PingInterval, cfg.PongTimeout, cfg.StreamingPingInterval, cfg.StreamingPongTimeout)
	}
}
