package sqlite

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// The crash test runs a copy of the test binary that writes batches as fast
// as it can and reports each batch on stdout once Write has returned. The
// test kills it with SIGKILL at a random moment, reopens the database and
// checks that every reported event is there, with no gap.
const crashChildEnv = "PILOTDESK_HISTORY_CRASH_CHILD"

var crashConvs = []string{"c0", "c1", "c2"}

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		os.Exit(crashChild(dir, os.Getenv(crashChildEnv+"_SYNC")))
	}
	os.Exit(m.Run())
}

// crashFrame is the frame of an event: it says which event it is, so the
// test can check content, not just seq.
func crashFrame(conv string, seq int64) []byte {
	return fmt.Appendf(nil, `{"type":"copilot:delta","data":{"conversationId":%q,"seq":%d,"messageId":"m","content":"%s"}}`, conv, seq, strings.Repeat("x", int(seq%50)))
}

// crashChild writes until it is killed. Each line it prints is
// "<conv> <last seq> ..." for a batch whose Write returned.
func crashChild(dir, sync string) int {
	ctx := context.Background()
	s, err := Open(ctx, dir, Options{Synchronous: sync, Logger: discardLogger()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	last := map[string]history.Conversation{}
	for _, id := range crashConvs {
		c, err := s.Conversation(ctx, id)
		if errors.Is(err, history.ErrNotFound) {
			c = history.Conversation{ID: id, Title: "crash " + id, Mode: "act", CreatedAt: time.Now()}
		} else if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		last[id] = c
	}
	rng := rand.New(rand.NewPCG(uint64(os.Getpid()), 7))
	for {
		var b history.Batch
		var report strings.Builder
		for _, id := range crashConvs {
			c := last[id]
			n := rng.Int64N(64) // 0 to 63 events for this conversation
			if n == 0 {
				continue
			}
			for seq := c.LastSeq + 1; seq <= c.LastSeq+n; seq++ {
				b.Events = append(b.Events, history.Event{ConversationID: id, Seq: seq, Type: "copilot:delta", Frame: crashFrame(id, seq)})
			}
			c.LastSeq += n
			c.UpdatedAt = time.Now()
			c.Streaming = true
			b.Conversations = append(b.Conversations, c)
			fmt.Fprintf(&report, "%s %d ", id, c.LastSeq)
		}
		if len(b.Events) == 0 {
			continue
		}
		if err := s.Write(ctx, b); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		for _, c := range b.Conversations {
			last[c.ID] = c
		}
		// Unbuffered: the line is in the pipe before the next Write starts.
		fmt.Fprintln(os.Stdout, strings.TrimSpace(report.String()))
	}
}

func TestCrashKeepsEveryReportedEvent(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	reported := map[string]int64{}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for round, sync := range []string{"FULL", "NORMAL", "FULL", "NORMAL"} {
		killAfter := 5 + rng.IntN(100)
		lines := crashRound(t, dir, sync, killAfter, reported)
		t.Logf("round %d (synchronous=%s): killed after %d reported batches, %d read in all; reported so far %v", round, sync, killAfter, lines, reported)

		s := openStore(t, dir, Options{})
		for _, id := range crashConvs {
			want := reported[id]
			var next int64 = 1
			err := s.Events(context.Background(), id, 0, func(e history.Event) error {
				if e.Seq != next {
					return fmt.Errorf("seq %d where %d was expected", e.Seq, next)
				}
				if string(e.Frame) != string(crashFrame(id, e.Seq)) {
					return fmt.Errorf("seq %d has frame %s", e.Seq, e.Frame)
				}
				next++
				return nil
			})
			if err != nil {
				t.Fatalf("round %d, %s: %v", round, id, err)
			}
			stored := next - 1
			if stored < want {
				t.Fatalf("round %d, %s: the child reported seq %d committed, the database has %d", round, id, want, stored)
			}
			c, err := s.Conversation(context.Background(), id)
			if want > 0 && err != nil {
				t.Fatalf("round %d, %s: %v", round, id, err)
			}
			// The conversation row is committed with its events, never apart.
			if c.LastSeq != stored {
				t.Fatalf("round %d, %s: conversation says last seq %d, events end at %d", round, id, c.LastSeq, stored)
			}
			// The next round's child goes on from what is stored, which may
			// be one unreported batch past what was reported.
			reported[id] = stored
		}
		mustClose(t, s)
	}
}

// crashRound runs the child until it has reported killAfter batches, kills
// it, and returns how many report lines it read (those written before the
// kill count too: their batches were committed).
func crashRound(t *testing.T, dir, sync string, killAfter int, reported map[string]int64) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, crashChildEnv+"_SYNC="+sync)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	lines := 0
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		for i := 0; i+1 < len(f); i += 2 {
			seq, err := strconv.ParseInt(f[i+1], 10, 64)
			if err != nil {
				t.Fatalf("bad report %q", sc.Text())
			}
			if seq <= reported[f[i]] {
				t.Fatalf("the child reported %s %d after %d", f[i], seq, reported[f[i]])
			}
			reported[f[i]] = seq
		}
		lines++
		if lines == killAfter && !killed {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed = true
		}
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !killed || !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the child ended by itself after %d lines (%v): %s", lines, err, stderr.String())
	}
	return lines
}
