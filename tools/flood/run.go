package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"

	"github.com/pilotdesk/pilotdesk/internal/procstat"
	"github.com/pilotdesk/pilotdesk/internal/relayproc"
)

// result is what a run measured.
type result struct {
	IdleOpened        int     `json:"idleOpened"`   // got their /healthz answer
	IdleFailed        int     `json:"idleFailed"`   // could not connect or got no answer
	IdleClosed        int     `json:"idleClosed"`   // closed by the relay by the time the owner came
	ViewersOpen       int     `json:"viewersOpen"`  // upgraded and answered a ping
	ViewersLimit      int     `json:"viewersLimit"` // refused with limit (error or close 1013)
	ViewersCut        int     `json:"viewersCut"`   // closed by the relay during the upgrade (its limit on an address's connections that are no WebSocket yet)
	ViewersOther      int     `json:"viewersOther"` // refused otherwise (the first such error below)
	ViewerError       string  `json:"viewerError,omitempty"`
	SetupSeconds      float64 `json:"setupSeconds"`                  // opening every connection
	OwnerAfterIdle    float64 `json:"ownerAfterIdleMs"`              // the owner's connect with only the idle connections open
	OwnerAfterIdleErr string  `json:"ownerAfterIdleError,omitempty"` // why that failed
	OwnerConnect      float64 `json:"ownerConnectMs"`                // dial, upgrade and the first pong
	OwnerTurn         float64 `json:"ownerTurnMs"`                   // copilot:send to copilot:idle
	OwnerStatus       string  `json:"ownerStatus"`                   // the idle's status, or what went wrong
	OwnerEchoed       int     `json:"ownerEchoed"`                   // bytes of the prompt in copilot:user_message
	RelayRSS          float64 `json:"relayRssMiB"`                   // with everything open
	RelayPeakRSS      float64 `json:"relayPeakRssMiB"`               // VmHWM at the end
	RelayFDs          int     `json:"relayFds"`                      // open file descriptors with everything open
	RelayNoFile       uint64  `json:"relayNoFile"`                   // the open-file limit the relay ran with
	RelayWarnings     int     `json:"relayWarnings"`                 // WARN and ERROR lines of its log
}

// OwnerOK is the run's verdict: the owner connected in time and its turn
// completed with its whole prompt.
func (r *result) OwnerOK(cfg config) bool {
	within := float64(cfg.OwnerWithin.Milliseconds())
	return r.OwnerStatus == "completed" && r.OwnerConnect <= within && r.OwnerEchoed == cfg.Prompt &&
		r.OwnerAfterIdleErr == "" && r.OwnerAfterIdle <= within
}

func (r *result) print(w io.Writer, cfg config) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	p("flood: %d idle HTTP connections and %d viewer connections from %d address(es), then the owner with a %d-byte prompt", cfg.Idle, cfg.Viewers, cfg.Addrs, cfg.Prompt)
	p("  idle connections answered           %d (failed %d), closed by the relay %d", r.IdleOpened, r.IdleFailed, r.IdleClosed)
	p("  viewer connections open             %d, refused with limit %d, closed during the upgrade %d, refused otherwise %d %s", r.ViewersOpen, r.ViewersLimit, r.ViewersCut, r.ViewersOther, r.ViewerError)
	p("  setup                               %.1f s", r.SetupSeconds)
	p("  owner connected after the idle ones %.0f ms (must be <= %v) %s", r.OwnerAfterIdle, cfg.OwnerWithin, r.OwnerAfterIdleErr)
	p("  owner connected after all          %.0f ms (must be <= %v)", r.OwnerConnect, cfg.OwnerWithin)
	p("  owner's turn (send to idle)         %.0f ms, status %s, prompt echoed %d of %d bytes", r.OwnerTurn, r.OwnerStatus, r.OwnerEchoed, cfg.Prompt)
	p("  relay RSS                           %.1f MiB (peak %.1f MiB), %d open files (limit %d), %d WARN/ERROR log lines", r.RelayRSS, r.RelayPeakRSS, r.RelayFDs, r.RelayNoFile, r.RelayWarnings)
	verdict := "PASS"
	if !r.OwnerOK(cfg) {
		verdict = "FAIL"
	}
	p("  %s", verdict)
}

