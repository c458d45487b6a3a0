// Package client is the Go client of the relay's WebSocket protocol
// (docs/protocol.md), shared by the desktop window and the terminal
// client. It connects with a bearer token, decodes every server message into
// its protocol struct, keeps the connection alive with pings, reconnects with
// backoff and resumes each subscribed conversation from the last seq it saw,
// so a consumer sees every event once and in order.
//
// It never imports Fyne: the window consumes Events like any other client.
package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// ErrNotConnected is returned by the send helpers while the connection is
// down. Subscribe and Unsubscribe do not return it: they are remembered and
// applied on reconnect.
var ErrNotConnected = errors.New("not connected to the relay")

// ErrClosed is returned by the send helpers after Close.
var ErrClosed = errors.New("client closed")

// ErrRevoked is the Err of the final StateClosed when the relay closed the
// connection because this client's device token was revoked or expired
// (close code 4003), or refused the token (HTTP 401) on a reconnection:
// retrying would only be refused again, so the client stops and says so.
var ErrRevoked = errors.New("this device's token was revoked or expired; ask for a new one")

// closeRevoked is the close code of a revoked or expired device token
// (docs/protocol.md, Devices and roles).
const closeRevoked websocket.StatusCode = 4003

// errTokenRefused marks a dial the relay answered with HTTP 401.
var errTokenRefused = errors.New("the relay refused the token (HTTP 401)")

// Config configures a Client. The zero value of every duration means its
// default.
type Config struct {
	// URL is the relay's WebSocket endpoint, ws://HOST:PORT/ws or wss://….
	// http:// and https:// are accepted and mapped to ws:// and wss://.
	URL string
	// Token is sent as "Authorization: Bearer <Token>" when not empty.
	Token string
	// Kind is the client's kind, sent as ?client= on every upgrade
	// (protocol.ClientWindow, ClientTerminal…), so that the relay can say
	// who answered (docs/protocol.md, Devices and roles); "" sends none.
	Kind string

	// PingInterval is how long the client waits after the last message it
	// received before it sends a ping (default 30 s, docs/protocol.md,
	// Heartbeat).
	PingInterval time.Duration
	// PongTimeout is how long after a ping the client waits for any message
	// before it declares the connection dead and reconnects (default 20 s).
	PongTimeout time.Duration
	// StreamingPingInterval and StreamingPongTimeout replace them while a
	// conversation the client follows runs a turn (defaults 5 s and 10 s):
	// then events are due, and a silent socket is most likely a relay
	// that stopped (paused, cut off, its machine gone without a FIN), so
	// the client finds out in seconds instead of 50 s and resumes
	// elsewhere (docs/protocol.md, Heartbeat).
	StreamingPingInterval time.Duration
	StreamingPongTimeout  time.Duration
	// MinBackoff and MaxBackoff bound the wait between reconnection attempts
	// (defaults 500 ms and 15 s); the wait doubles after each failure and
	// gets ±20 % jitter.
	MinBackoff time.Duration
	MaxBackoff time.Duration
	// OfflineAfter is how long reconnection may fail before the state
	// becomes StateOffline (default 30 s). The client keeps retrying.
	OfflineAfter time.Duration
	// WriteTimeout bounds each outgoing frame (default 10 s).
	WriteTimeout time.Duration
	// DialTimeout bounds each connection attempt (default 10 s).
	DialTimeout time.Duration
	// EventBuffer is the capacity of the Events channel (default 1024). When
	// it is full the reader waits: nothing is dropped.
	EventBuffer int

	// HTTPClient is used for the handshake (default http.DefaultClient).
	HTTPClient *http.Client
	// Relocate, when set, says where the relay is now. A client that found
	// its relay through a file the relay keeps (`pilotdesk chat` attached
	// to the relay running on its data dir) uses it: that relay may stop
	// and another start on a new port with a new token. The client calls
	// it after every failed reconnection attempt and moves to the endpoint
	// it returns; an error keeps the current one. Such a client holds the
	// relay's own token, which no one revokes: a 4003 close or an HTTP 401
	// means the relay it knew is gone, so it goes on reconnecting instead
	// of stopping with ErrRevoked.
	Relocate func(ctx context.Context) (Endpoint, error)
	// Logger receives the client's diagnostics (default slog.Default()).
	Logger *slog.Logger
}

