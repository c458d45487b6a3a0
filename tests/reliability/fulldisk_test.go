package reliability

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/pilotdesk/pilotdesk/relay/relaytest"
)

// tinyFS mounts a tmpfs of size bytes on a new directory and unmounts it
// when the test ends (after the relay it holds is killed: cleanups run last
// in, first out). It skips the test, saying why, where mounting is not
// permitted (not root, or no CAP_SYS_ADMIN in a container).
func tinyFS(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a %s tmpfs for the data dir (this test needs root): %v: %s", size, err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fill writes a file of zeros (allocated, not sparse) that leaves about
// leave bytes free on dir's file system, and returns its path.
func fill(t *testing.T, dir, name string, leave int64) string {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail) * st.Bsize
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, make([]byte, max(0, free-leave)), 0o600); err != nil {
		t.Fatalf("fill %s: %v", dir, err)
	}
	return path
}

// fullDiskScript streams 30,000 deltas of about 200 bytes, 1 ms apart, to
// a prompt with "stream" (far more than the file system holds), and
// answers any other prompt at once.
func fullDiskScript() any {
	type step map[string]any
	long := []step{{"delta": "{{prompt}}: "}}
	pad := strings.Repeat("x", 190)
	for i := range 30000 {
		long = append(long, step{"sleep": "1ms"}, step{"delta": fmt.Sprintf("w%d %s ", i, pad)})
	}
	return map[string]any{"turns": []any{
		map[string]any{"match": "stream", "steps": long},
		map[string]any{"steps": []step{{"delta": "Short reply."}}},
	}}
}

var (
	storeDownLog = regexp.MustCompile(`level=ERROR msg="relay: the history store cannot be written`)
	storeUpLog   = regexp.MustCompile(`msg="relay: the history store writes again`)
	newEpochLog  = regexp.MustCompile(`msg="history: the last run sent events it could not store; the history gets a new epoch`)
)

// streamUntilFull sends a streaming prompt and waits, as a watcher that
// checks every seq, for the turn to end with copilot:error and
// copilot:idle status error once the disk is full. It returns the idle.
func streamUntilFull(t *testing.T, x, y *watcher, conv string) relaytest.Frame {
	t.Helper()
	x.cl.Send("copilot:send", map[string]any{"conversationId": conv, "prompt": "stream until the disk is full"})
	ef := y.until("copilot:error when the disk is full", isType("copilot:error", conv))
	if msg, _ := ef.Field("message").(string); !strings.Contains(msg, "could not save") || !strings.Contains(msg, "full") {
		t.Errorf("copilot:error %s: want the reason, a full disk", ef.Raw)
	}
	idle := y.until("copilot:idle after the error", func(f relaytest.Frame) bool { return f.Field("conversationId") == conv })
	if idle.Type != "copilot:idle" || idle.Field("status") != "error" || idle.Seq() != ef.Seq()+1 {
		t.Fatalf("after %s the next event is %s, want copilot:idle status error", ef.Raw, idle.Raw)
	}
	t.Logf("the disk filled after %d events of %s; it ended with copilot:error (seq %d) and copilot:idle (seq %d)",
		y.count(conv), conv, ef.Seq(), idle.Seq())
	return idle
}

// refused checks that copilot:send is refused with error code limit.
func refused(t *testing.T, w *watcher, conv string) {
	t.Helper()
	w.cl.Send("ping", nil) // first take what was sent before
	w.until("pong", func(f relaytest.Frame) bool { return f.Type == "pong" })
	w.cl.Send("copilot:send", map[string]any{"conversationId": conv, "prompt": "while the disk is full"})
	f, ok := w.next(timeout)
	if !ok || f.Type != "error" || f.Field("code") != "limit" || f.Field("type") != "copilot:send" {
		t.Fatalf("copilot:send on a full disk: got %s, want error code limit", f.Raw)
	}
	expectPong(t, w.cl, "a refused copilot:send")
}

// resume subscribes from since with the epoch the client holds and returns
// copilot:subscribed's data and the events replayed before it.
func resume(t *testing.T, url, token, conv string, since int64, epoch string) (map[string]any, []relaytest.Frame) {
	t.Helper()
	cl := relaytest.Dial(t, url, token)
	cl.Send("copilot:subscribe", map[string]any{"conversationId": conv, "sinceSeq": since, "epoch": epoch})
	var replayed []relaytest.Frame
	deadline := time.Now().Add(timeout)
	for {
		f, ok := cl.TryNext(time.Until(deadline))
		if !ok {
			t.Fatalf("no copilot:subscribed for %s: %v", conv, cl.Err())
		}
		if f.Type == "copilot:subscribed" {
			cl.Close()
			return dataOf(t, f), replayed
		}
		replayed = append(replayed, f)
	}
}

