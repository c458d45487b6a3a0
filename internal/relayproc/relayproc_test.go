//go:build unix

package relayproc

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

const envHelper = "RELAYPROC_TEST_HELPER"

// TestMain lets the test binary play `pilotdesk serve`: "serve" logs a
// warning and its listening line, then exits 0 on SIGTERM and tells the
// arguments it got (with PILOTDESK_PPROF set, it logs the profiles' URL
// first, as serve does); "crash" exits 3 at once; "hang" never listens.
func TestMain(m *testing.M) {
	switch os.Getenv(envHelper) {
	case "":
		os.Exit(m.Run())
	case "serve":
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
		fmt.Fprintln(os.Stderr, `time=x level=WARN msg="a warning"`)
		if os.Getenv("PILOTDESK_PPROF") != "" {
			fmt.Fprintln(os.Stderr, `time=x level=INFO msg="serving Go profiles" url=http://127.0.0.1:4343/debug/pprof/`)
		}
		fmt.Fprintln(os.Stderr, `time=x level=INFO msg="relay listening" addr=127.0.0.1:4242 url=ws://127.0.0.1:4242/ws`)
		<-term
		fmt.Fprintf(os.Stderr, "args=%s token=%q\n", strings.Join(os.Args[1:], " "), os.Getenv("PILOTDESK_TOKEN"))
		os.Exit(0)
	case "crash":
		fmt.Fprintln(os.Stderr, "crashing")
		os.Exit(3)
	case "hang":
		time.Sleep(time.Hour)
	}
}

func start(t *testing.T, mode string, env ...string) (*Relay, string, error) {
	t.Helper()
	log := filepath.Join(t.TempDir(), "relay.log")
	r, err := Start(context.Background(), Config{
		Bin: os.Args[0], Args: []string{"--agent", "script"}, Token: "tok", LogPath: log,
		Env: append([]string{envHelper + "=" + mode, "GORACE=atexit_sleep_ms=0"}, env...),
	})
	return r, log, err
}

// TestStartStop: Start waits for the listening line and reads the URL and
// the address from it; the warnings are kept; Stop's SIGTERM ends the
// relay cleanly, and its log, complete, shows the flags and the token's
// variable emptied.
func TestStartStop(t *testing.T) {
	t.Setenv("PILOTDESK_TOKEN", "from-the-environment")
	r, log, err := start(t, "serve")
	if err != nil {
		t.Fatal(err)
	}
	if r.URL != "ws://127.0.0.1:4242/ws" || r.Addr != "127.0.0.1:4242" || r.Pid() <= 0 || r.Pprof != "" {
		t.Errorf("URL %q, Addr %q, pid %d, Pprof %q", r.URL, r.Addr, r.Pid(), r.Pprof)
	}
	if err := r.Stop(30 * time.Second); err != nil {
		t.Fatalf("Stop = %v, want a clean exit", err)
	}
	if w := r.Warnings(); len(w) != 1 || !strings.Contains(w[0], "a warning") {
		t.Errorf("warnings %q", w)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	want := `args=serve --agent script --listen 127.0.0.1:0 --token tok token=""`
	if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); !slices.Contains(lines, want) {
		t.Errorf("the log:\n%s\nwant the line %s", b, want)
	}
	select {
	case <-r.Exited():
	default:
		t.Error("Exited is open after Stop")
	}
}

// TestPprofURL: a relay whose PILOTDESK_PPROF serves its profiles names
// their URL in its log before it listens; Start reads it (tools/load
// -relay-profile fetches the relays' CPU profiles there).
func TestPprofURL(t *testing.T) {
	r, _, err := start(t, "serve", "PILOTDESK_PPROF=127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Kill()
	if r.Pprof != "http://127.0.0.1:4343/debug/pprof/" {
		t.Errorf("Pprof = %q", r.Pprof)
	}
}

// TestExitAtStart: a relay that exits before it listens is an error that
// says how it exited and where its log is.
func TestExitAtStart(t *testing.T) {
	_, log, err := start(t, "crash")
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), log) {
		t.Fatalf("Start = %v, want the exit status and the log's path", err)
	}
}

// TestStartCancelled: the end of ctx ends the wait, and the relay.
func TestStartCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Start(ctx, Config{Bin: os.Args[0], Token: "tok", LogPath: filepath.Join(t.TempDir(), "log"), Env: []string{envHelper + "=hang"}})
	if err != context.Canceled {
		t.Fatalf("Start with its context ended = %v", err)
	}
}