// run starts the relay, opens the attack's connections, runs the owner and
// stops everything. Progress goes to logw.
func run(ctx context.Context, cfg config, logw io.Writer) (*result, error) {
	logf := func(format string, a ...any) { fmt.Fprintf(logw, "flood: "+format+"\n", a...) }
	// The relay inherits this process's open-file limit: as high as it
	// goes. The connections' own ends are held by worker processes (a copy
	// of this program each, -worker), perWorker each, so that no process
	// needs more files than a hard limit of 20,000 allows.
	nofile, err := raiseNoFile(uint64(cfg.Idle+cfg.Viewers) + 1024)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pilotdesk-flood-")
	if err != nil {
		return nil, err
	}
	if cfg.Keep {
		logf("temp dir %s", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	owner := relayproc.NewToken()
	rp, err := startRelay(ctx, cfg, dir, owner)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rp.Stop(30 * time.Second) }() // how it exits is not measured
	viewer, err := makeViewerToken(ctx, cfg.Bin, filepath.Join(dir, "data"))
	if err != nil {
		return nil, err
	}
	res := &result{RelayNoFile: nofile}
	start := time.Now()

	logf("opening %d idle HTTP connections", cfg.Idle)
	idle, err := startWorkers(ctx, cfg, "idle", cfg.Idle, rp, "", res)
	defer stopWorkers(idle)
	if err != nil {
		return nil, err
	}
	// The owner, while every idle connection the relay kept is still open
	// (it closes them 60 s after their answer).
	res.OwnerAfterIdle, res.OwnerAfterIdleErr = ownerConnect(ctx, rp.URL, owner)
	logf("opening %d viewer connections", cfg.Viewers)
	viewers, err := startWorkers(ctx, cfg, "viewers", cfg.Viewers, rp, viewer, res)
	defer stopWorkers(viewers)
	if err != nil {
		return nil, err
	}
	res.SetupSeconds = time.Since(start).Seconds()
	for _, w := range idle {
		n, err := w.countClosed()
		if err != nil {
			return nil, err
		}
		res.IdleClosed += n
	}
	if kib, err := procstat.Field(rp.Pid(), "VmRSS"); err == nil {
		res.RelayRSS = float64(kib) / 1024
	}
	if fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", rp.Pid())); err == nil {
		res.RelayFDs = len(fds)
	}

	logf("the owner connects and sends %d bytes", cfg.Prompt)
	runOwner(ctx, cfg, rp.URL, owner, res)
	if kib, err := procstat.Field(rp.Pid(), "VmHWM"); err == nil {
		res.RelayPeakRSS = float64(kib) / 1024
	}
	res.RelayWarnings = len(rp.Warnings())
	return res, nil
}

// raiseNoFile raises the open-file limit towards want: to want where the
// hard limit can be raised (root with CAP_SYS_RESOURCE), else to the hard
// limit. It returns the limit now in force.
func raiseNoFile(want uint64) (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("read the open-file limit: %w", err)
	}
	if lim.Cur >= want {
		return lim.Cur, nil
	}
	if lim.Max < want && syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: want, Max: want}) == nil {
		return want, nil
	}
	lim.Cur = min(want, lim.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("raise the open-file limit to %d: %w", lim.Cur, err)
	}
	return lim.Cur, nil
}

// sourceAddrs are the n loopback addresses connections come from.
func sourceAddrs(n int) []net.IP {
	out := make([]net.IP, n)
	for i := range out {
		k := i + 1 // 127.0.0.1 first
		out[i] = net.IPv4(127, byte(k>>16), byte(k>>8), byte(k))
	}
	return out
}

// startRelay starts `pilotdesk serve` with the owner token, SQLite history
// in dir/data and a script that echoes the prompt; its log goes to
// dir/relay.log.
func startRelay(ctx context.Context, cfg config, dir, token string) (*relayproc.Relay, error) {
	script := filepath.Join(dir, "script.json")
	b, _ := json.Marshal(map[string]any{"turns": []any{map[string]any{"steps": []map[string]string{{"delta": "got it"}}}}})
	if err := os.WriteFile(script, b, 0o600); err != nil {
		return nil, err
	}
	work := filepath.Join(dir, "work")
	if err := os.MkdirAll(work, 0o700); err != nil {
		return nil, err
	}
	r, err := relayproc.Start(ctx, relayproc.Config{
		Bin:     cfg.Bin,
		Args:    []string{"--agent", "script", "--script", script, "--workdir", work, "--data-dir", filepath.Join(dir, "data")},
		Token:   token,
		LogPath: filepath.Join(dir, "relay.log"),
	})
	if err != nil {
		return nil, fmt.Errorf("%w (-keep keeps it)", err)
	}
	return r, nil
}