// The heartbeat's defaults (docs/protocol.md, Heartbeat), every client's:
// the Go client's (the window's and pilotdesk chat's) and the web
// client's (web/static/js/connection.js), which client/testdata/
// heartbeat.json holds for web/unit/connection.test.mjs to check
// (TestHeartbeatFile). A client pings after PingInterval without
// receiving anything and gives the connection up PongTimeout after an
// unanswered ping; while a conversation it follows runs a turn, the
// Streaming pair applies.
const (
	DefaultPingInterval          = 30 * time.Second
	DefaultPongTimeout           = 20 * time.Second
	DefaultStreamingPingInterval = 5 * time.Second
	DefaultStreamingPongTimeout  = 10 * time.Second
)

func (c *Config) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.PingInterval, DefaultPingInterval)
	def(&c.PongTimeout, DefaultPongTimeout)
	def(&c.StreamingPingInterval, DefaultStreamingPingInterval)
	def(&c.StreamingPongTimeout, DefaultStreamingPongTimeout)
	def(&c.MinBackoff, 500*time.Millisecond)
	def(&c.MaxBackoff, 15*time.Second)
	def(&c.OfflineAfter, 30*time.Second)
	def(&c.WriteTimeout, 10*time.Second)
	def(&c.DialTimeout, 10*time.Second)
	if c.MaxBackoff < c.MinBackoff {
		c.MaxBackoff = c.MinBackoff
	}
	if c.EventBuffer <= 0 {
		c.EventBuffer = 1024
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	c.URL = wsURL(c.URL)
}

// Endpoint is where a relay is and how to reach it (Config.Relocate).
type Endpoint struct {
	URL        string
	Token      string
	HTTPClient *http.Client // nil: http.DefaultClient
}

// wsURL maps http:// and https:// to ws:// and wss://.
func wsURL(u string) string {
	switch {
	case strings.HasPrefix(u, "http://"):
		return "ws://" + strings.TrimPrefix(u, "http://")
	case strings.HasPrefix(u, "https://"):
		return "wss://" + strings.TrimPrefix(u, "https://")
	}
	return u
}

// Client is a connection to a relay that survives drops. Its methods are
// safe to call from any goroutine.
type Client struct {
	cfg Config
	// logp is the logger, which names the relay in use: it changes when
	// the client moves to another (relocate).
	logp   atomic.Pointer[slog.Logger]
	events chan Event
	cancel context.CancelFunc
	done   chan struct{}
	id     *Identity // who this client is on the relay (identity.go)

	mu       sync.Mutex      // guards ep, conn, gen, state, subs, watching, unechoed, sends, givenBack
	ep       Endpoint        // where the relay is: cfg's, or Relocate's
	conn     *websocket.Conn // nil while disconnected
	gen      int             // counts the connections published: conn's
	state    State
	subs     map[string]*subscription
	watching bool // Watch(true): renewed after a reconnect
	// unechoed are the prompts sent whose copilot:user_message has not
	// come, by clientId (route.go, lostSendsLocked).
	unechoed map[string]*unechoed
	sends    int // prompts sent, which orders unechoed
	// givenBack are the prompts told lost (TypeUnsent) whose echo may
	// still come, the latest maxGivenBack (route.go, arrivedLocked).
	givenBack []Unsent
}

// Dial connects to the relay at url with token (may be empty) using the
// default settings. See Config.Dial.
func Dial(ctx context.Context, relayURL, token string) (*Client, error) {
	return Config{URL: relayURL, Token: token}.Dial(ctx)
}

