// Package relaytest runs a real relay for tests: a WebSocket server on
// 127.0.0.1 with a random port, shut down when the test ends, and a small
// WebSocket client to drive it.
//
//	srv := relaytest.Start(t, relay.Config{Agent: relaytest.EchoAgent()})
//	cl := srv.Dial(t)
//	cl.Send("copilot:send", map[string]any{"conversationId": id, "prompt": "hi"})
//	idle := cl.WaitFor("copilot:idle", nil)
package relaytest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/session"
)

// Timeout is how long the helpers wait for anything. It is generous: the
// machine running the tests may be busy (under -race, with a load of 20 on
// 2 cores, a takeover or a 30 MiB reply took over 10 s). A test that
// passes never waits it out; only a failing one takes longer to say so.
const Timeout = 30 * time.Second

// Server is a relay listening on 127.0.0.1.
type Server struct {
	URL     string // ws://127.0.0.1:PORT/ws
	HTTPURL string // http://127.0.0.1:PORT
	Token   string // the token clients must present ("" = none), cfg.Token
	Relay   *relay.Relay

	http *http.Server
	done chan struct{}
}

// Start starts a relay with cfg on 127.0.0.1:0. A nil cfg.Agent is
// EchoAgent(). Everything is shut down in t.Cleanup (the relay first, then
// the listener); the Agent and the Store are not closed.
func Start(t testing.TB, cfg relay.Config) *Server {
	t.Helper()
	if cfg.Agent == nil {
		cfg.Agent = EchoAgent()
	}
	r, err := relay.New(cfg)
	if err != nil {
		t.Fatalf("relaytest: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("relaytest: listen: %v", err)
	}
	s := &Server{
		URL:     "ws://" + ln.Addr().String() + "/ws",
		HTTPURL: "http://" + ln.Addr().String(),
		Token:   cfg.Token,
		Relay:   r,
		http:    &http.Server{Handler: r.Handler(), ReadHeaderTimeout: Timeout, ConnState: r.ConnState},
		done:    make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("relaytest: serve: %v", err)
		}
	}()
	t.Cleanup(s.Close)
	return s
}

// Close shuts the relay and the listener down; Start's cleanup calls it, and
// a test may call it earlier (to restart a relay on the same store, say).
func (s *Server) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*Timeout)
	defer cancel()
	select {
	case <-s.done:
		return // closed already
	default:
	}
	_ = s.Relay.Close(ctx)
	_ = s.http.Shutdown(ctx)
	<-s.done
}

// Frame is one message received from the relay.
type Frame struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data,omitempty"`
	Raw  []byte          `json:"-"`
}

// Decode unmarshals the frame's data into v.
func (f Frame) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(f.Data, v); err != nil {
		t.Fatalf("relaytest: decode %s data %s: %v", f.Type, f.Data, err)
	}
}

// Field returns one top-level field of the frame's data, decoded into a Go
// value (string, float64, bool, map, slice), or nil.
func (f Frame) Field(name string) any {
	var m map[string]any
	_ = json.Unmarshal(f.Data, &m)
	return m[name]
}

// Seq returns data.seq, or -1 when it has none.
func (f Frame) Seq() int64 {
	if v, ok := f.Field("seq").(float64); ok {
		return int64(v)
	}
	return -1
}

// Client is a WebSocket client of the relay for tests. A goroutine reads
// every frame into an unbounded queue, so the client never stalls the relay
// unless the test wants it to (use Conn directly for that).
type Client struct {
	Conn *websocket.Conn
	t    testing.TB

	mu      sync.Mutex // guards frames, readErr
	frames  []Frame
	readErr error
	notify  chan struct{}
	done    chan struct{}
}

// Dial connects to the server with its token.
func (s *Server) Dial(t testing.TB) *Client {
	t.Helper()
	return Dial(t, s.URL, s.Token)
}

