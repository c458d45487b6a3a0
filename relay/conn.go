package relay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/pilotdesk/pilotdesk/internal/queue"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// discardLimit is how much of an over-long frame the relay reads and throws
// away to keep the connection: a frame over 1 MiB gets a too_large error;
// a message that declares more is closed with 1009 before any of it is
// read (guard.go).
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
	id     identity // who it is: device, role, client kind (devices.go)
	ws     *websocket.Conn
	cork   *corkConn
	log    *slog.Logger
	ctx    context.Context // ends when the connection's handler returns
	cancel context.CancelFunc

	// The send queue, bounded by Config.SendQueue frames and maxQueueBytes.
	// The committer and the handler goroutine push; the writer takes
	// everything at once. Closing the connection closes it.
	queue      *queue.Queue[outRun]
	writerDone chan struct{}

	mu            sync.Mutex // guards closing, flushClose, closeCode, closeReason, closeWatchdog
	closing       bool       // closeWith was called: no more frames are accepted
	flushClose    bool       // send what is queued before the close frame
	closeCode     websocket.StatusCode
	closeReason   string
	closeWatchdog *time.Timer

	// Heartbeat: nanoseconds since r.start of the last inbound message.
	lastInbound atomic.Int64
	heartbeat   *time.Timer

	// unwritten counts the bytes of the frames queued for the connection or
	// being written to its socket: added by every push, taken off by the
	// writer once a batch is written. A replay waits on it (replayRoom), not
	// on the queue alone, because the writer takes the whole queue into its
	// batch while it waits for a socket that does not drain. drained gets a
	// token after each batch, for the replay waiting.
	unwritten atomic.Int64
	drained   chan struct{}

	// Owned by the handler goroutine.
	subs     map[string]*conversation
	readBuf  []byte
	reserved int         // bytes of readBuf's capacity taken from the budget of frames being received
	replays  tokenBucket // subscribes with a replay this connection may still make now
}