// Dial makes the first connection and returns a live Client, or the error of
// that first attempt (a wrong URL or token should be reported, not retried).
// ctx bounds the client's whole life: cancelling it closes the client as
// Close does. Later drops are retried with backoff until then.
func (cfg Config) Dial(ctx context.Context) (*Client, error) {
	cfg.setDefaults()
	c := &Client{
		cfg:      cfg,
		events:   make(chan Event, cfg.EventBuffer),
		done:     make(chan struct{}),
		state:    StateConnecting,
		subs:     make(map[string]*subscription),
		unechoed: make(map[string]*unechoed),
		id:       newIdentity(cfg.URL, cfg.Token, cfg.Kind),
		ep:       Endpoint{URL: cfg.URL, Token: cfg.Token, HTTPClient: cfg.HTTPClient},
	}
	c.logp.Store(cfg.Logger.With("relay", cfg.URL))
	conn, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	// Publish the connection before returning so that the caller can send
	// at once; there is nothing to renew on a first connection.
	c.conn = conn
	c.state = StateLive
	c.events <- Event{Type: TypeState, Data: &StateChange{State: StateLive}}
	ctx, c.cancel = context.WithCancel(ctx)
	go c.run(ctx, conn)
	return c, nil
}

// Events delivers every message from the relay, decoded, in the order it
// arrived, with conversation events de-duplicated by seq, plus TypeState and
// TypeReset events. It is closed after the client has stopped. Read it
// promptly: a full channel stalls the connection's reader.
func (c *Client) Events() <-chan Event { return c.events }

// State returns the connection state now.
func (c *Client) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// logger is the client's logger, naming the relay it uses now.
func (c *Client) logger() *slog.Logger { return c.logp.Load() }

// URL returns the relay endpoint the client connects to.
// It changes when Config.Relocate moves the client to another relay.
func (c *Client) URL() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ep.URL
}

// Identity is who this client is on the relay, learned from the echoes of
// what it sends (identity.go).
func (c *Client) Identity() *Identity { return c.id }

// Close ends the connection (with a normal closure) and stops reconnecting.
// It waits until the client's goroutines have exited.
func (c *Client) Close() error {
	c.cancel()
	<-c.done
	return nil
}

func (c *Client) dial(ctx context.Context) (*websocket.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.DialTimeout)
	defer cancel()
	c.mu.Lock()
	ep := c.ep
	c.mu.Unlock()
	hdr := http.Header{}
	if ep.Token != "" {
		hdr.Set("Authorization", "Bearer "+ep.Token)
	}
	target := ep.URL
	if c.cfg.Kind != "" {
		if u, err := url.Parse(target); err == nil {
			q := u.Query()
			q.Set("client", c.cfg.Kind)
			u.RawQuery = q.Encode()
			target = u.String()
		}
	}
	conn, resp, err := websocket.Dial(ctx, target, &websocket.DialOptions{
		HTTPClient: ep.HTTPClient,
		HTTPHeader: hdr,
	})
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusUnauthorized {
			return nil, fmt.Errorf("connect to %s: %w: %w", ep.URL, errTokenRefused, err)
		}
		return nil, fmt.Errorf("connect to %s: %w", ep.URL, err)
	}
	// Frames from the relay are at most 1 MiB of data plus the envelope.
	conn.SetReadLimit(protocol.MaxFrameBytes + 64<<10)
	return conn, nil
}

