package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/history/sqlite"
	"github.com/pilotdesk/pilotdesk/session"
)

// runRelay is the child process: a relay over benchAgent on 127.0.0.1:0. It
// prints "ADDR host:port" and serves until its stdin closes.
func runRelay(o options) error {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var store history.Store = history.NewMemory()
	if o.store == "sqlite" {
		dir, err := os.MkdirTemp("", "fanoutbench-*")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		st, err := sqlite.Open(context.Background(), dir, sqlite.Options{Synchronous: o.sync, Logger: logger})
		if err != nil {
			return err
		}
		defer st.Close()
		store = st
	} else if o.store == "jetstream" {
		st, stop, err := openJetStream(o, logger)
		if err != nil {
			return err
		}
		defer stop()
		store = st
	} else if o.store != "memory" {
		return fmt.Errorf("-store %q: want memory, sqlite or jetstream", o.store)
	}
	r, err := relay.New(relay.Config{Agent: benchAgent{}, Store: store, SendQueue: o.sendQueue, Logger: logger})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/", r.Handler())
	mux.HandleFunc("/stats", serveStats)
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	fmt.Printf("ADDR %s\n", ln.Addr())

	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent closes it
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = r.Close(ctx)
	_ = srv.Shutdown(ctx)
	return err
}

func serveStats(w http.ResponseWriter, req *http.Request) {
	if req.URL.Query().Get("gc") != "" {
		runtime.GC()
		runtime.GC()
	}
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s := stats{
		CPU:     time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
		Mallocs: ms.Mallocs,
		RSS:     rss(),
	}
	_ = json.NewEncoder(w).Encode(s)
}

// rss reads the process's resident set size from /proc (Linux).
func rss() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// benchAgent streams deltas: the prompt is "COUNT SIZE RATE" (RATE deltas
// per second, 0 as fast as the relay takes them). Each delta's text starts
// with "t=<UnixNano at Emit>;" so a client can measure delivery latency.
type benchAgent struct{}

func (benchAgent) Name() string { return "bench" }
func (benchAgent) Close() error { return nil }
func (benchAgent) Open(_ context.Context, _ string, _ session.OpenOptions, host session.Host) (session.Session, error) {
	return benchSession{host}, nil
}

type benchSession struct{ host session.Host }

func (benchSession) Close(context.Context) error { return nil }

func (s benchSession) Run(ctx context.Context, turn session.Turn) error {
	var count, size, rate int
	if _, err := fmt.Sscanf(turn.Prompt, "%d %d %d", &count, &size, &rate); err != nil {
		return fmt.Errorf("bench agent: prompt %q: want COUNT SIZE RATE", turn.Prompt)
	}
	pad := bytes.Repeat([]byte("x"), size)
	start := time.Now()
	for i := 0; i < count; {
		due := count
		if rate > 0 {
			due = min(count, int(time.Since(start).Seconds()*float64(rate))+1)
		}
		for ; i < due; i++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			text := fmt.Appendf(nil, "t=%019d;", time.Now().UnixNano())
			if len(text) < size {
				text = append(text, pad[:size-len(text)]...)
			}
			s.host.Emit(session.Delta{MessageID: "m", Content: string(text)})
		}
		if i < count {
			select {
			case <-time.After(500 * time.Microsecond):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}