// serveWS authenticates and upgrades a request, then runs the connection
// until it ends.
func (r *Relay) serveWS(w http.ResponseWriter, req *http.Request) {
	if !r.hostAllowed(req) {
		r.log.Info("relay: refused an upgrade for a Host that is not loopback (DNS rebinding?)", "remote", req.RemoteAddr, "host", req.Host)
		http.Error(w, "forbidden: this relay answers only to a loopback Host (localhost, 127.0.0.1, [::1]): "+
			"the request named another host, as a web page reaching it through DNS rebinding would", http.StatusForbidden)
		return
	}
	addr := remoteKey(req)
	if wait, throttled := r.authFails.throttled(addr, time.Now()); throttled {
		refuseThrottled(w, wait) // auth.go
		return
	}
	id, ok, unchecked := r.checkToken(req) // devices.go
	switch {
	case unchecked != nil:
		// Not a wrong token (the devices table failed, or the client
		// left while it was looked up: the relay closes pending upgrades
		// over an address's limit): never counted towards the throttle.
		http.Error(w, "the relay could not check this token right now: try again in a moment", http.StatusServiceUnavailable)
		return
	case ok:
		r.authFails.succeeded(r.log, addr)
	default:
		r.authFails.fail(r.log, addr, time.Now())
		w.Header().Set("WWW-Authenticate", `Bearer realm="pilotdesk"`)
		http.Error(w, "unauthorized: send the relay's token as \"Authorization: Bearer <token>\" or ?token=<token>", http.StatusUnauthorized)
		return
	}
	r.lifeMu.Lock()
	if r.closed || r.isDraining() {
		r.lifeMu.Unlock()
		http.Error(w, "the relay is shutting down: connect to another relay", http.StatusServiceUnavailable)
		return
	}
	r.connWG.Add(1)
	r.lifeMu.Unlock()
	defer r.connWG.Done()

	cw := &corkingWriter{ResponseWriter: w}
	ws, err := websocket.Accept(cw, req, r.acceptFor(req))
	if err != nil {
		// Accept has answered (403 for a cross-origin request, 400 …).
		r.log.Info("relay: refused a WebSocket upgrade", "remote", req.RemoteAddr, "err", err)
		return
	}
	ws.SetReadLimit(discardLimit)
	ctx, cancel := context.WithCancel(r.ctx)
	c := &conn{
		r:          r,
		id:         id,
		ws:         ws,
		cork:       cw.conn,
		log:        r.log.With("remote", req.RemoteAddr),
		ctx:        ctx,
		cancel:     cancel,
		queue:      newSendQueue(r.sendQueue),
		writerDone: make(chan struct{}),
		drained:    make(chan struct{}, 1),
		subs:       map[string]*conversation{},
		replays:    tokenBucket{tokens: float64(r.maxReplays), at: time.Now()},
	}
	defer cancel()

	r.mu.Lock()
	// Close iterates r.conns after cancelling r.ctx: a connection registered
	// after that must see the cancellation itself.
	shuttingDown := r.ctx.Err() != nil
	refused := ""
	if !shuttingDown {
		if refused = r.admitLocked(id, len(r.conns)); refused == "" {
			r.conns[c] = struct{}{}
			r.presentLocked(id, 1) // push.go
		}
	}
	r.mu.Unlock()
	if shuttingDown {
		_ = ws.Close(websocket.StatusGoingAway, "relay shutting down")
		return
	}
	if refused != "" {
		r.refusedLog.warn(c.log, "relay: a connection limit is reached; refusing a connection", "device", id.device, "why", refused)
		frame, _ := protocol.Encode(protocol.TypeError, &protocol.Error{Code: protocol.CodeLimit, Message: refused})
		_ = ws.Write(context.Background(), websocket.MessageText, frame)
		_ = ws.Close(websocket.StatusTryAgainLater, "too many connections")
		return
	}

	c.log.Debug("relay: connection opened")
	c.touch()
	c.heartbeat = time.AfterFunc(r.heartbeat, c.checkHeartbeat)
	go c.writeLoop()
	r.budget.greet(c) // copilot:budget, first, when the relay has a budget
	stopExpiry := c.watchExpiry()
	r.touchDevice(c.id)

	err = c.readLoop()
	stopExpiry()
	r.touchDevice(c.id)

	c.cancel() // before stopping the heartbeat: a check running now sees it
	c.heartbeat.Stop()
	r.watch.set(c, false)
	for _, conv := range c.subs {
		conv.unsubscribe(c)
		r.forgetIfEmpty(conv)
		r.refollow(conv)
	}
	c.subs = nil
	c.closeWith(websocket.StatusNormalClosure, "", false)
	<-c.writerDone
	_ = ws.CloseNow()
	r.mu.Lock()
	delete(r.conns, c)
	r.presentLocked(id, -1) // push.go
	r.mu.Unlock()
	r.leave(id)
	c.log.Debug("relay: connection closed", "reason", err)
}

var errInvalidUTF8 = errors.New("a text frame is not valid UTF-8")

// readLoop reads frames until the connection fails or closes.
func (c *conn) readLoop() error {
	for {
		typ, rd, err := c.ws.Reader(context.Background())
		if err != nil {
			return c.readFailed(err)
		}
		c.touch() // every inbound message, valid or not
		err = c.handleFrame(typ, rd)
		c.releaseFrame()
		if err != nil {
			return c.readFailed(err)
		}
	}
}

// readFailed closes the connection with the code the guard's error
// calls for (guard.go); other errors close as before.
func (c *conn) readFailed(err error) error {
	switch {
	case errors.Is(err, errMessageTooBig):
		c.log.Info("relay: a message declares more than the relay reads; closing the connection", "limit", discardLimit)
		c.closeWith(websocket.StatusMessageTooBig, fmt.Sprintf("message over the %d MiB limit", discardLimit>>20), false)
	case errors.Is(err, errUnmasked):
		c.log.Info("relay: a client frame is not masked; closing the connection")
		c.closeWith(websocket.StatusProtocolError, "client frames must be masked", false)
	}
	return err
}