// TestFullDisk runs the relay binary with its data dir on a 5 MB tmpfs
// (docs/reliability.md, A full or failing store). Round 1: a stream fills
// the disk; it ends with copilot:error and copilot:idle status error, with
// no seq skipped (the watchers check every seq); sends are refused; a late
// subscriber replays up to the same seq; once a filler file is deleted the
// relay stores the two events and takes prompts again; after a SIGKILL and
// a restart the epoch is the same and the seq goes on. Round 2: the disk
// fills again and the relay is killed before space returns: after the
// restart (space freed) a client resuming with the old epoch is told to
// reset, so it never takes a seq it has seen for a new event.
func TestFullDisk(t *testing.T) {
	t.Parallel()
	mnt := tinyFS(t, "5m")
	dataDir := filepath.Join(mnt, "data")
	const token = "full-disk-token-3c8e"
	args := []string{"--agent", "script", "--script", writeScript(t, fullDiskScript()),
		"--data-dir", dataDir, "--listen", "127.0.0.1:0", "--token", token}

	p := startRelay(t, nil, args...)
	a := uuid.NewString()
	x := newWatcher(t, "x", p.URL, token)
	y := newWatcher(t, "y", p.URL, token)
	var epoch string
	for _, w := range []*watcher{x, y} {
		sub := w.subscribe(a, -1)
		epoch, _ = sub["epoch"].(string)
	}
	filler := fill(t, mnt, "filler", 768<<10)

	// Round 1: full, refused, recovered.
	idle := streamUntilFull(t, x, y, a)
	if _, ok := p.log.WaitFor(storeDownLog, timeout); !ok {
		t.Errorf("the relay did not log the failure as an error; log:\n%s", p.log.String())
	}
	refused(t, x, a)
	refused(t, x, uuid.NewString())
	late := newWatcher(t, "late", p.URL, token)
	if sub := late.subscribe(a, 0); sub["seq"] != float64(idle.Seq()) || sub["streaming"] != false {
		t.Errorf("a late subscriber on the full disk: %v, want seq %d, not streaming", sub, idle.Seq())
	}
	if got := late.events[a][idle.Seq()]; string(got) != string(idle.Raw) {
		t.Errorf("the late subscriber's replay ends with %s, want %s", got, idle.Raw)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	if _, ok := p.log.WaitFor(storeUpLog, timeout); !ok {
		t.Fatalf("the relay did not recover once space was freed; log:\n%s", p.log.String())
	}
	t.Logf("the relay wrote again %s after the filler was deleted", time.Since(freed).Round(time.Millisecond))
	x.cl.Send("copilot:send", map[string]any{"conversationId": a, "prompt": "short one"})
	um := y.until("the turn after recovery", isType("copilot:user_message", a))
	if um.Seq() != idle.Seq()+1 {
		t.Errorf("the turn after recovery starts at seq %d, want %d", um.Seq(), idle.Seq()+1)
	}
	end := y.until("the end of that turn", isType("copilot:idle", a))
	if end.Field("status") != "completed" {
		t.Fatalf("the turn after recovery: %s", end.Raw)
	}
	// The two events sent while the disk was full are stored now.
	whole := newWatcher(t, "whole", p.URL, token)
	whole.subscribe(a, 0)
	saw := seen(t, a, x, y, late, whole)
	for seq := int64(1); seq <= end.Seq(); seq++ {
		if _, ok := whole.events[a][seq]; !ok {
			t.Errorf("seq %d of %s is not in the history after recovery", seq, a)
		}
	}

	p.kill()
	for _, w := range []*watcher{x, y} {
		w.drain()
	}
	p = startRelay(t, nil, args...)
	sub, replayed := resume(t, p.URL, token, a, end.Seq(), epoch)
	if sub["epoch"] != epoch || sub["reset"] == true || sub["seq"] != float64(end.Seq()) || len(replayed) != 0 {
		t.Fatalf("after recovery and a SIGKILL: %v with %d replayed; want epoch %s kept, seq %d, nothing replayed", sub, len(replayed), epoch, end.Seq())
	}
	sub, replayed = resume(t, p.URL, token, a, 0, epoch)
	if sub["epoch"] != epoch || sub["reset"] == true {
		t.Fatalf("replayed from the start after the restart: %v; want epoch %s kept, no reset", sub, epoch)
	}
	for _, f := range replayed {
		if string(saw[f.Seq()]) != string(f.Raw) {
			t.Errorf("after the restart seq %d is %s; clients saw %s", f.Seq(), f.Raw, saw[f.Seq()])
		}
	}

	// Round 2: full again, and killed before space returns.
	x = newWatcher(t, "x2", p.URL, token)
	y = newWatcher(t, "y2", p.URL, token)
	b := uuid.NewString()
	for _, w := range []*watcher{x, y} {
		w.subscribe(b, -1)
	}
	filler = fill(t, mnt, "filler2", 768<<10)
	idle = streamUntilFull(t, x, y, b)
	refused(t, x, b)
	p.kill()
	y.drain()
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	p = startRelay(t, nil, args...)
	if _, ok := p.log.WaitFor(newEpochLog, timeout); !ok {
		t.Errorf("the restart did not log the new epoch; log:\n%s", p.log.String())
	}
	// The client holds seqs up to the idle under the old epoch, and the
	// store never got the last two: it must be told to start over.
	sub, replayed = resume(t, p.URL, token, b, idle.Seq(), epoch)
	if sub["epoch"] == epoch || sub["reset"] != true {
		t.Fatalf("resuming %s at seq %d after a SIGKILL on a full disk: %v; want a new epoch and reset", b, idle.Seq(), sub)
	}
	if len(replayed) == 0 || replayed[0].Seq() != 1 {
		t.Fatalf("the reset replay does not start at seq 1: %d frames", len(replayed))
	}
	for i, f := range replayed {
		if f.Seq() != int64(i+1) {
			t.Fatalf("the reset replay skips from %d to %d", i, f.Seq())
		}
	}
	if last := replayed[len(replayed)-1]; last.Type != "copilot:idle" || last.Field("message") != "relay restarted" {
		t.Errorf("the reset replay ends with %s, want the restart's idle", last.Raw)
	}
	p.stop()
}
