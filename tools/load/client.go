package main

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// promptPrefix starts every prompt; the send time follows it in Unix
// nanoseconds. The script echoes the prompt as the turn's first delta, and
// the relay sends it as copilot:user_message, so both carry the send time.
const promptPrefix = "load t="

// conversation is one conversation under load and what its sender learned.
type conversation struct {
	id     string
	index  int
	sender *client

	turns atomic.Int64
	// lostAt is when a client first got the copilot:idle "relay lost: …"
	// that closed the turn a killed relay ran (Unix ns; 0: none), and
	// turnsAfter counts the turns completed after it (on a new owner).
	lostAt     atomic.Int64
	turnsAfter atomic.Int64
	// frames is a fingerprint of every event any client got, by seq: every
	// client, on any relay, and the replay of the history must have the
	// same bytes for a seq.
	mu     sync.Mutex
	frames []uint64
	// final is the seq of the last event, once the last turn after the run
	// ended (-1 before); finalCh is closed then.
	final   atomic.Int64
	finalCh chan struct{}
}

// client is one WebSocket connection subscribed to one conversation. One
// goroutine (run) owns the connection and everything below mu-less fields;
// main reads them only after run has returned, except the atomics.
type client struct {
	id     int
	home   int // the relay it connects to while that one lives
	conv   *conversation
	sender bool
	log    *slog.Logger
	run    *runState

	conn *websocket.Conn // the current connection; Write is safe from any goroutine
	mu   sync.Mutex      // guards conn for the writers

	// Owned by the run goroutine.
	resumed    bool // reconnected, and its copilot:subscribed has not come yet
	prompted   bool // a prompt was sent since the last reconnect
	turnOpen   bool // the sender saw a turn's user message and not yet its idle
	seqs       seqTracker
	recvAt     []int64         // receive time (Unix ns) of seq base+1+i; 0 if never received
	e2e        []time.Duration // send → receive of the events that carry the send time
	reconnects int
	errFrames  []string

	lastSeq   atomic.Int64 // the highest seq received, for main's drain check
	heard     atomic.Int64 // when the connection last got a frame (Unix ns)
	delivered atomic.Int64 // conversation events received
	ready     chan error   // the first subscription's outcome
}

// runState is what every client shares.
type runState struct {
	token     string
	nats      bool        // relays sharing a cluster: a killed one is not restarted
	killed    atomic.Bool // a relay was killed: turns closed by its restart or a takeover are expected
	stopping  atomic.Bool // no new prompts once set
	errors    atomic.Int64
	restarted atomic.Int64   // turns closed by the restart (idle status error, "relay restarted") or by a takeover ("relay lost")
	resends   atomic.Int64   // prompts sent again after error limit (the owner dead, its lease not lapsed yet)
	timers    sync.WaitGroup // the resends waiting; run waits for them

	// With -fault: the fault injected, whether it is under way, and when
	// the cluster was whole again (Unix ns; 0: not yet).
	fault       string
	faulty      atomic.Bool
	recoveredAt atomic.Int64
	pingEvery   time.Duration // 30 s; 2 s with -fault, so that a silent relay is left
	lostTurns   atomic.Int64  // turns closed "relay lost" where no relay was lost
	aborted     atomic.Int64  // turns that ended with status aborted
	storeFailed atomic.Int64  // turns closed because the history could not be saved
	refused     atomic.Int64  // prompts refused (error frames) while the store was down, sent again
	firstAfter  atomic.Int64  // the first delivery after recoveredAt (Unix ns)

	mu   sync.Mutex // guards urls and dead
	urls []string   // the relays' WebSocket URLs; a restart changes one
	dead []bool     // killed and not restarted
}

// setURL sets relay i's URL (a start or a restart).
func (s *runState) setURL(i int, url string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.urls) <= i {
		s.urls, s.dead = append(s.urls, ""), append(s.dead, false)
	}
	s.urls[i], s.dead[i] = url, false
}

// kill marks relay i dead: its clients go to the others.
func (s *runState) kill(i int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dead[i] = true
}

// urlFor is where client c connects: its own relay while it lives, else
// one of the others, chosen by c's id, as a load balancer spreads the
// connections of a relay that died.
func (s *runState) urlFor(c *client) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.dead[c.home] {
		return s.urls[c.home]
	}
	var live []string
	for i, u := range s.urls {
		if !s.dead[i] {
			live = append(live, u)
		}
	}
	if len(live) == 0 {
		return s.urls[c.home]
	}
	return live[c.id%len(live)]
}

// liveURLs are the URLs of the relays that were not killed.
func (s *runState) liveURLs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var live []string
	for i, u := range s.urls {
		if !s.dead[i] {
			live = append(live, u)
		}
	}
	return live
}