// handleFrame reads one message and acts on it; an error ends the
// connection.
func (c *conn) handleFrame(typ websocket.MessageType, rd io.Reader) error {
	frame, refused, err := c.readFrame(rd)
	if err != nil {
		return err
	}
	switch refused {
	case protocol.CodeTooLarge:
		c.sendError(&protocol.Error{Code: protocol.CodeTooLarge, Message: fmt.Sprintf("the frame is over the %d byte limit and was ignored", protocol.MaxFrameBytes)})
		return nil
	case protocol.CodeLimit:
		c.sendError(&protocol.Error{Code: protocol.CodeLimit, Message: c.r.framesRefused(c.id)})
		return nil
	}
	if typ != websocket.MessageText {
		c.sendError(&protocol.Error{Code: protocol.CodeInvalidMessage, Message: `binary frames are not supported: send text frames holding {"type": string, "data"?: object}`})
		return nil
	}
	if !utf8.Valid(frame) {
		// RFC 6455 (8.1) closes the connection on a text frame that is
		// not UTF-8. Decoding it instead would turn each invalid byte
		// into U+FFFD, so different byte strings would name one
		// conversation.
		c.log.Info("relay: a text frame is not valid UTF-8; closing the connection")
		c.closeWith(websocket.StatusInvalidFramePayloadData, "text frame is not valid UTF-8", false)
		return errInvalidUTF8
	}
	req, perr := protocol.DecodeRequest(frame)
	if perr != nil {
		if perr.ConversationID == "" {
			perr.ConversationID = req.ConversationID()
		}
		c.sendError(perr)
		return nil
	}
	c.r.dispatch(c, req)
	return nil
}

// frameBase is the read buffer a connection keeps between frames, and the
// part of a frame it reads without a share of the relay's budget for frames
// being received (Config.MaxPendingFrameBytes): most frames are far smaller.
const frameBase = 16 << 10

// readFrame reads one message into the connection's buffer. A message over
// MaxFrameBytes is read to its end and dropped (refused too_large), so the
// connection survives; so is one that would take the relay's frames being
// received over their budget (refused limit). The buffer grows with the
// message, never past MaxFrameBytes + 1, and what it holds above frameBase
// is taken from the budget until releaseFrame gives it back: a client that
// sends most of a large frame and stops holds its share, not more, and all
// of them together no more than the budget.
func (c *conn) readFrame(rd io.Reader) (frame []byte, refused string, err error) {
	buf := c.readBuf[:0]
	if buf == nil {
		buf = make([]byte, 0, 512)
	}
	for {
		if len(buf) == cap(buf) {
			grown, ok := c.growFrame(buf)
			if !ok {
				c.readBuf = buf
				if _, err := io.Copy(io.Discard, rd); err != nil {
					return nil, "", err
				}
				return nil, protocol.CodeLimit, nil
			}
			buf = grown
		}
		n, err := rd.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		c.readBuf = buf
		if len(buf) > protocol.MaxFrameBytes {
			if _, err := io.Copy(io.Discard, rd); err != nil {
				return nil, "", err
			}
			return nil, protocol.CodeTooLarge, nil
		}
		if errors.Is(err, io.EOF) {
			return buf, "", nil
		}
		if err != nil {
			return nil, "", err
		}
	}
}

// growFrame returns a larger buffer holding buf, taking what it adds above
// frameBase from the relay's budget; false when the budget has no room.
func (c *conn) growFrame(buf []byte) ([]byte, bool) {
	size := min(max(2*cap(buf), 512), protocol.MaxFrameBytes+1)
	if need := max(size, frameBase) - max(cap(buf), frameBase); need > 0 {
		if !c.r.reserveFrameBytes(c.id, need) {
			return buf, false
		}
		c.reserved += need
	}
	grown := make([]byte, len(buf), size)
	copy(grown, buf)
	return grown, true
}

