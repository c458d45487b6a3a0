// Package relay is the WebSocket server between the agent sessions and every
// window that shows them (docs/protocol.md).
//
// Shape of the server:
//
//   - one conversation struct per conversation, with its own lock: seq,
//     subscribers, mode, the input bridge, the running turn;
//   - every conversation event is encoded once, gets the next seq and goes to
//     the committer, one goroutine that writes everything queued (from all
//     conversations) to the history store in one batch, then fans the frames
//     out in order to the subscribers' send queues (committer.go);
//   - per connection: the HTTP handler goroutine reads and dispatches, one
//     writer goroutine drains the connection's bounded send queue with one
//     syscall per batch (conn.go, cork.go);
//   - a turn is one goroutine blocked in Session.Run (turn.go);
//   - the requests are handled on the connection's handler goroutine
//     (handlers.go); close and delete finish on goroutines of their own.
//
// Locks: each mutex says which fields it guards. A function whose name ends
// in Locked is called with its receiver's lock held (a conversation's, a
// connection's) unless its comment names another, and returns with it held;
// one that ends in OwnLocked is called with a conversation's ownership lock
// held (ownership.go); every other function takes and releases the locks it
// needs, and none returns holding one. The lock order is Relay.mu, then a
// conversation's mu, then the leaf locks (Relay.lifeMu, Relay.usage.mu,
// Relay.streamsMu, a connection's send queue, the committer's queue); a
// conversation's ownership lock is taken before its mu, and never under
// Relay.mu or any conversation's mu.
package relay

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay/checkpoint"
	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/workspace"
	"github.com/pilotdesk/pilotdesk/session"
	"github.com/pilotdesk/pilotdesk/web"
)

// Relay serves the protocol over any session.Agent.
type Relay struct {
	agent       session.Agent
	store       history.Store
	epoch       string
	log         *slog.Logger
	token       bool
	tokenDigest [sha256.Size]byte
	devices     history.Devices // nil: no device tokens (devices.go)
	push        *pusher         // nil: no Web Push (push.go)
	cluster     history.Cluster // nil: one relay (cluster.go)
	// presence, when the cluster shares it, is told which tokens have a
	// connection open here (push.go); nil: one relay, or a cluster that
	// does not.
	presence   history.Presence
	follow     relayFollow    // what it follows of the cluster (follow.go)
	workspaces *workspace.Set // where conversations work (workspace.go)
	// storeTrouble is when this relay last found the history store
	// unreachable (Unix ns; 0: never): its lease lapsed, or a write failed.
	// A takeover soon after says so rather than "relay lost" (cluster.go).
	storeTrouble atomic.Int64
	// losses counts the conversations this relay stopped owning when it
	// was stalled (cluster.go, LeaseLost): while it is 0 the committer
	// skips looking for records made before such a loss.
	losses   atomic.Uint64
	draining atomic.Bool // Drain has begun (drain.go)

	checkpoints       *checkpoint.Store // nil: off (checkpoints.go)
	checkpointsOffWhy string
	workDir           string

	// commitInterval is Config.CommitInterval: the least time between
	// two writes of the committer.
	commitInterval time.Duration
	// commitWindow is Config.CommitWindow: after a store write that took
	// a round trip, a small commit waits up to this after the previous one
	// began (committer.go, gather); 0: never.
	commitWindow time.Duration

	heartbeat    time.Duration
	inputTimeout time.Duration // <= 0: none
	budgetClock  func() time.Time
	deviceClock  func() time.Time
	inputTimer   func(time.Duration, func()) func() bool
	sendQueue    int
	maxConns     int
	maxSubs      int
	maxNewConvs  int
	maxReplays   int // per connection per minute
	// maxPendingFrames bounds the bytes taken by the read buffers of frames
	// being received, beyond each one's first frameBase (conn.readFrame);
	// what is taken is in usage (limits.go).
	maxPendingFrames int
	limits           tokenLimits // per token and the owner's reserves (limits.go)
	usage            usage       // what each token holds (limits.go)
	addrs            addrConns   // HTTP connections per remote address (auth.go)
	authFails        authThrottle
	refusedLog       logEvery // connections refused by a limit (lograte.go)
	acceptOptions    websocket.AcceptOptions
	start            time.Time // origin of the monotonic clock used by heartbeats

	// ctx ends when Close starts: every turn and connection derives from it.
	ctx    context.Context
	cancel context.CancelCauseFunc

	commit *committer
	watch  *watchHub // the connections that watch the list (list.go)
	budget *budget   // the credit budget and the spend (budget.go)
	mux    *http.ServeMux

	mu    sync.Mutex // guards convs, conns, present; taken before any conversation's lock
	convs map[string]*conversation
	conns map[*conn]struct{}
	// present counts the open connections of each token (push.go), when
	// presence is set.
	present map[[sha256.Size]byte]int

	// The running streams in the order they started, for the deprecated
	// copilot:abort without conversationId (the last active stream).
	streamsMu  sync.Mutex // guards streamSeq, streamsRun; a leaf lock, taken under a conversation's lock
	streamSeq  uint64
	streamsRun map[*turn]streamStart

	// lifeMu is held around the WaitGroups' Add, so that nothing is started
	// once Close is waiting. A leaf lock.
	lifeMu sync.Mutex // guards closed
	closed bool
	work   sync.WaitGroup // turns, session closes, deletes
	connWG sync.WaitGroup // connection handlers

	closeOnce sync.Once
	closeErr  error
}