// Dial connects to a relay's ws:// URL, sending token as a Bearer header
// when it is not empty. The connection is closed in t.Cleanup.
func Dial(t testing.TB, wsURL, token string) *Client {
	t.Helper()
	conn, err := DialConn(wsURL, token)
	if err != nil {
		t.Fatalf("relaytest: dial: %v", err)
	}
	c := &Client{Conn: conn, t: t, notify: make(chan struct{}, 1), done: make(chan struct{})}
	go c.readLoop()
	t.Cleanup(c.Close)
	return c
}

// DialConn opens a raw WebSocket connection to the relay (no reader
// goroutine): for tests that control reading themselves.
func DialConn(wsURL, token string) (*websocket.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	opts := &websocket.DialOptions{HTTPHeader: http.Header{}}
	if token != "" {
		opts.HTTPHeader.Set("Authorization", "Bearer "+token)
	}
	conn, resp, err := websocket.Dial(ctx, wsURL, opts)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		return nil, err
	}
	conn.SetReadLimit(-1)
	return conn, nil
}

func (c *Client) readLoop() {
	defer close(c.done)
	for {
		_, data, err := c.Conn.Read(context.Background())
		c.mu.Lock()
		if err != nil {
			c.readErr = err
			c.mu.Unlock()
			c.wake()
			return
		}
		f := Frame{Raw: data}
		if jerr := json.Unmarshal(data, &f); jerr != nil {
			f = Frame{Type: "<invalid JSON>", Raw: data}
		}
		c.frames = append(c.frames, f)
		c.mu.Unlock()
		c.wake()
	}
}

func (c *Client) wake() {
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// Close closes the connection and waits for the reader.
func (c *Client) Close() {
	_ = c.Conn.CloseNow()
	<-c.done
}

// Send sends {"type": msgType, "data": data} (data nil: no data field).
func (c *Client) Send(msgType string, data any) {
	c.t.Helper()
	env := map[string]any{"type": msgType}
	if data != nil {
		env["data"] = data
	}
	b, err := json.Marshal(env)
	if err != nil {
		c.t.Fatalf("relaytest: encode %s: %v", msgType, err)
	}
	c.SendRaw(b)
}

// SendRaw sends one text frame as is.
func (c *Client) SendRaw(frame []byte) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	if err := c.Conn.Write(ctx, websocket.MessageText, frame); err != nil {
		c.t.Fatalf("relaytest: send %.80s: %v", frame, err)
	}
}

// TryNext returns the next frame, waiting up to d. ok is false when none came
// in time or the connection ended.
func (c *Client) TryNext(d time.Duration) (f Frame, ok bool) {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		if len(c.frames) > 0 {
			f = c.frames[0]
			c.frames = c.frames[1:]
			c.mu.Unlock()
			return f, true
		}
		ended := c.readErr != nil
		c.mu.Unlock()
		if ended {
			return Frame{}, false
		}
		select {
		case <-c.notify:
		case <-deadline.C:
			return Frame{}, false
		}
	}
}

// Next returns the next frame; the test fails if none comes within Timeout.
func (c *Client) Next() Frame {
	c.t.Helper()
	f, ok := c.TryNext(Timeout)
	if !ok {
		c.t.Fatalf("relaytest: no frame within %s (connection: %v)", Timeout, c.Err())
	}
	return f
}

// Expect returns the next frame and fails the test unless it has msgType.
func (c *Client) Expect(msgType string) Frame {
	c.t.Helper()
	f := c.Next()
	if f.Type != msgType {
		c.t.Fatalf("relaytest: got %s, want %s", f.Raw, msgType)
	}
	return f
}

// WaitFor skips frames until one of msgType for which match (nil: any)
// returns true, and returns it. The skipped frames are returned too.
func (c *Client) WaitFor(msgType string, match func(Frame) bool) Frame {
	c.t.Helper()
	f, _ := c.WaitForCollect(msgType, match)
	return f
}

// WaitForCollect is WaitFor that also returns the frames it skipped.
func (c *Client) WaitForCollect(msgType string, match func(Frame) bool) (Frame, []Frame) {
	c.t.Helper()
	return c.WaitForCollectWithin(Timeout, msgType, match)
}

