package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// Standard JSON-RPC 2.0 error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
	// CodeServerError is the start of the implementation-defined range; we
	// use it for "the request was understood but could not be fulfilled".
	CodeServerError = -32000
)

// Message is any JSON-RPC 2.0 message. Which kind it is follows from the
// fields present (see Kind).
type Message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// Kind is what a Message is.
type Kind int

// The kinds of Message.
const (
	Invalid Kind = iota
	Request
	Notification
	Response
)

func (m *Message) hasID() bool {
	return len(m.ID) > 0 && string(m.ID) != "null"
}

// Kind classifies m by shape: method and id make a request, method alone a
// notification, an id with result or error a response.
func (m *Message) Kind() Kind {
	switch {
	case m.Method != "" && m.hasID():
		return Request
	case m.Method != "":
		return Notification
	case m.hasID() && (m.Error != nil || len(m.Result) > 0):
		return Response
	default:
		return Invalid
	}
}

// DecodeMessage parses one message body.
func DecodeMessage(body []byte) (*Message, error) {
	var m Message
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("not a JSON-RPC message: %w", err)
	}
	if m.Kind() == Invalid {
		return nil, errors.New("not a JSON-RPC message: neither a request, a notification nor a response")
	}
	return &m, nil
}

// Error is a JSON-RPC error object; it is also the error Call returns when
// the peer answered with one.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s (JSON-RPC error %d)", e.Message, e.Code)
}

// IsMethodNotFound reports whether err says the peer does not know the
// method. The Copilot CLI answers -32601 "Unhandled method X".
func IsMethodNotFound(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	return e.Code == CodeMethodNotFound || strings.HasPrefix(e.Message, "Unhandled method")
}

// ErrMethodNotFound may be returned by Handler.Request for a method it does
// not serve; the peer then gets a -32601 error.
var ErrMethodNotFound = errors.New("method not found")

// ErrClosed is returned by Call and Notify once the connection has ended.
var ErrClosed = errors.New("jsonrpc: connection closed")

// Handler serves what the peer sends. Both methods are called on the reader
// goroutine, in arrival order, and must return quickly: the next message is
// not read until they do.
type Handler interface {
	Notification(method string, params json.RawMessage)
	// Request must arrange for reply to be called exactly once, typically
	// from a goroutine of its own when answering takes time (a person).
	// ctx ends when the connection does.
	Request(ctx context.Context, method string, params json.RawMessage, reply Replier)
}

// Replier answers a request. The result is marshalled as the response; an
// *Error is sent as is, ErrMethodNotFound as -32601, any other error as
// -32000 with its text. Calls after the first are ignored.
type Replier func(result any, err error)

// Options configures a Conn.
type Options struct {
	MaxFrameSize int // <= 0: DefaultMaxFrameSize
	Logger       *slog.Logger
}

// Conn is a JSON-RPC peer. Its reader goroutine runs until the stream ends or
// turns unreadable; the owner of the stream closes it to stop the Conn.
type Conn struct {
	w       io.Writer
	handler Handler
	log     *slog.Logger

	writeMu sync.Mutex // one frame at a time on w: frames never interleave

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan *Message
	err     error // why the connection ended; set once

	done   chan struct{}
	ctx    context.Context // cancelled when the connection ends
	cancel context.CancelFunc
	reader sync.WaitGroup
}

// NewConn starts a peer reading from r and writing to w. The reader starts
// at once: h may be called before NewConn returns.
func NewConn(r io.Reader, w io.Writer, h Handler, opts Options) *Conn {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Conn{
		w:       w,
		handler: h,
		log:     log,
		pending: make(map[int64]chan *Message),
		done:    make(chan struct{}),
		ctx:     ctx,
		cancel:  cancel,
	}
	fr := NewReader(r, opts.MaxFrameSize)
	fr.Warn = func(fe *FrameError) {
		c.log.Warn("copilot: skipped a malformed frame from the CLI", "reason", fe.Reason)
	}
	c.reader.Add(1)
	go c.readLoop(fr)
	return c
}

// Done is closed when the connection has ended.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err returns why the connection ended: io.EOF for a clean end of stream,
// or the read or write error. It is nil while the connection is open.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Wait blocks until the reader goroutine has returned. Call it after the
// stream has been closed.
func (c *Conn) Wait() {
	c.reader.Wait()
}

