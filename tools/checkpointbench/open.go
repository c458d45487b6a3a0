package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/coder/websocket"

	"github.com/pilotdesk/pilotdesk/internal/atomicfile"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/checkpoint"
	"github.com/pilotdesk/pilotdesk/relay/history/sqlite"
	"github.com/pilotdesk/pilotdesk/session/script"
)

// The third target: a conversation with many checkpoints opens as fast as
// one without (±10%). Opening is what a window, a terminal or a phone
// does when it shows a conversation: subscribe from seq 0 and read the
// history up to copilot:subscribed. The conversation's turns are played
// once through a relay with checkpoints (each Act turn changes a file
// with a shell command, so each has its snapshot and copilot:changes);
// then its history is opened through two relays over copies of the same
// SQLite history: one with the checkpoint store holding every snapshot,
// one with an empty store. The same events either way, so what differs is
// what the snapshots cost an open.

const benchToken = "checkpointbench-token-0123456789"

// turnScript changes a file by a shell command in every turn.
const turnScript = `{"turns": [{"steps": [
	{"tool": {"name": "bash", "arguments": {"command": "date +%s%N >> log.txt"}, "run": "date +%s%N >> log.txt"}},
	{"delta": "Logged."}
]}]}`

// startRelay serves a relay on dataDir's history, with checkpoints in it
// when snapshots is true, and returns its ws:// URL and its stop.
func startRelay(dataDir, work string, snapshots bool) (string, func(), error) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, dataDir, sqlite.Options{})
	if err != nil {
		return "", nil, err
	}
	s, err := script.Parse("bench.json", []byte(turnScript))
	if err != nil {
		st.Close()
		return "", nil, err
	}
	cfg := relay.Config{Agent: script.New(s), Store: st, Token: benchToken, WorkDir: work, Logger: slog.New(slog.DiscardHandler)}
	if snapshots {
		cp, err := checkpoint.New(dataDir)
		if err != nil {
			st.Close()
			return "", nil, err
		}
		cfg.Checkpoints = cp
	}
	r, err := relay.New(cfg)
	if err != nil {
		st.Close()
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		st.Close()
		return "", nil, err
	}
	srv := &http.Server{Handler: r.Handler()}
	go srv.Serve(ln)
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = r.Close(ctx)
		_ = srv.Shutdown(ctx)
		_ = st.Close()
	}
	return "ws://" + ln.Addr().String() + "/ws", stop, nil
}

// conn is a bench client's connection.
type conn struct{ ws *websocket.Conn }

func dial(url string) (*conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + benchToken}}})
	if err != nil {
		return nil, err
	}
	ws.SetReadLimit(64 << 20)
	return &conn{ws: ws}, nil
}

func (c *conn) send(typ string, data any) error {
	b, err := json.Marshal(map[string]any{"type": typ, "data": data})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return c.ws.Write(ctx, websocket.MessageText, b)
}

// frame is what the bench reads of a relay's message.
type frame struct {
	Type string
	Data struct{ Code, Message, Status string }
}

// read reads frames, handing each to f, until f says done, an error
// frame comes or the read fails (60 s at most); it returns how many came.
func (c *conn) read(f func(fr *frame) (done bool, err error)) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for n := 1; ; n++ {
		_, b, err := c.ws.Read(ctx)
		if err != nil {
			return n, err
		}
		var fr frame
		if err := json.Unmarshal(b, &fr); err != nil {
			return n, err
		}
		if fr.Type == "error" {
			return n, fmt.Errorf("the relay answered %s: %s", fr.Data.Code, fr.Data.Message)
		}
		if done, err := f(&fr); done || err != nil {
			return n, err
		}
	}
}

// until reads frames until one of typ, and returns how many came.
func (c *conn) until(typ string) (int, error) {
	return c.read(func(fr *frame) (bool, error) { return fr.Type == typ, nil })
}

