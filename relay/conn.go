package relay

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// discardLimit is how much of an over-long frame the relay reads and throws
// away to keep the connection: a frame over 1 MiB gets a too_large error;
// one over discardLimit is closed by the library with 1009.
const discardLimit = 64 << 20

// maxQueueBytes bounds the bytes queued for one connection besides the
// frame count (Config.SendQueue), so that a stalled reader of large frames
// (tool outputs) cannot pin unbounded memory.
const maxQueueBytes = 64 << 20

// closeGrace is how long a closing connection may take to send what it
// must and finish the close handshake (the library allows 5 s for each).
const closeGrace = 15 * time.Second

// conn is one WebSocket connection. The handler goroutine reads and
// dispatches; the writer goroutine owns every write of data frames.
type conn struct {
	r      *Relay
	ws     *websocket.Conn
	cork   *corkConn
	log    *slog.Logger
	ctx    context.Context // ends when the connection's handler returns
	cancel context.CancelFunc

	// Send queue. The committer and the handler goroutine append; the
	// writer takes everything at once.
	mu            sync.Mutex // guards queue, queueBytes, closing, flushClose, closeCode, closeReason, closeWatchdog
	queue         [][]byte
	queueBytes    int
	closing       bool // no more frames are accepted
	flushClose    bool // send what is queued before the close frame
	closeCode     websocket.StatusCode
	closeReason   string
	closeWatchdog *time.Timer
	wake          chan struct{} // cap 1: the queue or closing changed
	space         chan struct{} // cap 1: the writer took a batch
	writerDone    chan struct{}

	// Heartbeat: nanoseconds since r.start of the last inbound message.
	lastInbound atomic.Int64
	heartbeat   *time.Timer

	// Owned by the handler goroutine.
	subs    map[string]*conversation
	readBuf []byte
}

