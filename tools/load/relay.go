package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/pilotdesk/pilotdesk/internal/relayproc"
)

// relayProc is the `pilotdesk serve` child.
type relayProc = relayproc.Relay

// sqliteArgs are the history flags of the single relay: SQLite in dir/data
// (the same data dir for a restart), or memory.
func sqliteArgs(cfg config, dir string) []string {
	if cfg.Memory {
		return []string{"--data-dir", ":memory:"}
	}
	return []string{"--data-dir", filepath.Join(dir, "data")}
}

// startRelay writes the script and starts a relay with token and the
// history flags storeArgs; its log goes to dir/logName. With an island it
// runs there (a relay-partition's victim), listening on the island's
// address; else here on 127.0.0.1.
func startRelay(ctx context.Context, cfg config, dir, token, logName string, storeArgs []string, is *island) (*relayProc, error) {
	scriptPath := filepath.Join(dir, "script.json")
	if err := os.WriteFile(scriptPath, loadScript(cfg), 0o600); err != nil {
		return nil, fmt.Errorf("writing the script: %w", err)
	}
	for i, a := range storeArgs {
		if a == "--data-dir" && i+1 < len(storeArgs) && storeArgs[i+1] != ":memory:" {
			if err := os.MkdirAll(storeArgs[i+1], 0o700); err != nil {
				return nil, err
			}
		}
	}
	// The agent's folder (--workdir) is an empty one of the run's, not the
	// load tool's current directory: the relay snapshots it at each Act
	// turn's start and end (checkpoints): run from tools/load, each turn
	// of the load's relays snapshotted the whole repository.
	workDir := filepath.Join(dir, strings.TrimSuffix(logName, ".log")+"-work")
	if err := os.MkdirAll(workDir, 0o700); err != nil {
		return nil, err
	}
	rc := relayproc.Config{
		Bin:     cfg.Bin,
		Args:    append([]string{"--agent", "script", "--script", scriptPath, "--workdir", workDir}, storeArgs...),
		Token:   token,
		Env:     []string{"PILOTDESK_NATS_PASSWORD=" + cfg.natsPassword},
		LogPath: filepath.Join(dir, logName),
	}
	if cfg.RelayProfile != "" {
		rc.Env = append(rc.Env, pprofEnv+"=127.0.0.1:0")
	}
	if is != nil {
		rc.Listen, rc.Command = is.Addr+":0", is.command
	}
	return relayproc.Start(ctx, rc)
}

// loadScript is the scripted agent's scenario: every prompt gets a turn
// whose first delta is the prompt itself (it carries the send time, so the
// first delta's latency is measured end to end), then -deltas deltas of
// -payload bytes, -interval apart.
func loadScript(cfg config) []byte {
	steps := []map[string]string{{"delta": "{{prompt}}"}}
	for i := range cfg.Deltas {
		word := fmt.Sprintf(" w%04d", i)
		text := strings.Repeat("x", max(cfg.Payload-len(word), 0)) + word
		steps = append(steps, map[string]string{"sleep": cfg.Interval.String()}, map[string]string{"delta": text[len(text)-cfg.Payload:]})
	}
	b, _ := json.Marshal(map[string]any{"turns": []any{map[string]any{"steps": steps}}})
	return b
}

// selfCPU is this process's user and system CPU time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// raiseFileLimit raises the soft limit on open files to the hard limit, for
// this process and the relay it starts (children inherit it), and checks
// that it fits n connections.
func raiseFileLimit(n int) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("reading the open-file limit: %w", err)
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("raising the open-file limit to %d: %w", lim.Max, err)
	}
	if need := uint64(n) + 256; lim.Cur < need {
		return fmt.Errorf("the open-file limit is %d but %d connections need about %d: raise the hard limit (ulimit -Hn)", lim.Cur, n, need)
	}
	return nil
}
