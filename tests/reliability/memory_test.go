package reliability

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
)

// The memory figures of docs/reliability.md (issue #18). Before it, 100
// clients subscribing from seq 0 to a 30 MB conversation and never reading
// took the relay to 4.7 GB, and each connection holding an unfinished
// 1 MiB frame cost 1.26 MiB. Each test stops early (and fails) as soon as
// the relay goes over its bound, so that on a relay without the fix it
// does not take the machine's memory.

// procMem is a process's resident set size now and at its peak, in bytes.
func procMem(t *testing.T, pid int) (rss, hwm int64) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc to measure memory: %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb << 10
		case "VmHWM:":
			hwm = kb << 10
		}
	}
	return rss, hwm
}

// settle waits until the relay's RSS stops growing (no more than 1 MiB over
// two seconds), failing as soon as it passes limit, and returns it.
func settle(t *testing.T, p *relayProc, limit int64, what string) int64 {
	t.Helper()
	pid := p.cmd.Process.Pid
	deadline := time.Now().Add(timeout)
	var last int64
	var lastChange time.Time
	for {
		rss, _ := procMem(t, pid)
		if rss > limit {
			t.Fatalf("%s: the relay's RSS is %d MiB, over the bound of %d MiB", what, rss>>20, limit>>20)
		}
		if rss > last+1<<20 || rss < last-1<<20 || last == 0 {
			last, lastChange = rss, time.Now()
		}
		if time.Since(lastChange) >= 2*time.Second {
			return rss
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the relay's RSS kept changing for %s (last %d MiB)", what, timeout, rss>>20)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// TestReplayMemory: a 30 MiB conversation in the SQLite history, and 100
// clients that subscribe from seq 0 and never read. The relay reads the
// history only as far as each socket drains (a window of 256 KiB), so its
// memory stays near what it was before they came.
func TestReplayMemory(t *testing.T) {
	t.Parallel()
	const token = "replay-memory-token-2718"
	const clients, deltas = 100, 480
	steps := make([]any, deltas)
	for i := range steps {
		steps[i] = map[string]any{"delta": "{{prompt}}"}
	}
	script := writeScript(t, map[string]any{"turns": []any{map[string]any{"steps": steps}}})
	dir := t.TempDir()
	args := []string{"--agent", "script", "--script", script, "--data-dir", dir, "--listen", "127.0.0.1:0", "--token", token}
	p := startRelay(t, nil, args...)
	id := uuid.NewString()
	cl := relaytest.Dial(t, p.URL, token)
	prompt := strings.Repeat("r", 64<<10)
	cl.Send("copilot:send", map[string]any{"conversationId": id, "prompt": prompt})
	// 30 MiB through the relay under -race on a busy 2-core machine takes
	// longer than the helpers' 10 s: wait for the idle up to a minute.
	var idle relaytest.Frame
	for deadline := time.Now().Add(time.Minute); ; {
		f, ok := cl.TryNext(time.Until(deadline))
		if !ok {
			t.Fatal("no copilot:idle within a minute")
		}
		if f.Type == "copilot:idle" {
			idle = f
			break
		}
	}
	cl.Close()
	total := float64(deltas*len(prompt)) / (1 << 20)
	// A new process on the same data dir: what the turn left in the heap
	// (the garbage of 30 MiB streamed) does not count.
	p.stop()
	p = startRelay(t, nil, args...)
	before := settle(t, p, 1<<30, "after a restart")

	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	sub := fmt.Appendf(nil, `{"type":"copilot:subscribe","data":{"conversationId":%q,"sinceSeq":0}}`, id)
	conns := make([]*websocket.Conn, 0, clients)
	defer func() {
		for _, c := range conns {
			c.CloseNow()
		}
	}()
	for range clients {
		c, err := relaytest.DialConn(p.URL, token)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		if err := c.Write(ctx, websocket.MessageText, sub); err != nil {
			t.Fatal(err)
		}
	}
	// The bound: what the relay held before, and 2 MiB a client (the
	// window, the socket's share the relay holds, a page of the store).
	limit := before + clients*2<<20
	after := settle(t, p, limit, fmt.Sprintf("%d clients replaying %.0f MiB without reading", clients, total))
	_, hwm := procMem(t, p.cmd.Process.Pid)
	t.Logf("relay RSS: %s restarted on the %.0f MiB conversation (seq %d), %s with %d clients replaying it from seq 0 without reading (%s each); peak %s",
		mib(before), total, idle.Seq(), mib(after), clients, mib((after-before)/clients), mib(hwm))

	// A client that reads still gets all of it: 30 MiB under -race on a
	// busy machine, with a deadline of its own (the one above is spent in
	// part by the dials and the wait for the memory to settle).
	readCtx, cancelRead := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancelRead()
	c := conns[0]
	var last int64
	for {
		_, data, err := c.Read(readCtx)
		if err != nil {
			t.Fatalf("reading the replay after seq %d: %v", last, err)
		}
		var f relaytest.Frame
		if err := json.Unmarshal(data, &f); err != nil {
			t.Fatal(err)
		}
		if f.Type == "copilot:subscribed" {
			break
		}
		if f.Seq() != last+1 {
			t.Fatalf("replay: seq %d after %d", f.Seq(), last)
		}
		last = f.Seq()
	}
	if last != idle.Seq() {
		t.Fatalf("the replay ended at seq %d, want %d", last, idle.Seq())
	}
}

// TestPartialFrameMemory: 500 connections each send all but the last byte
// of a 1 MiB frame and stop. The frames being received share a budget
// (64 MiB by default): once it is taken, the rest of each further frame is
// read and thrown away (it will be answered with error limit when it
// ends), so the relay holds the budget and 16 KiB per connection, not
// 500 MiB.
func TestPartialFrameMemory(t *testing.T) {
	t.Parallel()
	const token = "partial-frame-token-1414"
	const conns = 500
	p := startRelay(t, nil, "--agent", "script", "--data-dir", ":memory:", "--listen", "127.0.0.1:0", "--token", token)
	before := settle(t, p, 1<<30, "at start")

	msg := append([]byte(`{"type":"ping"}`), bytes.Repeat([]byte(" "), protocol.MaxFrameBytes-len(`{"type":"ping"}`))...)
	type held struct {
		c *websocket.Conn
		w io.WriteCloser // the unfinished message
	}
	var mu sync.Mutex
	var all []held
	defer func() {
		for _, h := range all {
			h.c.CloseNow()
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for i := range conns {
		if i%50 == 0 {
			wg.Wait() // 50 at a time, as the load tool opens them
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := relaytest.DialConn(p.URL, token)
			if err != nil {
				errs <- err
				return
			}
			w, err := c.Writer(context.Background(), websocket.MessageText)
			if err == nil {
				_, err = w.Write(msg[:len(msg)-1])
			}
			mu.Lock()
			all = append(all, held{c, w})
			mu.Unlock()
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("a connection: %v", err)
	}
	// The bound: the budget, 16 KiB a connection, and what 500 idle
	// connections cost anyway (about 50 KiB each with their goroutines).
	limit := before + 4*(64<<20+conns*(16<<10+64<<10))
	after := settle(t, p, limit, fmt.Sprintf("%d unfinished 1 MiB frames", conns))
	_, hwm := procMem(t, p.cmd.Process.Pid)
	t.Logf("relay RSS: %s at start, %s with %d connections each holding an unfinished 1 MiB frame (%s each); peak %s",
		mib(before), mib(after), conns, mib((after-before)/conns), mib(hwm))

	// Finishing the frames: those that held a share of the budget get their
	// pong, the others error limit; the connections stay open.
	pongs, limits := 0, 0
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for _, h := range all {
		if _, err := h.w.Write(msg[len(msg)-1:]); err != nil {
			t.Fatal(err)
		}
		if err := h.w.Close(); err != nil {
			t.Fatal(err)
		}
		_, data, err := h.c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var f relaytest.Frame
		if err := json.Unmarshal(data, &f); err != nil {
			t.Fatal(err)
		}
		switch {
		case f.Type == "pong":
			pongs++
		case f.Type == "error" && strings.Contains(string(f.Data), `"code":"limit"`):
			limits++
		default:
			t.Fatalf("a finished frame got %.200s", data)
		}
	}
	t.Logf("the %d frames finished: %d answered pong, %d error limit", conns, pongs, limits)
	// About 64 MiB of them fitted in the budget.
	if pongs < 32 || pongs > 80 || pongs+limits != conns {
		t.Errorf("%d pongs and %d limit errors: the budget of 64 MiB should have held about 60 frames of 1 MiB", pongs, limits)
	}
}