// run owns the connection: it serves one connection until it fails, then
// reconnects, until ctx ends.
func (c *Client) run(ctx context.Context, conn *websocket.Conn) {
	// Events closes last: a consumer that saw it close and then sends
	// gets ErrClosed, not ErrNotConnected (TestRealRelayRevokedTokenStops
	// caught that order about once in ten runs).
	defer close(c.events)
	defer close(c.done)
	for first := true; ; first = false {
		err := c.serve(ctx, conn, !first)
		c.mu.Lock()
		c.conn = nil
		c.mu.Unlock()
		if ctx.Err() != nil {
			_ = conn.Close(websocket.StatusNormalClosure, "client closed")
			c.setState(ctx, StateChange{State: StateClosed})
			return
		}
		_ = conn.CloseNow()
		if websocket.CloseStatus(err) == closeRevoked && c.cfg.Relocate == nil {
			c.stopRevoked(ctx, err)
			return
		}
		// Info, not a warning: the state change below carries err to the
		// consumer, which says it (the window's "reconnecting…", the
		// terminal's line); a warning of its own showed twice in the
		// terminal, whose log lines are the warnings.
		c.logger().Info("relay connection lost", "err", err)
		conn, err = c.reconnect(ctx, err)
		if errors.Is(err, errTokenRefused) {
			c.stopRevoked(ctx, err)
			return
		}
		if conn == nil {
			c.setState(ctx, StateChange{State: StateClosed})
			return
		}
	}
}

// stopRevoked ends the client for good: the relay will not take its token
// again. The final state carries ErrRevoked and, unlike a Close, is
// delivered (the consumer is still reading and must say why).
func (c *Client) stopRevoked(ctx context.Context, cause error) {
	c.logger().Warn("the relay no longer accepts this client's token; not reconnecting", "err", cause)
	c.mu.Lock()
	c.state = StateClosed
	c.mu.Unlock()
	c.emit(ctx, Event{Type: TypeState, Data: &StateChange{State: StateClosed, Err: ErrRevoked}})
}

// reconnect dials with exponential backoff until it succeeds (the new
// connection), ctx ends (nil, nil) or the relay refuses the token (nil and
// the error: retrying would not help).
func (c *Client) reconnect(ctx context.Context, cause error) (*websocket.Conn, error) {
	start := time.Now()
	delay := c.cfg.MinBackoff
	state := StateReconnecting
	for attempt := 0; ; attempt++ {
		wait := jitter(delay)
		c.setState(ctx, StateChange{State: state, Err: cause, Attempt: attempt, RetryIn: wait})
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil
		case <-t.C:
		}
		conn, err := c.dial(ctx)
		if err == nil {
			c.logger().Info("relay connection restored", "attempts", attempt+1)
			return conn, nil
		}
		if ctx.Err() != nil {
			return nil, nil
		}
		if errors.Is(err, errTokenRefused) && c.cfg.Relocate == nil {
			return nil, err
		}
		cause = err
		c.logger().Debug("reconnect failed", "attempt", attempt+1, "err", err)
		if c.relocate(ctx) {
			// Another relay runs there now: try it at once.
			delay = c.cfg.MinBackoff
			continue
		}
		if time.Since(start) >= c.cfg.OfflineAfter {
			state = StateOffline
		}
		delay = min(delay*2, c.cfg.MaxBackoff)
	}
}

// relocate asks Config.Relocate where the relay is now and moves the
// client there; true if it moved.
func (c *Client) relocate(ctx context.Context) bool {
	if c.cfg.Relocate == nil {
		return false
	}
	ep, err := c.cfg.Relocate(ctx)
	if err != nil || ep.URL == "" {
		c.logger().Debug("no other relay to move to", "err", err)
		return false
	}
	ep.URL = wsURL(ep.URL)
	c.mu.Lock()
	moved := ep.URL != c.ep.URL || ep.Token != c.ep.Token
	if moved {
		c.ep = ep
	}
	c.mu.Unlock()
	if moved {
		// From now on the log names the relay in use. The token is
		// never logged.
		c.logp.Store(c.cfg.Logger.With("relay", ep.URL))
		c.logger().Info("the relay moved; reconnecting there", "url", ep.URL)
	}
	return moved
}