// WaitForCollectWithin is WaitForCollect waiting up to d: for what takes
// a real agent's whole turn, which on a busy machine can outlast Timeout.
func (c *Client) WaitForCollectWithin(d time.Duration, msgType string, match func(Frame) bool) (Frame, []Frame) {
	c.t.Helper()
	var skipped []Frame
	deadline := time.Now().Add(d)
	for {
		f, ok := c.TryNext(time.Until(deadline))
		if !ok {
			types := make([]string, 0, len(skipped))
			for _, s := range skipped {
				types = append(types, s.Type)
			}
			c.t.Fatalf("relaytest: no %s within %s (skipped %s; connection: %v)", msgType, d, strings.Join(types, ", "), c.Err())
		}
		if f.Type == msgType && (match == nil || match(f)) {
			return f, skipped
		}
		skipped = append(skipped, f)
	}
}

// ExpectNothing fails the test if a frame arrives within d.
func (c *Client) ExpectNothing(d time.Duration) {
	c.t.Helper()
	if f, ok := c.TryNext(d); ok {
		c.t.Fatalf("relaytest: unexpected frame %s", f.Raw)
	}
}

// Err is the error that ended the connection, or nil while it is open.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readErr
}

// WaitClosed waits for the relay to close the connection and returns the
// close status (-1 when it ended without a close frame) and reason.
func (c *Client) WaitClosed() (websocket.StatusCode, string) {
	c.t.Helper()
	select {
	case <-c.done:
	case <-time.After(Timeout):
		c.t.Fatalf("relaytest: the connection is still open after %s", Timeout)
	}
	var ce websocket.CloseError
	if errors.As(c.Err(), &ce) {
		return ce.Code, ce.Reason
	}
	return -1, fmt.Sprint(c.Err())
}

// WithToken returns wsURL with ?token=token.
func WithToken(wsURL, token string) string {
	u, err := url.Parse(wsURL)
	if err != nil {
		return wsURL
	}
	q := u.Query()
	q.Set("token", token)
	u.RawQuery = q.Encode()
	return u.String()
}

// TurnFunc plays one turn of a FuncAgent's session.
type TurnFunc func(ctx context.Context, conversationID string, turn session.Turn, host session.Host) error

// FuncAgent is a session.Agent whose turns run a function: the smallest
// agent a test can script in Go.
type FuncAgent struct {
	AgentName string // "" = "func"
	Turn      TurnFunc
}

func (a *FuncAgent) Name() string {
	if a.AgentName == "" {
		return "func"
	}
	return a.AgentName
}

func (a *FuncAgent) Open(ctx context.Context, conversationID string, opts session.OpenOptions, host session.Host) (session.Session, error) {
	return &funcSession{agent: a, id: conversationID, host: host}, nil
}

func (a *FuncAgent) Close() error { return nil }

type funcSession struct {
	agent *FuncAgent
	id    string
	host  session.Host
}

func (s *funcSession) Run(ctx context.Context, turn session.Turn) error {
	return s.agent.Turn(ctx, s.id, turn, s.host)
}

func (s *funcSession) Close(ctx context.Context) error { return nil }

// EchoAgent answers every prompt with "Echo: <prompt>", one delta per word,
// then the whole message.
func EchoAgent() *FuncAgent {
	return &FuncAgent{AgentName: "echo", Turn: func(ctx context.Context, _ string, turn session.Turn, host session.Host) error {
		id := fmt.Sprintf("echo-%d", time.Now().UnixNano())
		text := "Echo: " + turn.Prompt
		words := strings.SplitAfter(text, " ")
		for _, w := range words {
			if err := ctx.Err(); err != nil {
				return err
			}
			host.Emit(session.Delta{MessageID: id, Content: w})
		}
		host.Emit(session.Message{MessageID: id, Content: text})
		return nil
	}}
}