// Close ends the connection with err (ErrClosed when nil): pending calls fail
// and request handlers see their context cancelled. The stream itself is the
// owner's to close.
func (c *Conn) Close(err error) {
	if err == nil {
		err = ErrClosed
	}
	c.fail(err)
}

func (c *Conn) fail(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()
	for _, ch := range pending {
		close(ch)
	}
	c.cancel()
	close(c.done)
}

func (c *Conn) readLoop(fr *Reader) {
	defer c.reader.Done()
	for {
		body, err := fr.Read()
		if err != nil {
			c.fail(err)
			return
		}
		msg, err := DecodeMessage(body)
		if err != nil {
			c.log.Warn("copilot: ignored an invalid message from the CLI", "err", err, "body", truncate(string(body), 200))
			continue
		}
		switch msg.Kind() {
		case Response:
			c.deliver(msg)
		case Notification:
			c.handler.Notification(msg.Method, msg.Params)
		case Request:
			c.serve(msg)
		}
	}
}

func (c *Conn) deliver(msg *Message) {
	var id int64
	if err := json.Unmarshal(msg.ID, &id); err != nil {
		c.log.Warn("copilot: ignored a response with an id we never use", "id", string(msg.ID))
		return
	}
	c.mu.Lock()
	ch, ok := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if !ok {
		// The caller gave up (its context ended) or the id is bogus.
		c.log.Debug("copilot: dropped a response nobody waits for", "id", id)
		return
	}
	ch <- msg // buffered: never blocks
}

func (c *Conn) serve(req *Message) {
	var once sync.Once
	c.handler.Request(c.ctx, req.Method, req.Params, func(result any, err error) {
		once.Do(func() { c.reply(req, result, err) })
	})
}

func (c *Conn) reply(req *Message, result any, err error) {
	resp := &Message{JSONRPC: "2.0", ID: req.ID}
	if err == nil {
		raw, merr := json.Marshal(result)
		if merr != nil {
			err = fmt.Errorf("encoding the result of %s: %w", req.Method, merr)
		} else {
			resp.Result = raw
		}
	}
	if err != nil {
		var rpcErr *Error
		switch {
		case errors.As(err, &rpcErr):
			resp.Error = rpcErr
		case errors.Is(err, ErrMethodNotFound):
			resp.Error = &Error{Code: CodeMethodNotFound, Message: "Unhandled method " + req.Method}
		default:
			resp.Error = &Error{Code: CodeServerError, Message: err.Error()}
		}
	}
	if err := c.send(resp); err != nil && !errors.Is(err, ErrClosed) {
		c.log.Warn("copilot: could not answer a CLI request", "method", req.Method, "err", err)
	}
}

// Call sends a request and waits for its response, decoding the result into
// result (unless nil). A JSON-RPC error answer is returned as *Error.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	if params == nil {
		params = struct{}{} // the CLI wants an object, never null
	}
	rawParams, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("encoding the params of %s: %w", method, err)
	}
	ch := make(chan *Message, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return fmt.Errorf("%s: %w (%v)", method, ErrClosed, err)
	}
	c.nextID++
	id := c.nextID
	c.pending[id] = ch
	c.mu.Unlock()

	idRaw, _ := json.Marshal(id)
	if err := c.send(&Message{JSONRPC: "2.0", ID: idRaw, Method: method, Params: rawParams}); err != nil {
		c.forget(id)
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case resp, ok := <-ch:
		if !ok {
			return fmt.Errorf("%s: %w (%v)", method, ErrClosed, c.Err())
		}
		if resp.Error != nil {
			return resp.Error
		}
		if result != nil {
			if err := json.Unmarshal(resp.Result, result); err != nil {
				return fmt.Errorf("decoding the result of %s: %w", method, err)
			}
		}
		return nil
	case <-ctx.Done():
		c.forget(id)
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// Notify sends a notification.
func (c *Conn) Notify(method string, params any) error {
	raw, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("encoding the params of %s: %w", method, err)
	}
	return c.send(&Message{JSONRPC: "2.0", Method: method, Params: raw})
}

func (c *Conn) forget(id int64) {
	c.mu.Lock()
	if c.pending != nil {
		delete(c.pending, id)
	}
	c.mu.Unlock()
}

func (c *Conn) send(m *Message) error {
	body, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encoding a message: %w", err)
	}
	select {
	case <-c.done:
		return ErrClosed
	default:
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if err := WriteFrame(c.w, body); err != nil {
		c.fail(fmt.Errorf("writing to the CLI: %w", err))
		return err
	}
	return nil
}