// releaseFrame ends a frame: a buffer that grew past frameBase goes back to
// the garbage collector, and its share to the budget, so idle connections
// stay small.
func (c *conn) releaseFrame() {
	if c.reserved > 0 || cap(c.readBuf) > frameBase {
		if c.reserved > 0 {
			c.r.releaseFrameBytes(c.id, c.reserved)
		}
		c.reserved = 0
		c.readBuf = nil
		return
	}
	c.readBuf = c.readBuf[:0]
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

// outRun is an entry of a connection's send queue: one frame, or a run of
// frames queued at once. The fan-out queues one run per commit for every
// subscriber of the conversation, the same run for all of them, so a
// commit of n events costs each subscriber one entry and one lock, not n
// entries copied into its queue (with 50 subscribers, the copies, the
// growing of each queue's array in a burst and the collector's scans of
// those arrays were a sixth of the relay's CPU time per delivery). A run
// is read-only once queued.
type outRun struct {
	one    []byte   // the frame, when frames is nil
	frames [][]byte // the run, shared with the conversation's other subscribers
	bytes  int      // the frames' length, summed once for all of them
}

// newRun makes a run of frames, which must not be changed from then on.
func newRun(frames [][]byte) outRun {
	return outRun{frames: frames, bytes: framesBytes(frames)}
}

// len is how many frames the entry holds: the queue's bound counts frames.
func (r outRun) len() int {
	if r.frames == nil {
		return 1
	}
	return len(r.frames)
}

// newSendQueue is a connection's send queue. A replay (enqueueWait) waits
// while it is half full, so that it follows the client's pace and leaves
// the other half for the live events of other conversations, which never
// wait: a connection they do not fit in is closed (CloseTooSlow).
func newSendQueue(frames int) *queue.Queue[outRun] {
	return queue.New(queue.Options[outRun]{
		MaxLen:    frames,
		MaxBytes:  maxQueueBytes,
		Size:      func(r outRun) int { return r.bytes },
		Count:     outRun.len,
		WaitLen:   max(frames/2, 1),
		WaitBytes: maxQueueBytes / 2,
	})
}

// enqueue queues one frame. It never blocks: a connection whose queue is
// full is closed (CloseTooSlow) and reconnects with sinceSeq.
func (c *conn) enqueue(frame []byte) bool {
	return c.enqueueRun(outRun{one: frame, bytes: len(frame)})
}

// enqueueMany queues frames in order, or closes the connection if they do
// not fit. The frames are queued as they are, not copied: the caller must
// not change the slice afterwards.
func (c *conn) enqueueMany(frames [][]byte) bool {
	if len(frames) == 0 {
		return true
	}
	return c.enqueueRun(newRun(frames))
}

// enqueueRun queues a run (enqueueMany), or closes the connection if it
// does not fit.
func (c *conn) enqueueRun(r outRun) bool {
	if !c.pushed(c.queue.TryPush(r)) {
		return false
	}
	c.unwritten.Add(int64(r.bytes))
	return true
}

func framesBytes(frames [][]byte) int {
	n := 0
	for _, f := range frames {
		n += len(f)
	}
	return n
}

// pushed handles the outcome of a push that must not wait: a full queue
// closes the connection.
func (c *conn) pushed(err error) bool {
	if errors.Is(err, queue.ErrFull) {
		c.overflow()
	}
	return err == nil
}

// enqueueWait queues a frame of a replay: it waits while the connection has
// replayWindow bytes unwritten (replayRoom) and while the queue is half
// full, so a long replay follows the client's pace, holds no more of the
// history than that, and leaves room for the live events of other
// conversations. It reports false when the connection ends.
func (c *conn) enqueueWait(frame []byte) bool {
	if !c.replayRoom() || c.queue.Push(context.Background(), outRun{one: frame, bytes: len(frame)}) != nil {
		return false
	}
	c.unwritten.Add(int64(len(frame)))
	return true
}

// replayWindow bounds what a replay puts in flight on one connection:
// it queues another frame only while fewer bytes than this are queued or
// being written. So a client that subscribes from seq 0 and never reads
// costs the relay about this much (and one frame), however long the
// conversation, instead of the queue's 64 MiB.
const replayWindow = 256 << 10

// replayRoom waits until the connection has fewer than replayWindow bytes
// unwritten; false if the connection ends first.
func (c *conn) replayRoom() bool {
	for c.unwritten.Load() >= replayWindow {
		select {
		case <-c.drained:
		case <-c.writerDone:
			return false
		}
	}
	return true
}

// replayFull reports whether a replay should stop reading the history until
// the socket drains.
func (c *conn) replayFull() bool { return c.unwritten.Load() >= replayWindow }

// waitSpace waits until a replay's frame would be queued without waiting;
// false if the connection ends first.
func (c *conn) waitSpace() bool {
	return c.queue.WaitRoom(context.Background()) == nil
}

// fits reports whether n more frames fit in the queue now, leaving room for
// live events.
func (c *conn) fits(n int) bool {
	s := c.queue.Stats()
	return !s.Closed && s.Len+n <= c.r.sendQueue && s.Bytes < maxQueueBytes/2
}

func (c *conn) overflow() {
	queued := c.queue.Len()
	if c.closeWith(CloseTooSlow, "too far behind: reconnect and resume with sinceSeq", false) {
		c.log.Warn("relay: a connection fell too far behind; disconnecting it", "queued", queued)
	}
}

// closeWith closes the connection with a close frame. With flush, frames
// already queued are sent first. Only the first call counts; it reports
// whether this one did.
func (c *conn) closeWith(code websocket.StatusCode, reason string, flush bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeLocked(code, reason, flush)
}

func (c *conn) closeLocked(code websocket.StatusCode, reason string, flush bool) bool {
	if c.closing {
		return false
	}
	c.closing = true
	c.flushClose = flush
	c.closeCode, c.closeReason = code, reason
	// A peer that stopped reading can hold the writer in a write forever
	// (TCP retries for many minutes): past the grace period the connection
	// is dropped without ceremony.
	c.closeWatchdog = time.AfterFunc(closeGrace, func() { _ = c.ws.CloseNow() })
	if flush {
		c.queue.Close()
	} else {
		c.queue.CloseDiscard()
	}
	return true
}

// closeState is what closeWith decided, for the writer.
func (c *conn) closeState() (closing, flush bool, code websocket.StatusCode, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closing, c.flushClose, c.closeCode, c.closeReason
}

// writeLoop is the connection's writer: it takes every queued frame and
// sends them together, a syscall per buffer of them (corkConn.writeRuns).
// Writes use a context without deadline (no timer per write); a connection
// that stops reading is closed by the queue's bound or the heartbeat. Once
// the queue is closed and drained it sends the close frame.
func (c *conn) writeLoop() {
	defer func() {
		c.mu.Lock()
		if c.closeWatchdog != nil {
			c.closeWatchdog.Stop()
		}
		c.mu.Unlock()
		close(c.writerDone)
	}()
	var batch []outRun
	for {
		var err error
		batch, err = c.queue.PopAll(context.Background(), batch)
		if err != nil {
			break // closed, and everything to send was sent
		}
		if closing, flush, _, _ := c.closeState(); closing && !flush {
			continue // closed without flush while this batch was taken: it goes too
		}
		err = c.cork.writeRuns(batch)
		c.unwritten.Add(-int64(runsBytes(batch)))
		select {
		case c.drained <- struct{}{}:
		default:
		}
		if cap(batch) > 1024 && len(batch) < 64 {
			batch = nil // do not keep a burst's array on a quiet connection
		}
		if err != nil {
			c.closeWith(websocket.StatusInternalError, "", false)
			_ = c.ws.CloseNow()
			return
		}
	}
	_, _, code, reason := c.closeState()
	_ = c.ws.Close(code, reason)
}

func runsBytes(runs []outRun) int {
	n := 0
	for _, r := range runs {
		n += r.bytes
	}
	return n
}

// send queues a frame meant for this connection only.
func (c *conn) send(msgType string, data any) {
	frame, err := protocol.Encode(msgType, data)
	if err != nil {
		c.log.Error("relay: encode a reply", "type", msgType, "err", err)
		return
	}
	if len(frame) > protocol.MaxFrameBytes {
		// Replies are bounded where they are made (a list is paged); one
		// that is not would stop the client, so it does not leave.
		c.log.Error("relay: a reply over the frame limit was not sent", "type", msgType, "bytes", len(frame))
		return
	}
	c.enqueue(frame)
}

func (c *conn) sendError(e *protocol.Error) {
	c.send(protocol.TypeError, e)
}

// refuse answers request req (a decoded request frame's data) with e,
// which names, for a copilot:send, the send's clientId: the client then
// knows which of its prompts to give back.
func (c *conn) refuse(req any, e *protocol.Error) {
	if s, ok := req.(*protocol.Send); ok && e.Type == protocol.TypeSend && e.ClientID == "" {
		e.ClientID = s.ClientID
	}
	c.sendError(e)
}