// makeViewerToken makes a viewer device token for the running relay's data
// dir with `pilotdesk token create`, which prints it alone on its first
// line.
func makeViewerToken(ctx context.Context, bin, dataDir string) (string, error) {
	out, err := exec.CommandContext(ctx, bin, "token", "create", "--name", "flood-viewer", "--role", "viewer", "--data-dir", dataDir).Output()
	if err != nil {
		return "", fmt.Errorf("pilotdesk token create: %w", err)
	}
	tok, _, _ := strings.Cut(string(out), "\n")
	if tok = strings.TrimSpace(tok); tok == "" {
		return "", errors.New("pilotdesk token create printed no token")
	}
	return tok, nil
}

// dialer is a dialer from the i-th connection's source address.
func dialer(addrs []net.IP, i int) *net.Dialer {
	return &net.Dialer{Timeout: 30 * time.Second, LocalAddr: &net.TCPAddr{IP: addrs[i%len(addrs)]}}
}

// parallel runs f(i) for i in [0, n), at most conc at once.
func parallel(ctx context.Context, n, conc int, f func(i int)) {
	sem := make(chan struct{}, conc)
	var wg sync.WaitGroup
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			f(i)
		}()
	}
	wg.Wait()
}

// openIdle opens the idle connections: each sends one GET /healthz and
// reads its answer, and then sends nothing more.
func openIdle(ctx context.Context, cfg config, addr string, addrs []net.IP, res *result) []net.Conn {
	conns := make([]net.Conn, cfg.Idle)
	req := "GET /healthz HTTP/1.1\r\nHost: " + addr + "\r\n\r\n"
	parallel(ctx, cfg.Idle, cfg.Conc, func(i int) {
		c, err := dialer(addrs, i).DialContext(ctx, "tcp", addr)
		if err != nil {
			return
		}
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := io.WriteString(c, req); err != nil {
			c.Close()
			return
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			c.Close()
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		_ = c.SetDeadline(time.Time{})
		conns[i] = c
	})
	kept := conns[:0]
	for _, c := range conns {
		if c != nil {
			kept = append(kept, c)
		}
	}
	res.IdleOpened = len(kept)
	res.IdleFailed = cfg.Idle - len(kept)
	return kept
}

// countClosed counts the connections the relay has closed: a read returns
// at once (EOF or a reset) instead of timing out.
func countClosed(conns []net.Conn) int {
	var closed atomic.Int64
	parallel(context.Background(), len(conns), 512, func(i int) {
		c := conns[i]
		_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		var b [1]byte
		_, err := c.Read(b[:])
		var ne net.Error
		if err != nil && !(errors.As(err, &ne) && ne.Timeout()) {
			closed.Add(1)
		}
	})
	return int(closed.Load())
}

// openViewers opens the viewer connections and keeps those the relay let
// in: upgraded, and answering a ping with a pong.
func openViewers(ctx context.Context, cfg config, wsURL, token string, addrs []net.IP, res *result) []*websocket.Conn {
	conns := make([]*websocket.Conn, cfg.Viewers)
	var mu sync.Mutex
	parallel(ctx, cfg.Viewers, cfg.Conc, func(i int) {
		c, err := dialWS(ctx, wsURL, token, addrs, i)
		if err == nil {
			err = pingPong(ctx, c)
		}
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
			conns[i] = c
			res.ViewersOpen++
			return
		case isLimit(err):
			res.ViewersLimit++
		case isCut(err):
			res.ViewersCut++
		default:
			res.ViewersOther++
			if res.ViewerError == "" {
				res.ViewerError = "(" + err.Error() + ")"
			}
		}
		if c != nil {
			c.CloseNow()
		}
	})
	kept := conns[:0]
	for _, c := range conns {
		if c != nil {
			kept = append(kept, c)
		}
	}
	return kept
}

// errLimit is a refusal with the relay's limit: error code limit or the
// close code 1013.
var errLimit = errors.New("limit")

