package chat

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
)

// call is one message the REPL sent to the relay.
type call struct {
	kind     string // subscribe, unsubscribe, send, abort, set_mode, answer, reject, list
	conv     string
	since    int64
	prompt   string
	mode     protocol.Mode
	reqID    string
	answer   string
	freeform bool
	index    *int
	limit    int    // list
	cursor   string // list
}

// fakeConn is a relay connection the test drives: it records what the REPL
// sends and delivers the events the test emits, decoded by client.Decode
// from real frames. The end-to-end tests (cli/chat_terminal_test.go) use
// the real relay.
type fakeConn struct {
	events chan client.Event
	calls  chan call

	mu   sync.Mutex
	fail map[string]error         // kind → error to return
	hold map[string]chan struct{} // kind → the next such call waits for it to close
}

func newFakeConn() *fakeConn {
	return &fakeConn{events: make(chan client.Event, 256), calls: make(chan call, 256), fail: map[string]error{}, hold: map[string]chan struct{}{}}
}

func (f *fakeConn) record(c call) error {
	f.mu.Lock()
	err := f.fail[c.kind]
	hold := f.hold[c.kind]
	delete(f.hold, c.kind)
	f.mu.Unlock()
	f.calls <- c
	if hold != nil {
		<-hold
	}
	return err
}

// holdNext makes the REPL's next call of kind, once recorded, wait until
// release is called: the loop is busy meanwhile, as a slow relay keeps
// it, while the test readies what it takes next.
func (f *fakeConn) holdNext(kind string) (release func()) {
	ch := make(chan struct{})
	f.mu.Lock()
	f.hold[kind] = ch
	f.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { close(ch) }) }
}

func (f *fakeConn) Events() <-chan client.Event { return f.events }
func (f *fakeConn) Subscribe(_ context.Context, id string, since int64) error {
	return f.record(call{kind: "subscribe", conv: id, since: since})
}
func (f *fakeConn) Unsubscribe(_ context.Context, id string) error {
	return f.record(call{kind: "unsubscribe", conv: id})
}
func (f *fakeConn) Send(_ context.Context, id, prompt string, mode protocol.Mode, _ string) error {
	return f.record(call{kind: "send", conv: id, prompt: prompt, mode: mode})
}
func (f *fakeConn) Abort(_ context.Context, id string) error {
	return f.record(call{kind: "abort", conv: id})
}
func (f *fakeConn) SetMode(_ context.Context, id string, mode protocol.Mode) error {
	return f.record(call{kind: "set_mode", conv: id, mode: mode})
}
func (f *fakeConn) Answer(_ context.Context, id, reqID, answer string, freeform bool, index *int) error {
	return f.record(call{kind: "answer", conv: id, reqID: reqID, answer: answer, freeform: freeform, index: index})
}
func (f *fakeConn) Reject(_ context.Context, id, reqID string) error {
	return f.record(call{kind: "reject", conv: id, reqID: reqID})
}
func (f *fakeConn) Restore(_ context.Context, id, checkpoint string) error {
	return f.record(call{kind: "restore", conv: id, answer: checkpoint})
}
func (f *fakeConn) Diff(_ context.Context, id, checkpoint, path string) error {
	return f.record(call{kind: "diff", conv: id, answer: checkpoint})
}
func (f *fakeConn) DeleteConversation(_ context.Context, id string) error {
	return f.record(call{kind: "delete", conv: id})
}
func (f *fakeConn) ListPage(_ context.Context, limit int, cursor string) error {
	return f.record(call{kind: "list", limit: limit, cursor: cursor})
}

// output collects what the REPL writes, and plays it on a vt when the
// terminal is Live.
type output struct {
	mu  sync.Mutex
	raw bytes.Buffer
	vt  *vt
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.raw.Write(p)
	if o.vt != nil {
		o.vt.Write(p)
	}
	return len(p), nil
}

var ansi = regexp.MustCompile("\x1b\\[[0-9;?]*[A-Za-z]")

// text is the output without ANSI sequences and carriage returns.
func (o *output) text() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return strings.ReplaceAll(ansi.ReplaceAllString(o.raw.String(), ""), "\r", "")
}

func (o *output) bytes() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.raw.String()
}

func (o *output) screen() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.vt.String()
}

// harness runs the REPL on a fake connection.
type harness struct {
	t     *testing.T
	conn  *fakeConn
	out   *output
	in    *io.PipeWriter
	conv  string
	mark  int // waitFor searches the text after this offset
	done  chan error
	seq   int64
	reqN  int
	width int
}

const testConv = "11111111-2222-4333-8444-555555555555"

// startREPL runs the REPL with the terminal t and subscribes it (the
// copilot:subscribed of an empty conversation, unless resume is set).
func startREPL(t *testing.T, term Terminal, cfg func(*Config)) *harness {
	t.Helper()
	return startHarness(t, term, cfg, nil)
}

// startLoop runs the REPL's loop with the terminal t on keys in place of
// In's reader: what the test sends there is what the loop's reader would
// have read, ready for the loop at once (typeIn's reader may still be on
// its way to it).
func startLoop(t *testing.T, term Terminal) (*harness, chan<- inputChunk) {
	t.Helper()
	keys := make(chan inputChunk, 16)
	return startHarness(t, term, nil, keys), keys
}