var errShutdown = errors.New("the relay is shutting down")

// RestartedMessage is the copilot:idle message of a turn the relay itself
// cut: stopped with the relay (status aborted), or left open by a crash and
// closed on restart (status error). Clients say "Interrupted: the relay
// restarted" for it, not that the user stopped the turn.
const RestartedMessage = "relay restarted"

// New returns a relay serving cfg.Agent. It loads the conversations of
// cfg.Store and closes the turns a previous run left open (docs/protocol.md,
// Durability).
func New(cfg Config) (*Relay, error) {
	if cfg.Agent == nil {
		return nil, errors.New("relay: Config.Agent is required")
	}
	r := newRelay(cfg)
	if err := r.fillDefaults(cfg); err != nil {
		return nil, err
	}
	p, err := newPusher(r, cfg.Push)
	if err != nil {
		return nil, err
	}
	r.push = p
	r.acceptOptions = websocket.AcceptOptions{OriginPatterns: append([]string(nil), cfg.OriginPatterns...)}
	r.epoch = r.store.Epoch()

	if err := r.load(); err != nil {
		return nil, err
	}
	b, err := newBudget(r, cfg.BudgetCredits, cfg.BudgetPeriod)
	if err != nil {
		return nil, err
	}
	r.budget = b

	r.ctx, r.cancel = context.WithCancelCause(context.Background())
	if r.checkpoints != nil && r.cluster == nil {
		r.pruneCheckpoints() // checkpoints.go
	}
	r.watch = newWatchHub(r)
	r.commit = newCommitter(r)
	go r.commit.run()
	if r.devices != nil {
		poll := cmp.Or(cfg.DevicePoll, DefaultDevicePoll)
		kick := r.watchDevices()
		r.track(&r.work, func() { r.pollDevices(poll, kick) })
	}
	if r.push != nil {
		r.track(&r.work, r.push.run)
	}
	if err := r.budget.watch(r.ctx); err != nil {
		r.abandon()
		return nil, err
	}

	if r.cluster != nil {
		if err := r.cluster.Start(clusterHooks{r}); err != nil {
			r.abandon()
			return nil, fmt.Errorf("relay: join the other relays: %w", err)
		}
	}

	r.mux = http.NewServeMux()
	r.mux.HandleFunc("GET /ws", r.serveWS)
	r.mux.HandleFunc("GET /healthz", r.serveHealth)
	r.routePush() // push.go
	// The web client: the page a phone or a browser opens with the token in
	// its fragment. /ws and /healthz are more specific patterns and keep
	// theirs.
	r.mux.Handle("GET /", web.Handler())
	return r, nil
}