// anyURL is a live relay's URL.
func (s *runState) anyURL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, u := range s.urls {
		if !s.dead[i] {
			return u
		}
	}
	return s.urls[0]
}

// frame is the part of a relay message the load tool reads.
type frame struct {
	Type string `json:"type"`
	Data struct {
		ConversationID string `json:"conversationId"`
		Seq            int64  `json:"seq"`
		Content        string `json:"content"`
		Status         string `json:"status"`
		Streaming      bool   `json:"streaming"`
		Code           string `json:"code"`
		Message        string `json:"message"`
	} `json:"data"`
}

// dial opens a connection and subscribes; from is the seq to resume after
// (-1 for a first subscription: live events from now on).
func (c *client) dial(ctx context.Context, from int64) error {
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, resp, err := websocket.Dial(dctx, c.run.urlFor(c), &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + c.run.token}},
	})
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		return fmt.Errorf("connection %d: dial: %w", c.id, err)
	}
	conn.SetReadLimit(4 << 20)
	c.heard.Store(time.Now().UnixNano())
	c.mu.Lock()
	c.conn = conn
	c.mu.Unlock()
	sub := map[string]any{"conversationId": c.conv.id}
	if from >= 0 {
		sub["sinceSeq"] = from
	}
	return c.write(ctx, "copilot:subscribe", sub)
}

func (c *client) write(ctx context.Context, typ string, data any) error {
	b, err := json.Marshal(map[string]any{"type": typ, "data": data})
	if err != nil {
		return err
	}
	c.mu.Lock()
	conn := c.conn
	c.mu.Unlock()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := conn.Write(wctx, websocket.MessageText, b); err != nil {
		return fmt.Errorf("connection %d: write %s: %w", c.id, typ, err)
	}
	return nil
}

// sendPrompt starts a turn; the prompt carries the send time.
func (c *client) sendPrompt(ctx context.Context) error {
	prompt := promptPrefix + strconv.FormatInt(time.Now().UnixNano(), 10)
	return c.write(ctx, "copilot:send", map[string]any{"conversationId": c.conv.id, "prompt": prompt})
}