func isLimit(err error) bool {
	return errors.Is(err, errLimit) || websocket.CloseStatus(err) == websocket.StatusTryAgainLater
}

// isCut reports whether the relay closed the connection before answering
// the upgrade.
func isCut(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		strings.Contains(err.Error(), "server closed idle connection") // net/http's word for an EOF before the answer
}

func dialWS(ctx context.Context, wsURL, token string, addrs []net.IP, i int) (*websocket.Conn, error) {
	d := dialer(addrs, i)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, wsURL+"?client=other", &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + token}},
		HTTPClient: &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}},
	})
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("upgrade: HTTP %d: %w", resp.StatusCode, err)
		}
		return nil, err
	}
	c.SetReadLimit(2 << 20)
	return c, nil
}

// frame is a relay frame as far as the tool reads it.
type frame struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// pingPong sends a ping and waits for the pong; a refusal comes first
// instead (error code limit, then the close).
func pingPong(ctx context.Context, c *websocket.Conn) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"ping"}`)); err != nil {
		return err
	}
	for {
		f, err := readFrame(ctx, c)
		if err != nil {
			return err
		}
		switch f.Type {
		case "pong":
			return nil
		case "error":
			var e struct{ Code, Message string }
			_ = json.Unmarshal(f.Data, &e)
			if e.Code == "limit" {
				return fmt.Errorf("%w: %s", errLimit, e.Message)
			}
			return fmt.Errorf("error %s: %s", e.Code, e.Message)
		}
	}
}

func readFrame(ctx context.Context, c *websocket.Conn) (frame, error) {
	var f frame
	_, b, err := c.Read(ctx)
	if err != nil {
		return f, err
	}
	err = json.Unmarshal(b, &f)
	return f, err
}

// ownerConnect times the owner's dial, upgrade and first pong, and closes.
func ownerConnect(ctx context.Context, wsURL, token string) (ms float64, failure string) {
	start := time.Now()
	c, err := dialWS(ctx, wsURL, token, []net.IP{net.IPv4(127, 0, 0, 1)}, 0)
	if err == nil {
		err = pingPong(ctx, c)
		c.CloseNow()
	}
	ms = float64(time.Since(start).Microseconds()) / 1000
	if err != nil {
		return ms, "(" + err.Error() + ")"
	}
	return ms, ""
}

// runOwner connects with the owner token (from 127.0.0.1, like the
// attack's first address), subscribes to a new conversation and runs a
// turn with a prompt of cfg.Prompt bytes.
func runOwner(ctx context.Context, cfg config, wsURL, token string, res *result) {
	start := time.Now()
	c, err := dialWS(ctx, wsURL, token, []net.IP{net.IPv4(127, 0, 0, 1)}, 0)
	if err == nil {
		err = pingPong(ctx, c)
	}
	res.OwnerConnect = float64(time.Since(start).Microseconds()) / 1000
	if err != nil {
		res.OwnerStatus = "connect: " + err.Error()
		return
	}
	defer c.CloseNow()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	conv := "flood-" + relayproc.NewToken()[:12]
	prompt := strings.Repeat("0123456789", cfg.Prompt/10+1)[:cfg.Prompt]
	start = time.Now()
	for _, msg := range []map[string]any{
		{"type": "copilot:subscribe", "data": map[string]any{"conversationId": conv}},
		{"type": "copilot:send", "data": map[string]any{"conversationId": conv, "prompt": prompt}},
	} {
		b, _ := json.Marshal(msg)
		if err := c.Write(ctx, websocket.MessageText, b); err != nil {
			res.OwnerStatus = "send: " + err.Error()
			return
		}
	}
	for {
		f, err := readFrame(ctx, c)
		if err != nil {
			res.OwnerStatus = "waiting for the turn's end: " + err.Error()
			return
		}
		switch f.Type {
		case "error":
			res.OwnerStatus = "error: " + string(f.Data)
			return
		case "copilot:user_message":
			var m struct{ Content string }
			_ = json.Unmarshal(f.Data, &m)
			if m.Content == prompt {
				res.OwnerEchoed = len(m.Content)
			}
		case "copilot:idle":
			var m struct{ Status string }
			_ = json.Unmarshal(f.Data, &m)
			res.OwnerTurn = float64(time.Since(start).Microseconds()) / 1000
			res.OwnerStatus = m.Status
			return
		}
	}
}