// load reads the stored conversations. A conversation found streaming was
// interrupted by a crash: its open input request is closed (reason aborted)
// and its turn is closed (idle, status error, "relay restarted"), both stored
// before anyone can subscribe. In a cluster it only lists them (loadShared).
func (r *Relay) load() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stored, err := r.store.Conversations(ctx)
	if err != nil {
		return fmt.Errorf("relay: load conversations: %w", err)
	}
	if r.cluster != nil {
		// The turns left open are other relays' to close, or a takeover's.
		r.loadShared(stored)
		return nil
	}
	var batch history.Batch
	now := time.Now()
	for _, m := range stored {
		mode := protocol.Mode(m.Mode)
		if !mode.Valid() {
			mode = protocol.ModeAct
		}
		c := newConversation(r, m.ID)
		c.title, c.mode, c.model, c.agent, c.workspace = m.Title, mode, m.Model, m.Agent, m.Workspace
		c.createdAt, c.updatedAt = m.CreatedAt, m.UpdatedAt
		c.lastSeq, c.sentSeq = m.LastSeq, m.LastSeq
		c.fromStore = true

		var events []history.Event
		add := func(typ string, hdr *protocol.Header, data any) error {
			c.lastSeq++
			*hdr = protocol.Header{ConversationID: c.id, Seq: c.lastSeq}
			frame, err := protocol.Encode(typ, data)
			if err != nil {
				return fmt.Errorf("relay: encode %s for %s: %w", typ, c.id, err)
			}
			events = append(events, history.Event{ConversationID: c.id, Seq: c.lastSeq, Type: typ, Frame: frame})
			return nil
		}
		if len(m.PendingInput) > 0 {
			var pending struct {
				RequestID string `json:"requestId"`
			}
			_ = json.Unmarshal(m.PendingInput, &pending) // an unreadable one is still closed
			d := protocol.UserInputClosed{RequestID: pending.RequestID, Reason: protocol.ClosedAborted}
			if err := add(protocol.TypeUserInputClosed, &d.Header, &d); err != nil {
				return err
			}
		}
		if m.Streaming {
			d := protocol.Idle{Status: protocol.StatusError, Message: RestartedMessage}
			if err := add(protocol.TypeIdle, &d.Header, &d); err != nil {
				return err
			}
		}
		if len(events) > 0 {
			c.sentSeq = c.lastSeq
			c.updatedAt = now
			batch.Events = append(batch.Events, events...)
			batch.Conversations = append(batch.Conversations, c.metaLocked())
			r.log.Info("relay: closed a turn interrupted by a restart", "conversationId", c.id)
		}
		c.sent = c.momentLocked()
		r.convs[c.id] = c
	}
	if len(batch.Events) > 0 {
		if err := r.store.Write(ctx, batch); err != nil {
			return fmt.Errorf("relay: close interrupted turns: %w", err)
		}
	}
	return nil
}

// loadShared lists the stored conversations of a shared history: remote
// until this relay needs one (cluster.go), so that the list shows them.
func (r *Relay) loadShared(stored []history.Conversation) {
	for _, m := range stored {
		c := newConversation(r, m.ID)
		c.lastSeq, c.sentSeq = m.LastSeq, m.LastSeq
		c.setStoredLocked(m) // not locked, but nobody else knows c yet
		r.convs[c.id] = c
	}
}

// abandon stops what New started, when it fails after starting it.
func (r *Relay) abandon() {
	r.cancel(errShutdown)
	r.commit.stop()
	<-r.commit.done
	r.watch.close()
	r.budget.close()
	_ = waitGroup(context.Background(), &r.work)
}

// unhealthy is the body of /healthz's 503.
type unhealthy struct {
	Status string `json:"status"` // "unavailable"
	Reason string `json:"reason"`
}

// serveHealth answers GET /healthz: 200 "ok", or 503 with a JSON body
// that says why, so that a balancer sends new clients to another relay
// and an operator reads the cause: the relay drains before it stops, or
// (on a cluster) it is cut off from NATS, its lease lapsed, or the
// history store does not answer (Cluster.Health).
func (r *Relay) serveHealth(w http.ResponseWriter, _ *http.Request) {
	reason := ""
	switch {
	case r.isDraining():
		reason = "draining before it stops; clients go to another relay"
	case r.cluster != nil:
		reason = r.cluster.Health()
	}
	if reason == "" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok"))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusServiceUnavailable)
	_ = json.NewEncoder(w).Encode(unhealthy{Status: "unavailable", Reason: reason})
}