// loop reads until ctx ends, reconnecting (and resuming with sinceSeq) when
// the relay drops the connection. dialSem bounds the first dials.
func (c *client) loop(ctx context.Context, dialSem chan struct{}) {
	dialSem <- struct{}{}
	err := c.dial(ctx, -1)
	<-dialSem
	if err != nil {
		c.ready <- err
		return
	}
	first := true
	go c.keepAlive(ctx)
	for {
		err := c.read(ctx, &first)
		if ctx.Err() != nil {
			c.closeConn()
			return
		}
		if first {
			c.ready <- fmt.Errorf("connection %d: before its subscription: %w", c.id, err)
			return
		}
		// Dropped (a slow consumer, a relay restart): resume from the last
		// seq.
		c.reconnects++
		c.resumed, c.prompted = true, false
		c.log.Debug("load: connection dropped; resuming", "conn", c.id, "err", err, "lastSeq", c.seqs.last)
		c.closeConn()
		for ctx.Err() == nil {
			if err := c.dial(ctx, c.seqs.last); err == nil {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

func (c *client) closeConn() {
	c.mu.Lock()
	if c.conn != nil {
		_ = c.conn.CloseNow()
	}
	c.mu.Unlock()
}

// keepAlive pings every run.pingEvery (30 s: docs/protocol.md, Heartbeat),
// and leaves a connection that heard nothing, not even a pong, for three
// of them: its relay is paused or cut off, and the client reconnects
// elsewhere, as a client does.
func (c *client) keepAlive(ctx context.Context) {
	every := c.run.pingEvery
	if every <= 0 {
		every = 30 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if time.Since(time.Unix(0, c.heard.Load())) > 3*every {
				c.closeConn()
				continue
			}
			_ = c.write(ctx, "ping", nil)
		}
	}
}

// read handles frames until the connection fails.
func (c *client) read(ctx context.Context, first *bool) error {
	c.mu.Lock()
	conn := c.conn
	c.mu.Unlock()
	// Reads use a context without deadline or cancel: coder/websocket
	// watches a cancellable context on every read, which costs CPU the relay
	// would rather have. The end of ctx closes the connection instead.
	stop := context.AfterFunc(ctx, func() { _ = conn.CloseNow() })
	defer stop()
	var f frame
	for {
		_, msg, err := conn.Read(context.Background())
		if err != nil {
			return err
		}
		now := time.Now().UnixNano()
		c.heard.Store(now)
		f = frame{}
		if err := json.Unmarshal(msg, &f); err != nil {
			c.fail(fmt.Sprintf("undecodable frame %.200s: %v", msg, err))
			continue
		}
		switch f.Type {
		case "pong":
		case "error":
			c.errorFrame(ctx, &f, msg)
		case "copilot:subscribed":
			if *first {
				*first = false
				c.seqs.start(f.Data.Seq)
				c.lastSeq.Store(f.Data.Seq)
				c.ready <- nil
			} else if c.resumed {
				c.resumed = false
				c.afterResume(ctx, &f)
			}
		default:
			c.event(ctx, &f, msg, now)
		}
	}
}

// errorFrame handles an error frame: the refusals a kill or a fault
// explains get the prompt sent again; any other is a failure.
func (c *client) errorFrame(ctx context.Context, f *frame, msg []byte) {
	switch {
	case c.sender && c.run.nats && c.run.killed.Load() && f.Data.Code == "limit":
		// A prompt sent to a conversation whose owner was killed
		// and whose lease has not lapsed yet: the relay says to
		// send again in a moment, as a user would.
		c.run.resends.Add(1)
		c.retryPrompt(ctx)
	case c.sender && c.run.fault != "" && f.Data.Code == "conversation_busy" && c.reconnects > 0:
		// A prompt sent again after a reconnect whose first
		// sending had reached the relay after all (the relay
		// started the turn after the resume said idle): the
		// turn runs, and its idle brings the next prompt.
		c.run.refused.Add(1)
	case c.sender && c.run.fault != "" && f.Data.Code == "limit":
		// A prompt refused while the history store is
		// unreachable (or its failed turns' ends are not
		// stored yet), or while its owner changes: sent again
		// a second later, as a user would.
		c.run.refused.Add(1)
		c.retryPrompt(ctx)
	default:
		c.fail(fmt.Sprintf("error frame: %s", msg))
	}
}

// event handles a conversation event received at now (Unix ns): its seq is
// checked and counted, its latency measured, and a sender reacts to the
// turns' starts and ends.
func (c *client) event(ctx context.Context, f *frame, msg []byte, now int64) {
	if f.Data.ConversationID != c.conv.id || f.Data.Seq < 1 {
		c.fail(fmt.Sprintf("unexpected frame: %.200s", msg))
		return
	}
	if !c.seqs.add(f.Data.Seq) {
		return // a repeat: counted by the tracker
	}
	if !c.conv.sameFrame(f.Data.Seq, msg) {
		c.fail(fmt.Sprintf("seq %d: not the bytes another client got for it: %.200s", f.Data.Seq, msg))
	}
	if f.Type == "copilot:idle" && f.Data.Status == "error" && strings.HasPrefix(f.Data.Message, "relay lost") {
		c.conv.lostAt.CompareAndSwap(0, now)
	}
	c.delivered.Add(1)
	c.lastSeq.Store(f.Data.Seq)
	if rec := c.run.recoveredAt.Load(); rec != 0 && now > rec {
		c.run.firstAfter.CompareAndSwap(0, now)
	}
	if i := int(f.Data.Seq - c.seqs.base - 1); i >= 0 {
		for len(c.recvAt) <= i {
			c.recvAt = append(c.recvAt, 0)
		}
		c.recvAt[i] = now
	}
	if (f.Type == "copilot:delta" || f.Type == "copilot:user_message") && strings.HasPrefix(f.Data.Content, promptPrefix) {
		if sent, err := strconv.ParseInt(f.Data.Content[len(promptPrefix):], 10, 64); err == nil {
			c.e2e = append(c.e2e, time.Duration(now-sent))
		}
	}
	if c.sender {
		switch f.Type {
		case "copilot:user_message":
			if c.turnOpen {
				c.fail(fmt.Sprintf("seq %d: a turn started before the previous one ended with copilot:idle", f.Data.Seq))
			}
			c.turnOpen = true
		case "copilot:idle":
			c.turnOpen = false
			c.turnEnded(ctx, f)
		}
	}
}

// turnEnded is the sender's reaction to copilot:idle: the next prompt, or,
// once the run is over, the conversation's final seq.
func (c *client) turnEnded(ctx context.Context, f *frame) {
	switch {
	case f.Data.Status == "completed":
		c.conv.turns.Add(1)
		if c.conv.lostAt.Load() != 0 {
			c.conv.turnsAfter.Add(1)
		}
	case f.Data.Status == "error" && f.Data.Message == "relay restarted" && c.run.killed.Load() && !c.run.nats:
		c.run.restarted.Add(1)
	case f.Data.Status == "error" && strings.HasPrefix(f.Data.Message, "relay lost") && c.run.killed.Load() && c.run.nats &&
		(c.run.fault == "" || relayLostAllowed(c.run.fault)):
		c.run.restarted.Add(1)
	case f.Data.Status == "error" && strings.HasPrefix(f.Data.Message, "relay lost"):
		c.run.lostTurns.Add(1)
		c.fail(fmt.Sprintf("seq %d: a turn closed %q although no relay was lost (%s)", f.Data.Seq, f.Data.Message, c.run.fault))
	case f.Data.Status == "error" && storeErrorAllowed(c.run.fault):
		c.run.storeFailed.Add(1)
	case f.Data.Status == "aborted":
		c.run.aborted.Add(1)
		c.fail(fmt.Sprintf("seq %d: a turn was aborted (%s)", f.Data.Seq, f.Data.Message))
	default:
		c.fail(fmt.Sprintf("a turn ended with status %s: %s", f.Data.Status, f.Data.Message))
	}
	c.next(ctx, f.Data.Seq)
}

// retryPrompt sends the prompt again a second later (or, once the run is
// over, ends the conversation at its last seq, that of its last idle, which
// this sender has).
func (c *client) retryPrompt(ctx context.Context) {
	c.run.timers.Add(1)
	time.AfterFunc(time.Second, func() {
		defer c.run.timers.Done()
		switch {
		case ctx.Err() != nil:
		case c.run.stopping.Load():
			if c.conv.final.CompareAndSwap(-1, c.lastSeq.Load()) {
				close(c.conv.finalCh)
			}
		default:
			if err := c.sendPrompt(ctx); err != nil && ctx.Err() == nil {
				c.run.errors.Add(1)
			}
		}
	})
}

// next sends the next prompt, or, once the run is over, records the
// conversation's final seq (that of its last idle).
func (c *client) next(ctx context.Context, lastSeq int64) {
	if c.run.stopping.Load() {
		if c.conv.final.CompareAndSwap(-1, lastSeq) {
			close(c.conv.finalCh)
		}
		return
	}
	c.prompted = true
	if err := c.sendPrompt(ctx); err != nil && ctx.Err() == nil {
		c.fail(err.Error())
	}
}

// afterResume runs on the copilot:subscribed that ends a resume. A sender
// whose conversation is idle and that has not prompted since it reconnected
// lost its prompt with the connection (the relay died before it was read):
// it sends it again.
func (c *client) afterResume(ctx context.Context, f *frame) {
	if !c.sender || f.Data.Streaming {
		return
	}
	if c.turnOpen {
		// docs/protocol.md, Durability: a turn the relay's death interrupted is
		// closed on restart by a stored copilot:idle.
		c.fail(fmt.Sprintf("resumed at seq %d: the turn that was running is not streaming any more but was never closed with copilot:idle", f.Data.Seq))
		c.turnOpen = false
	}
	if c.prompted {
		return
	}
	c.next(ctx, f.Data.Seq)
}

func (c *client) fail(msg string) {
	c.run.errors.Add(1)
	if len(c.errFrames) < 5 {
		c.errFrames = append(c.errFrames, msg)
	}
	c.log.Debug("load: unexpected", "conn", c.id, "what", msg)
}

// seqTracker checks that a subscriber's seqs run base+1, base+2, … with no
// gap and no repeat.
type seqTracker struct {
	base     int64 // seq of copilot:subscribed: events after it are expected
	last     int64 // the highest seq received
	received int64
	lost     int64 // seqs skipped
	repeats  int64 // seqs received again, or out of order
}

func (s *seqTracker) start(base int64) { s.base, s.last = base, base }

// add records seq and reports whether it is new.
func (s *seqTracker) add(seq int64) bool {
	switch {
	case seq == s.last+1:
	case seq > s.last+1:
		s.lost += seq - s.last - 1
	default:
		s.repeats++
		return false
	}
	s.last = seq
	s.received++
	return true
}

// finish counts the seqs up to final that never came.
func (s *seqTracker) finish(final int64) {
	if final > s.last {
		s.lost += final - s.last
	}
}

// sameFrame records the fingerprint of seq's bytes, or compares them with
// the one recorded: false if another client (or the replay) got other
// bytes for the same seq.
func (cv *conversation) sameFrame(seq int64, msg []byte) bool {
	h := fnv.New64a()
	h.Write(msg)
	sum := h.Sum64() | 1 // 0 is "not seen"
	cv.mu.Lock()
	defer cv.mu.Unlock()
	for int64(len(cv.frames)) <= seq {
		cv.frames = append(cv.frames, 0)
	}
	switch cv.frames[seq] {
	case 0:
		cv.frames[seq] = sum
		return true
	default:
		return cv.frames[seq] == sum
	}
}
