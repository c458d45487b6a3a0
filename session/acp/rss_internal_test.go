//go:build linux

package acp

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/internal/mockmodel"
	"github.com/pilotdesk/pilotdesk/internal/testsupport"
	"github.com/pilotdesk/pilotdesk/session"
)

// TestIdleClaudeRSS measures what bounded sessions are for: the RSS of the
// relay's process tree (this process and the agent's processes) with ten
// Claude Code conversations opened and left idle, before and after their
// agent sessions were closed as idle ones are. It takes minutes and is run
// by hand: PILOTDESK_MEASURE_RSS=1 go test -tags ci -run TestIdleClaudeRSS -v ./session/acp/
func TestIdleClaudeRSS(t *testing.T) {
	if os.Getenv("PILOTDESK_MEASURE_RSS") != "1" {
		t.Skip("a measurement, run by hand: set PILOTDESK_MEASURE_RSS=1")
	}
	bin := testsupport.ClaudeACP.Find(t)
	mock := mockmodel.Start(func(r *mockmodel.Request) mockmodel.Reply {
		return mockmodel.Reply{Text: []string{"Noted."}}
	})
	defer mock.Close()
	home := t.TempDir()
	marker := "HOME=" + home
	a, err := New(Options{
		Command: "'" + bin + "'",
		WorkDir: t.TempDir(),
		Env: []string{marker,
			"ANTHROPIC_BASE_URL=" + mock.URL, "ANTHROPIC_API_KEY=mock-key",
			"ANTHROPIC_MODEL=claude-sonnet-4-5", "ANTHROPIC_SMALL_FAST_MODEL=claude-haiku-4-5",
			"CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1"},
		Logger:    testsupport.Logger(t),
		IdleClose: -1,
		MaxOpen:   -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	if err := a.Probe(ctx); err != nil {
		t.Fatal(err)
	}
	const n = 10
	sessions := make([]*Session, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			s, err := a.Open(ctx, fmt.Sprintf("c%d", i), session.OpenOptions{}, testsupport.NewHost("act"))
			if err == nil {
				sessions[i] = s.(*Session)
				err = s.Run(ctx, session.Turn{Prompt: "Say something."})
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	settle := func() (int, int64) {
		// RSS moves for a while after the turns (and after the closes):
		// take it once two readings 2 s apart agree within 2%.
		procs, prev := tree(marker)
		for range 30 {
			time.Sleep(2 * time.Second)
			p, cur := tree(marker)
			if d := cur - prev; d*50 < cur && -d*50 < cur {
				return p, cur
			}
			procs, prev = p, cur
		}
		return procs, prev
	}
	procs, before := settle()
	t.Logf("%d idle conversations, sessions open: %d processes, RSS %d MB", n, procs, before>>20)
	for _, s := range sessions {
		if !s.sleep("idle") {
			t.Errorf("conversation %s did not sleep", s.conversationID)
		}
	}
	procs, after := settle()
	t.Logf("%d idle conversations, sessions closed as idle: %d processes, RSS %d MB", n, procs, after>>20)
	s := sessions[0]
	if err := s.Run(ctx, session.Turn{Prompt: "Say something again."}); err != nil {
		t.Fatalf("the turn after sleeping: %v", err)
	}
	_, woke := tree(marker)
	t.Logf("one conversation woken (session/load): RSS %d MB", woke>>20)
}

// tree sums the RSS of this process and of the processes with marker in
// their environment (the agent and its children).
func tree(marker string) (procs int, rss int64) {
	pids := append([]int{os.Getpid()}, testsupport.ProcessesWithEnv(marker)...)
	for _, pid := range pids {
		if kb := vmRSS(pid); kb > 0 {
			procs++
			rss += kb << 10
		}
	}
	return procs, rss
}

func vmRSS(pid int) int64 {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb
		}
	}
	return 0
}
