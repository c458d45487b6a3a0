package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"

	"github.com/pilotdesk/pilotdesk/internal/relayproc"
)

// perWorker is how many connections one worker process holds: under a hard
// open-file limit of 20,000 (the project's machine; raising it needs
// CAP_SYS_RESOURCE, which a container's root may lack).
const perWorker = 15_000

// workerReport is a worker's first line: what it opened.
type workerReport struct {
	Opened int    `json:"opened"`
	Failed int    `json:"failed"`
	Open   int    `json:"open"`
	Limit  int    `json:"limit"`
	Cut    int    `json:"cut"`
	Other  int    `json:"other"`
	Error  string `json:"error,omitempty"`
}

// worker is a child process holding connections of one kind.
type worker struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

// startWorkers starts the workers that open n connections of kind (idle or
// viewers) to the relay, perWorker each, one after the other, and adds
// what they opened to res.
func startWorkers(ctx context.Context, cfg config, kind string, n int, rp *relayproc.Relay, token string, res *result) ([]*worker, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	var ws []*worker
	for from := 0; from < n; from += perWorker {
		count := min(perWorker, n-from)
		cmd := exec.CommandContext(ctx, self, "-worker", kind, "-worker-from", strconv.Itoa(from), "-worker-n", strconv.Itoa(count),
			"-worker-addr", rp.Addr, "-addrs", strconv.Itoa(cfg.Addrs), "-concurrency", strconv.Itoa(cfg.Conc))
		cmd.Env = append(os.Environ(), "PILOTDESK_FLOOD_TOKEN="+token)
		cmd.Stderr = os.Stderr
		w := &worker{cmd: cmd}
		if w.stdin, err = cmd.StdinPipe(); err != nil {
			return ws, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return ws, err
		}
		w.out = bufio.NewReader(stdout)
		if err := cmd.Start(); err != nil {
			return ws, fmt.Errorf("start a worker: %w", err)
		}
		ws = append(ws, w)
		var rep workerReport
		if err := w.read(&rep); err != nil {
			return ws, fmt.Errorf("the %s worker: %w", kind, err)
		}
		res.IdleOpened += rep.Opened
		res.IdleFailed += rep.Failed
		res.ViewersOpen += rep.Open
		res.ViewersLimit += rep.Limit
		res.ViewersCut += rep.Cut
		res.ViewersOther += rep.Other
		if res.ViewerError == "" {
			res.ViewerError = rep.Error
		}
	}
	return ws, nil
}

func (w *worker) read(v any) error {
	line, err := w.out.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("no answer (%w)", err)
	}
	return json.Unmarshal(line, v)
}

// countClosed asks an idle worker how many of its connections the relay
// has closed.
func (w *worker) countClosed() (int, error) {
	if _, err := io.WriteString(w.stdin, "count\n"); err != nil {
		return 0, err
	}
	var c struct{ Closed int }
	if err := w.read(&c); err != nil {
		return 0, fmt.Errorf("an idle worker's count: %w", err)
	}
	return c.Closed, nil
}

// stopWorkers ends the workers: each closes its connections when its
// stdin ends.
func stopWorkers(ws []*worker) {
	for _, w := range ws {
		w.stdin.Close()
	}
	for _, w := range ws {
		_ = w.cmd.Wait()
	}
}

// workerMain is a worker process: it opens its connections, reports, and
// holds them until its stdin ends, answering "count" with how many of
// them the relay has closed.
func workerMain(kind string, from, n int, addr string, addrs, conc int) error {
	if _, err := raiseNoFile(uint64(n) + 256); err != nil {
		return err
	}
	ctx := context.Background()
	cfg := config{Idle: n, Viewers: n, Addrs: addrs, Conc: conc}
	ips := sourceAddrs(addrs)
	// The address round robin goes on from the worker's first connection.
	ips = append(ips[from%len(ips):], ips[:from%len(ips)]...)
	var res result
	var rep workerReport
	var closeAll func()
	var idle []net.Conn
	switch kind {
	case "idle":
		idle = openIdle(ctx, cfg, addr, ips, &res)
		closeAll = func() {
			for _, c := range idle {
				c.Close()
			}
		}
	case "viewers":
		conns := openViewers(ctx, cfg, "ws://"+addr+"/ws", os.Getenv("PILOTDESK_FLOOD_TOKEN"), ips, &res)
		closeAll = func() {
			for _, c := range conns {
				c.CloseNow()
			}
		}
	default:
		return fmt.Errorf("unknown worker kind %q", kind)
	}
	defer closeAll()
	rep = workerReport{Opened: res.IdleOpened, Failed: res.IdleFailed, Open: res.ViewersOpen, Limit: res.ViewersLimit,
		Cut: res.ViewersCut, Other: res.ViewersOther, Error: res.ViewerError}
	enc := json.NewEncoder(os.Stdout)
	if err := enc.Encode(rep); err != nil {
		return err
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if in.Text() == "count" {
			if err := enc.Encode(map[string]int{"closed": countClosed(idle)}); err != nil {
				return err
			}
		}
	}
	if err := in.Err(); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}