func startHarness(t *testing.T, term Terminal, cfg func(*Config), keys <-chan inputChunk) *harness {
	t.Helper()
	pr, pw := io.Pipe()
	h := &harness{t: t, conn: newFakeConn(), out: &output{}, in: pw, conv: testConv, done: make(chan error, 1), width: 60}
	if term.Live {
		h.out.vt = newVT(h.width)
		term.Width = func() int { return h.width }
	}
	c := Config{
		Conn:            h.conn,
		In:              pr,
		Out:             h.out,
		Term:            term,
		Relay:           "test relay",
		NewID:           func() string { return testConv },
		SpinnerInterval: time.Hour, // frames do not advance unless a test says so
	}
	if cfg != nil {
		cfg(&c)
	}
	if c.ConversationID != "" {
		h.conv = c.ConversationID
	}
	ctx, cancel := context.WithCancel(context.Background())
	if keys == nil {
		go func() { h.done <- Run(ctx, c) }()
	} else {
		r, err := newREPL(c)
		if err != nil {
			t.Fatal(err)
		}
		go func() { h.done <- r.loop(ctx, keys) }()
	}
	t.Cleanup(func() {
		cancel()
		pw.Close()
		select {
		case <-h.done:
		case <-time.After(relaytest.Timeout):
			t.Error("Run did not return after its context ended")
		}
	})
	sub := h.nextCall("subscribe")
	if sub.conv != h.conv || sub.since != 0 {
		t.Fatalf("subscribed to %s since %d, want %s since 0", sub.conv, sub.since, h.conv)
	}
	return h
}

// emit delivers a relay message to the REPL, encoded and decoded as on the
// wire. Conversation events get the next seq.
func (h *harness) emit(msgType string, data map[string]any) {
	h.t.Helper()
	if data != nil {
		if _, ok := data["conversationId"]; !ok {
			data["conversationId"] = h.conv
		}
		if msgType != protocol.TypeSubscribed && msgType != protocol.TypeConversations && msgType != protocol.TypeError {
			h.seq++
			data["seq"] = h.seq
		}
	}
	var frame []byte
	var err error
	if data == nil {
		frame, err = protocol.Encode(msgType, nil)
	} else {
		frame, err = protocol.Encode(msgType, data)
	}
	if err != nil {
		h.t.Fatal(err)
	}
	ev, err := client.Decode(frame)
	if err != nil {
		h.t.Fatalf("decode %s: %v", frame, err)
	}
	h.conn.events <- ev
}

func (h *harness) subscribed(extra map[string]any) {
	h.t.Helper()
	d := map[string]any{"mode": "act", "streaming": false, "seq": h.seq, "epoch": "e1"}
	for k, v := range extra {
		d[k] = v
	}
	h.emit(protocol.TypeSubscribed, d)
}

// request emits an input request and returns its id.
func (h *harness) request(inputType, question string, choices []string, freeform bool) string {
	h.t.Helper()
	h.reqN++
	id := fmt.Sprintf("req-%d", h.reqN)
	d := map[string]any{"requestId": id, "question": question, "allowFreeform": freeform}
	if inputType != "" {
		d["inputType"] = inputType
	}
	if choices != nil {
		d["choices"] = choices
	}
	h.emit(protocol.TypeUserInputRequest, d)
	return id
}

func (h *harness) delta(text string) {
	h.emit(protocol.TypeDelta, map[string]any{"messageId": "m1", "content": text})
}

func (h *harness) idle(status string) {
	h.emit(protocol.TypeIdle, map[string]any{"status": status})
}

// typeIn writes s to the REPL's input. It returns once the REPL's reader
// has read s, not once the loop has taken it: an event emitted next may
// still be taken first. A test whose event must come after the keys waits
// for what they do (the screen, a call) before it emits it, or, with
// startLoop, readies both while the loop is held in a call (holdNext):
// the loop then takes the keys first.
func (h *harness) typeIn(s string) {
	h.t.Helper()
	if _, err := io.WriteString(h.in, s); err != nil {
		h.t.Fatal(err)
	}
}

// waitFor waits until the output (without ANSI) contains s after the mark,
// and moves the mark past it.
func (h *harness) waitFor(s string) {
	h.t.Helper()
	deadline := time.Now().Add(relaytest.Timeout)
	for {
		text := h.out.text()
		if i := strings.Index(text[min(h.mark, len(text)):], s); i >= 0 {
			h.mark += i + len(s)
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("the output never showed %q after offset %d; it is:\n%s", s, h.mark, text)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitScreen waits until the vt's screen satisfies ok.
func (h *harness) waitScreen(what string, ok func(screen string) bool) string {
	h.t.Helper()
	deadline := time.Now().Add(relaytest.Timeout)
	for {
		s := h.out.screen()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("the screen never showed %s; it is:\n%s", what, s)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// nextCall returns the REPL's next message to the relay, which must be of
// kind.
func (h *harness) nextCall(kind string) call {
	h.t.Helper()
	select {
	case c := <-h.conn.calls:
		if c.kind != kind {
			h.t.Fatalf("the REPL sent %s (%+v), want %s; output:\n%s", c.kind, c, kind, h.out.text())
		}
		return c
	case <-time.After(relaytest.Timeout):
		h.t.Fatalf("the REPL sent no %s; output:\n%s", kind, h.out.text())
	}
	return call{}
}

// noCall checks that the REPL sent nothing more (after a sync point the
// test reached through the output).
func (h *harness) noCall() {
	h.t.Helper()
	select {
	case c := <-h.conn.calls:
		h.t.Fatalf("unexpected %s (%+v); output:\n%s", c.kind, c, h.out.text())
	default:
	}
}

// exit waits for Run to return.
func (h *harness) exit() error {
	h.t.Helper()
	select {
	case err := <-h.done:
		h.done <- err // for the cleanup
		return err
	case <-time.After(relaytest.Timeout):
		h.t.Fatalf("the REPL did not quit; output:\n%s", h.out.text())
	}
	return nil
}