// jitter spreads d by ±20 % so that many clients do not retry in step.
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// serve reads one connection until it fails or ctx ends. On a reconnection
// (renew) it first publishes the connection and renews every subscription.
func (c *Client) serve(ctx context.Context, conn *websocket.Conn, renew bool) error {
	connCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if renew {
		if err := c.renew(ctx, connCtx, conn); err != nil {
			return err
		}
	}

	activity := make(chan struct{}, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.keepAlive(connCtx, conn, activity)
	}()
	defer wg.Wait()
	defer cancel()
	// The end of connCtx closes the connection, which ends a read: the
	// reads themselves get a context that never ends, for a read with a
	// context that can end arms a context.AfterFunc of its own, and a
	// replay is 25,000 reads (a third of what the window allocated to
	// read them, docs/performance.md).
	stop := context.AfterFunc(connCtx, func() { _ = conn.CloseNow() })
	defer stop()
	var buf bytes.Buffer

	for {
		frame, err := readFrame(conn, &buf)
		if err != nil {
			if connCtx.Err() != nil {
				err = fmt.Errorf("%w (%w)", connCtx.Err(), err)
			}
			return fmt.Errorf("read: %w", err)
		}
		alive := func() {
			select {
			case activity <- struct{}{}:
			default:
			}
		}
		alive()
		ev, err := Decode(frame)
		if err != nil {
			c.logger().Warn("ignoring a frame the client cannot decode", "err", err, "frame", truncate(frame, 200))
			continue
		}
		if ev.Data == nil && ev.Type != protocol.TypePong {
			c.logger().Debug("message of a type this client does not know", "type", ev.Type)
		}
		if !c.route(ctx, ev) {
			return ctx.Err()
		}
		// Again once routed: a turn that starts with this frame shortens
		// the wait for the next one (keepAlive).
		alive()
	}
}

// readFrame reads the next message of conn into buf (kept from one message
// to the next, where io.ReadAll's growing buffer allocated most frames
// twice) and returns it, valid until the next call: it is decoded before
// then, and the event keeps nothing of it (Decode). Events used to keep a
// copy of their frame (Event.Raw), which only tests read: opening a
// 5,000-message conversation copied 10 MB of frames for nothing.
func readFrame(conn *websocket.Conn, buf *bytes.Buffer) ([]byte, error) {
	_, r, err := conn.Reader(context.Background())
	if err != nil {
		return nil, err
	}
	buf.Reset()
	if _, err := buf.ReadFrom(r); err != nil {
		return nil, err
	}
	frame := buf.Bytes()
	if buf.Cap() > maxKeptReadBuffer {
		*buf = bytes.Buffer{} // one long frame is not kept for good
	}
	return frame, nil
}

// maxKeptReadBuffer is the largest read buffer serve keeps between frames.
const maxKeptReadBuffer = 64 << 10

// renew publishes a new connection, renews every subscription from the
// last seq delivered, and the watch of the list.
func (c *Client) renew(ctx, connCtx context.Context, conn *websocket.Conn) error {
	// Publish the connection and take the subscriptions to renew in one
	// critical section: a Subscribe that runs before it is renewed here, one
	// that runs after sends its own frame, so each is sent exactly once.
	c.mu.Lock()
	c.conn = conn
	c.gen++
	type renew struct {
		id    string
		since int64
		epoch string
	}
	var renews []renew
	var restarts []Event
	for id, s := range c.subs {
		if s.fresh && s.lastSeq > 0 {
			// A first replay cut short: what it delivered names no
			// epoch, so nothing tells it from another history's. The
			// copy starts over.
			s.lastSeq = 0
			restarts = append(restarts, Event{Type: TypeReset, Data: &Reset{ConversationID: id}})
		}
		s.syncing = true
		s.buf = nil
		renews = append(renews, renew{id, s.lastSeq, s.epoch})
	}
	watching := c.watching
	c.mu.Unlock()
	slices.SortFunc(restarts, func(a, b Event) int { return strings.Compare(a.ConversationID(), b.ConversationID()) })
	for _, ev := range restarts {
		if !c.emit(ctx, ev) {
			return ctx.Err()
		}
	}
	slices.SortFunc(renews, func(a, b renew) int { return strings.Compare(a.id, b.id) })
	for _, r := range renews {
		since := r.since
		if err := c.writeTo(connCtx, conn, protocol.TypeSubscribe, protocol.Subscribe{ConversationID: r.id, SinceSeq: &since, Epoch: r.epoch}); err != nil {
			return err
		}
	}
	if watching {
		// A relay forgets a connection's watch with the connection.
		on := true
		if err := c.writeTo(connCtx, conn, protocol.TypeList, protocol.List{Watch: &on}); err != nil {
			return err
		}
	}
	c.setState(ctx, StateChange{State: StateLive})
	return nil
}