// turn reads a turn's frames up to its copilot:idle and reports whether
// its copilot:changes came.
func (c *conn) turn() (changed bool, err error) {
	_, err = c.read(func(fr *frame) (bool, error) {
		switch fr.Type {
		case "copilot:changes":
			changed = true
		case "copilot:idle":
			if fr.Data.Status != "completed" {
				return true, fmt.Errorf("a turn ended %s", fr.Data.Status)
			}
			return true, nil
		}
		return false, nil
	})
	return changed, err
}

func (c *conn) close() { c.ws.Close(websocket.StatusNormalClosure, "") }

// openBench plays turns into one conversation, then opens it through a
// relay with its snapshots and one without, runs times each, alternating.
func openBench(root string, turns, runs int) (with, without time.Duration, events int, err error) {
	work := filepath.Join(root, "open-work")
	withDir, withoutDir := filepath.Join(root, "open-with"), filepath.Join(root, "open-without")
	for _, d := range []string{work, withDir, withoutDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return 0, 0, 0, err
		}
	}
	const id = "5b0c7a52-1111-4000-8000-000000000200"
	url, stop, err := startRelay(withDir, work, true)
	if err != nil {
		return 0, 0, 0, err
	}
	c, err := dial(url)
	if err != nil {
		stop()
		return 0, 0, 0, err
	}
	changes := 0
	for i := range turns {
		if err = c.send("copilot:send", map[string]any{"conversationId": id, "prompt": fmt.Sprintf("turn %d", i)}); err != nil {
			break
		}
		var changed bool
		if changed, err = c.turn(); err != nil {
			break
		}
		if changed {
			changes++
		}
	}
	c.close()
	stop()
	if err != nil {
		return 0, 0, 0, fmt.Errorf("playing the turns: %w", err)
	}
	if changes != turns {
		return 0, 0, 0, fmt.Errorf("%d of %d turns had a checkpoint (copilot:changes)", changes, turns)
	}
	dbs, err := filepath.Glob(filepath.Join(withDir, "history.db*"))
	if err != nil || len(dbs) == 0 {
		return 0, 0, 0, fmt.Errorf("no history.db in %s: %v", withDir, err)
	}
	for _, db := range dbs {
		if err := copyFile(db, filepath.Join(withoutDir, filepath.Base(db))); err != nil {
			return 0, 0, 0, err
		}
	}

	open := func(url string) (time.Duration, int, error) {
		start := time.Now()
		c, err := dial(url)
		if err != nil {
			return 0, 0, err
		}
		defer c.close()
		if err := c.send("copilot:subscribe", map[string]any{"conversationId": id, "sinceSeq": 0}); err != nil {
			return 0, 0, err
		}
		n, err := c.until("copilot:subscribed")
		return time.Since(start), n, err
	}
	urlWith, stopWith, err := startRelay(withDir, work, true)
	if err != nil {
		return 0, 0, 0, err
	}
	defer stopWith()
	urlWithout, stopWithout, err := startRelay(withoutDir, work, false)
	if err != nil {
		return 0, 0, 0, err
	}
	defer stopWithout()
	var a, b []time.Duration
	for i := range runs {
		// Each first in turn: an open right after the other's pays for
		// nothing of its own.
		for k := range 2 {
			url, into := urlWith, &a
			if (i+k)%2 == 1 {
				url, into = urlWithout, &b
			}
			d, n, err := open(url)
			if err != nil {
				return 0, 0, 0, err
			}
			if events != 0 && n != events {
				return 0, 0, 0, fmt.Errorf("the two relays replayed %d and %d frames of one history", events, n)
			}
			events, *into = n, append(*into, d)
		}
	}
	return median(a), median(b), events, nil
}

// copyFile copies the history database (closed: its WAL checkpointed).
func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	return atomicfile.Write(to, atomicfile.OwnerOnly, func(w io.Writer) error {
		_, err := io.Copy(w, in)
		return err
	})
}