// Handler serves GET /ws (the WebSocket), GET /healthz and the web client
// (GET / and its files).
func (r *Relay) Handler() http.Handler { return r.mux }

// allConversations is a snapshot of the relay's conversations, for the
// walks over all of them that take each one's own lock (never under mu).
func (r *Relay) allConversations() []*conversation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Collect(maps.Values(r.convs))
}

// Epoch names the relay's history (copilot:subscribed.epoch).
func (r *Relay) Epoch() string { return r.epoch }

// track starts fn on a goroutine that Close waits for. It reports false, and
// starts nothing, once Close has begun.
func (r *Relay) track(wg *sync.WaitGroup, fn func()) bool {
	r.lifeMu.Lock()
	defer r.lifeMu.Unlock()
	if r.closed {
		return false
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		fn()
	}()
	return true
}

// Close aborts open streams, closes every connection (after sending what is
// queued), flushes the history and waits for the relay's goroutines. It
// closes the agent sessions the relay opened, but not the Agent or the Store:
// the caller owns them. When ctx ends first, connections are dropped at once
// and ctx's error is returned.
func (r *Relay) Close(ctx context.Context) error {
	r.closeOnce.Do(func() { r.closeErr = r.shutdown(ctx) })
	return r.closeErr
}

func (r *Relay) shutdown(ctx context.Context) error {
	r.lifeMu.Lock()
	r.closed = true
	r.lifeMu.Unlock()
	// Every turn's context ends: Run returns, the turn is closed with
	// status aborted, open input requests are closed with reason aborted.
	r.cancel(errShutdown)

	var errs []error
	if err := waitGroup(ctx, &r.work); err != nil {
		errs = append(errs, fmt.Errorf("relay: wait for turns: %w", err))
	}

	// The sessions the relay opened; a Shutdown they emit while closing is
	// stored and sent like any event.
	convs := r.allConversations()
	for _, c := range convs {
		c.mu.Lock()
		sess, h := c.sess, c.host
		c.sess, c.host = nil, nil
		c.closeInputsLocked(nil, errShutdown)
		c.mu.Unlock()
		if sess != nil {
			if err := sess.Close(ctx); err != nil {
				r.log.Warn("relay: close agent session", "conversationId", c.id, "err", err)
			}
		}
		if h != nil {
			h.dead.Store(true)
		}
	}

	// Everything emitted so far is committed and fanned out.
	r.commit.stop()
	select {
	case <-r.commit.done:
	case <-ctx.Done():
		r.commit.cancel()
		errs = append(errs, fmt.Errorf("relay: flush history: %w", ctx.Err()))
	}

	if r.cluster != nil {
		r.stopFollowing()
		// The conversations it owned go to whichever relay needs them
		// next, without waiting for its lease to lapse.
		if err := r.cluster.Stop(ctx); err != nil {
			// Not a failed shutdown: what it could not delete lapses
			// with its lease.
			r.log.Warn("relay: could not give up its conversations and its lease; the other relays take them over when its lease lapses", "err", err)
		}
	}
	r.watch.close() // nothing changes any more
	r.budget.close()

	r.mu.Lock()
	for c := range r.conns {
		c.closeWith(websocket.StatusGoingAway, "relay shutting down", true)
	}
	r.mu.Unlock()
	if err := waitGroup(ctx, &r.connWG); err != nil {
		r.mu.Lock()
		for c := range r.conns {
			_ = c.ws.CloseNow()
		}
		r.mu.Unlock()
		errs = append(errs, fmt.Errorf("relay: close connections: %w", err))
	}
	return errors.Join(errs...)
}

func waitGroup(ctx context.Context, wg *sync.WaitGroup) error {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RequiresToken reports whether a relay listening on listenAddr must have a
// token: true unless the host is loopback (127.0.0.0/8, ::1, localhost).
func RequiresToken(listenAddr string) bool {
	host := listenAddr
	if h, _, err := net.SplitHostPort(listenAddr); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return false
	}
	if ip := net.ParseIP(host); ip != nil {
		return !ip.IsLoopback()
	}
	return true
}
