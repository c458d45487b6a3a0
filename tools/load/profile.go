package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// pprofEnv is what serve reads to serve its Go profiles (cli/pprof.go):
// with -relay-profile every relay serves them on a loopback port its log
// names (relayproc reads it).
const pprofEnv = "PILOTDESK_PPROF"

// relayProfiles fetches a CPU profile of each relay over the streaming
// window of a run (-relay-profile), for `go tool pprof -diff_base` between
// runs of different relay counts (docs/scale-out.md, Relays' CPU).
type relayProfiles struct {
	wg sync.WaitGroup
}

// start fetches, for each relay with a profiles' URL, a CPU profile of d
// (whole seconds, at least 1) into dir/<tag>relay<i>.pprof, until ctx ends.
func (p *relayProfiles) start(ctx context.Context, log *slog.Logger, dir, tag string, relays []*relayProc, d time.Duration) {
	secs := max(int(d/time.Second), 1)
	for i, r := range relays {
		if r == nil || r.Pprof == "" {
			continue
		}
		path := filepath.Join(dir, fmt.Sprintf("%srelay%d.pprof", tag, i+1))
		url := fmt.Sprintf("%sprofile?seconds=%d", r.Pprof, secs)
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			if err := fetchProfile(ctx, url, path); err != nil {
				log.Warn("load: a relay's CPU profile", "relay", i+1, "err", err)
				return
			}
			log.Info("load: relay CPU profile written", "relay", i+1, "path", path)
		}()
	}
}

// wait waits for every fetch to end.
func (p *relayProfiles) wait() { p.wg.Wait() }

func fetchProfile(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("fetching %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fetching %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}