// serveWS authenticates and upgrades a request, then runs the connection
// until it ends.
func (r *Relay) serveWS(w http.ResponseWriter, req *http.Request) {
	if !r.authorized(req) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="pilotdesk"`)
		http.Error(w, "unauthorized: send the relay's token as \"Authorization: Bearer <token>\" or ?token=<token>", http.StatusUnauthorized)
		return
	}
	r.lifeMu.Lock()
	if r.closed {
		r.lifeMu.Unlock()
		http.Error(w, "the relay is shutting down", http.StatusServiceUnavailable)
		return
	}
	r.connWG.Add(1)
	r.lifeMu.Unlock()
	defer r.connWG.Done()

	cw := &corkingWriter{ResponseWriter: w}
	ws, err := websocket.Accept(cw, req, &r.acceptOptions)
	if err != nil {
		// Accept has answered (403 for a cross-origin request, 400 …).
		r.log.Info("relay: refused a WebSocket upgrade", "remote", req.RemoteAddr, "err", err)
		return
	}
	ws.SetReadLimit(discardLimit)
	ctx, cancel := context.WithCancel(r.ctx)
	c := &conn{
		r:          r,
		ws:         ws,
		cork:       cw.conn,
		log:        r.log.With("remote", req.RemoteAddr),
		ctx:        ctx,
		cancel:     cancel,
		wake:       make(chan struct{}, 1),
		space:      make(chan struct{}, 1),
		writerDone: make(chan struct{}),
		subs:       map[string]*conversation{},
	}
	defer cancel()

	r.mu.Lock()
	// Close iterates r.conns after cancelling r.ctx: a connection registered
	// after that must see the cancellation itself.
	shuttingDown := r.ctx.Err() != nil
	full := len(r.conns) >= r.maxConns
	if !full && !shuttingDown {
		r.conns[c] = struct{}{}
	}
	r.mu.Unlock()
	if shuttingDown {
		_ = ws.Close(websocket.StatusGoingAway, "relay shutting down")
		return
	}
	if full {
		c.log.Warn("relay: connection limit reached; refusing a connection", "limit", r.maxConns)
		frame, _ := protocol.Encode(protocol.TypeError, &protocol.Error{
			Code:    protocol.CodeLimit,
			Message: fmt.Sprintf("the relay has reached its limit of %d connections; try again later", r.maxConns),
		})
		_ = ws.Write(context.Background(), websocket.MessageText, frame)
		_ = ws.Close(websocket.StatusTryAgainLater, "too many connections")
		return
	}

	c.log.Debug("relay: connection opened")
	c.touch()
	c.heartbeat = time.AfterFunc(r.heartbeat, c.checkHeartbeat)
	go c.writeLoop()

	err = c.readLoop()

	c.cancel() // before stopping the heartbeat: a check running now sees it
	c.heartbeat.Stop()
	for _, conv := range c.subs {
		conv.unsubscribe(c)
		r.forgetIfEmpty(conv)
	}
	c.subs = nil
	c.closeWith(websocket.StatusNormalClosure, "", false)
	<-c.writerDone
	_ = ws.CloseNow()
	r.mu.Lock()
	delete(r.conns, c)
	r.mu.Unlock()
	c.log.Debug("relay: connection closed", "reason", err)
}

// authorized checks the token in constant time: the digests have a fixed
// length, so neither the token's content nor its length leaks.
func (r *Relay) authorized(req *http.Request) bool {
	if !r.token {
		return true
	}
	given := ""
	if h := req.Header.Get("Authorization"); len(h) > len("Bearer ") && strings.EqualFold(h[:len("Bearer ")], "Bearer ") {
		given = strings.TrimSpace(h[len("Bearer "):])
	} else {
		given = req.URL.Query().Get("token")
	}
	if given == "" {
		return false
	}
	d := sha256.Sum256([]byte(given))
	return subtle.ConstantTimeCompare(d[:], r.tokenDigest[:]) == 1
}

// readLoop reads frames until the connection fails or closes.
func (c *conn) readLoop() error {
	for {
		typ, rd, err := c.ws.Reader(context.Background())
		if err != nil {
			return err
		}
		c.touch() // every inbound message, valid or not
		frame, tooLarge, err := c.readFrame(rd)
		if err != nil {
			return err
		}
		if tooLarge {
			c.sendError(&protocol.Error{Code: protocol.CodeTooLarge, Message: fmt.Sprintf("the frame is over the %d byte limit and was ignored", protocol.MaxFrameBytes)})
			continue
		}
		if typ != websocket.MessageText {
			c.sendError(&protocol.Error{Code: protocol.CodeInvalidMessage, Message: `binary frames are not supported: send text frames holding {"type": string, "data"?: object}`})
			continue
		}
		req, perr := protocol.DecodeRequest(frame)
		if perr != nil {
			if perr.ConversationID == "" {
				perr.ConversationID = req.ConversationID()
			}
			c.sendError(perr)
			continue
		}
		c.r.dispatch(c, req)
	}
}

// readFrame reads one message into the connection's buffer. A message over
// MaxFrameBytes is read to its end and dropped, so the connection survives.
func (c *conn) readFrame(rd io.Reader) (frame []byte, tooLarge bool, err error) {
	buf := c.readBuf[:0]
	if buf == nil {
		buf = make([]byte, 0, 512)
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := rd.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf) > protocol.MaxFrameBytes {
			if _, err := io.Copy(io.Discard, rd); err != nil {
				return nil, false, err
			}
			c.keepReadBuf(buf)
			return nil, true, nil
		}
		if errors.Is(err, io.EOF) {
			c.keepReadBuf(buf)
			return buf, false, nil
		}
		if err != nil {
			return nil, false, err
		}
	}
}

// keepReadBuf keeps a small buffer for the next message; a large one goes
// back to the garbage collector so idle connections stay small.
func (c *conn) keepReadBuf(buf []byte) {
	if cap(buf) > 64<<10 {
		c.readBuf = nil
		return
	}
	c.readBuf = buf[:0]
}

func (c *conn) touch() {
	c.lastInbound.Store(int64(time.Since(c.r.start)))
}

// checkHeartbeat runs when the heartbeat timer fires: it closes the
// connection if nothing came in for the whole timeout, or re-arms the timer
// for the time that is left. Resetting a timer per inbound message would cost
// more than this.
func (c *conn) checkHeartbeat() {
	if c.ctx.Err() != nil {
		return // the connection is gone
	}
	idle := time.Since(c.r.start) - time.Duration(c.lastInbound.Load())
	if idle >= c.r.heartbeat {
		c.log.Info("relay: heartbeat timeout; closing the connection", "idle", idle.Round(time.Millisecond))
		c.closeWith(CloseHeartbeat, fmt.Sprintf("heartbeat timeout: no message for %s", c.r.heartbeat), false)
		return
	}
	c.heartbeat.Reset(c.r.heartbeat - idle)
}

// enqueue queues one frame. It never blocks: a connection whose queue is
// full is closed (CloseTooSlow) and reconnects with sinceSeq.
func (c *conn) enqueue(frame []byte) bool {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return false
	}
	if len(c.queue) >= c.r.sendQueue || c.queueBytes+len(frame) > maxQueueBytes {
		c.overflowLocked()
		c.mu.Unlock()
		return false
	}
	c.queue = append(c.queue, frame)
	c.queueBytes += len(frame)
	first := len(c.queue) == 1
	c.mu.Unlock()
	if first {
		c.notify()
	}
	return true
}

// enqueueMany queues frames in order, or closes the connection if they do
// not fit.
func (c *conn) enqueueMany(frames [][]byte) bool {
	if len(frames) == 0 {
		return true
	}
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return false
	}
	n := 0
	for _, f := range frames {
		n += len(f)
	}
	if len(c.queue)+len(frames) > c.r.sendQueue || c.queueBytes+n > maxQueueBytes {
		c.overflowLocked()
		c.mu.Unlock()
		return false
	}
	first := len(c.queue) == 0
	c.queue = append(c.queue, frames...)
	c.queueBytes += n
	c.mu.Unlock()
	if first {
		c.notify()
	}
	return true
}

// enqueueWait queues a frame of a replay: it waits while the queue is more
// than half full, so a long replay follows the client's pace and leaves room
// for the live events of other conversations. It reports false when the
// connection ends.
func (c *conn) enqueueWait(frame []byte) bool {
	for {
		c.mu.Lock()
		if c.closing {
			c.mu.Unlock()
			return false
		}
		if len(c.queue) < max(c.r.sendQueue/2, 1) && c.queueBytes < maxQueueBytes/2 {
			c.queue = append(c.queue, frame)
			c.queueBytes += len(frame)
			first := len(c.queue) == 1
			c.mu.Unlock()
			if first {
				c.notify()
			}
			return true
		}
		c.mu.Unlock()
		select {
		case <-c.space:
		case <-c.writerDone:
			return false
		}
	}
}

// waitSpace waits until the writer takes a batch; false if the connection
// ends first.
func (c *conn) waitSpace() bool {
	c.mu.Lock()
	closing := c.closing
	c.mu.Unlock()
	if closing {
		return false
	}
	select {
	case <-c.space:
		return true
	case <-c.writerDone:
		return false
	}
}

// fits reports whether n more frames fit in the queue now.
func (c *conn) fits(n int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.closing && len(c.queue)+n <= c.r.sendQueue && c.queueBytes < maxQueueBytes/2
}

func (c *conn) overflowLocked() {
	c.log.Warn("relay: a connection fell too far behind; disconnecting it", "queued", len(c.queue))
	c.closeLocked(CloseTooSlow, "too far behind: reconnect and resume with sinceSeq", false)
}

func (c *conn) notify() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// closeWith closes the connection with a close frame. With flush, frames
// already queued are sent first. Only the first call counts.
func (c *conn) closeWith(code websocket.StatusCode, reason string, flush bool) {
	c.mu.Lock()
	c.closeLocked(code, reason, flush)
	c.mu.Unlock()
	c.notify()
}

func (c *conn) closeLocked(code websocket.StatusCode, reason string, flush bool) {
	if c.closing {
		return
	}
	c.closing = true
	c.flushClose = flush
	c.closeCode, c.closeReason = code, reason
	// A peer that stopped reading can hold the writer in a write forever
	// (TCP retries for many minutes): past the grace period the connection
	// is dropped without ceremony.
	c.closeWatchdog = time.AfterFunc(closeGrace, func() { _ = c.ws.CloseNow() })
	if !flush {
		clear(c.queue)
		c.queue = c.queue[:0]
		c.queueBytes = 0
	}
	c.notify()
}

// writeLoop is the connection's writer: it takes every queued frame, writes
// them while the connection is corked and sends them with one syscall.
// Writes use a context without deadline (no timer per write); a connection
// that stops reading is closed by the queue's bound or the heartbeat.
func (c *conn) writeLoop() {
	defer func() {
		c.mu.Lock()
		if c.closeWatchdog != nil {
			c.closeWatchdog.Stop()
		}
		c.mu.Unlock()
		close(c.writerDone)
	}()
	var batch [][]byte
	for range c.wake {
		c.mu.Lock()
		batch, c.queue = c.queue, batch[:0]
		c.queueBytes = 0
		closing, flush := c.closing, c.flushClose
		code, reason := c.closeCode, c.closeReason
		c.mu.Unlock()
		select {
		case c.space <- struct{}{}:
		default:
		}
		if closing && !flush {
			batch = batch[:0]
		}
		if len(batch) > 0 {
			err := c.writeBatch(batch)
			clear(batch)
			if cap(batch) > 1024 && len(batch) < 64 {
				batch = nil // do not keep a burst's array on a quiet connection
			}
			if err != nil {
				c.mu.Lock()
				c.closeLocked(websocket.StatusInternalError, "", false)
				c.mu.Unlock()
				_ = c.ws.CloseNow()
				return
			}
		}
		if closing {
			c.mu.Lock()
			rest := len(c.queue)
			c.mu.Unlock()
			if flush && rest > 0 {
				continue // frames queued before closing began
			}
			_ = c.ws.Close(code, reason)
			return
		}
	}
}

func (c *conn) writeBatch(batch [][]byte) error {
	c.cork.cork()
	for _, frame := range batch {
		if err := c.ws.Write(context.Background(), websocket.MessageText, frame); err != nil {
			_ = c.cork.uncork()
			return err
		}
	}
	return c.cork.uncork()
}

// send queues a frame meant for this connection only.
func (c *conn) send(msgType string, data any) {
	frame, err := protocol.Encode(msgType, data)
	if err != nil {
		c.log.Error("relay: encode a reply", "type", msgType, "err", err)
		return
	}
	c.enqueue(frame)
}

func (c *conn) sendError(e *protocol.Error) {
	c.send(protocol.TypeError, e)
}