// keepAlive sends a ping after PingInterval without any inbound message and
// closes the connection when nothing at all arrives within PongTimeout of a
// ping. Any inbound message restarts the interval (docs/protocol.md,
// Heartbeat). While a followed conversation streams, the shorter
// StreamingPingInterval and StreamingPongTimeout apply.
func (c *Client) keepAlive(ctx context.Context, conn *websocket.Conn, activity <-chan struct{}) {
	pingAfter, pongWait := c.silenceLimits()
	t := time.NewTimer(pingAfter)
	defer t.Stop()
	awaiting := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-activity:
			awaiting = false
			pingAfter, _ = c.silenceLimits()
			t.Reset(pingAfter)
		case <-t.C:
			if awaiting {
				c.logger().Warn("relay did not answer a ping; reconnecting", "waited", pongWait)
				_ = conn.CloseNow()
				return
			}
			if err := c.writeTo(ctx, conn, protocol.TypePing, nil); err != nil {
				return // the reader sees the broken connection too
			}
			awaiting = true
			_, pongWait = c.silenceLimits()
			t.Reset(pongWait)
		}
	}
}

// silenceLimits are how long keepAlive lets the socket be silent before
// it pings, and then before it gives the connection up: shorter while a
// conversation the client follows streams.
func (c *Client) silenceLimits() (pingAfter, pongWait time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.subs {
		if s.streaming {
			return c.cfg.StreamingPingInterval, c.cfg.StreamingPongTimeout
		}
	}
	return c.cfg.PingInterval, c.cfg.PongTimeout
}

func (c *Client) emit(ctx context.Context, ev Event) bool {
	select {
	case c.events <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}

func (c *Client) setState(ctx context.Context, sc StateChange) {
	c.mu.Lock()
	c.state = sc.State
	c.mu.Unlock()
	ev := Event{Type: TypeState, Data: &sc}
	if sc.State == StateClosed {
		// Best effort: the consumer may have stopped reading already.
		select {
		case c.events <- ev:
		default:
		}
		return
	}
	c.emit(ctx, ev)
}

func (c *Client) writeTo(ctx context.Context, conn *websocket.Conn, msgType string, data any) error {
	frame, err := protocol.Encode(msgType, data)
	if err != nil {
		return fmt.Errorf("encode %s: %w", msgType, err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.WriteTimeout)
	defer cancel()
	if err := conn.Write(ctx, websocket.MessageText, frame); err != nil {
		return fmt.Errorf("send %s: %w", msgType, err)
	}
	return nil
}

// write sends one message on the current connection.
func (c *Client) write(ctx context.Context, msgType string, data any) error {
	c.mu.Lock()
	conn := c.conn
	c.mu.Unlock()
	return c.writeOn(ctx, conn, msgType, data)
}

// writeOn sends one message on conn, the connection that was current
// (nil: none was).
func (c *Client) writeOn(ctx context.Context, conn *websocket.Conn, msgType string, data any) error {
	select {
	case <-c.done:
		return ErrClosed
	default:
	}
	if conn == nil {
		return fmt.Errorf("send %s: %w", msgType, ErrNotConnected)
	}
	return c.writeTo(ctx, conn, msgType, data)
}

func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}
