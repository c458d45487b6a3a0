package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// What a relay follows of the conversations other relays own
// (docs/scale-out.md, Following only what is watched).
//
// The live subject of a conversation (pilotdesk.live.<token>: every message
// the stream stores, as it republishes them) is subscribed to only while
// the relay asks for it (Follow: a local client watches the conversation).
// What the lists show of every conversation comes on the changes subject
// (pilotdesk.changed.<token>): its owner publishes the conversation's record
// there when a list would show something new (tellChange), and a delete
// notice. While some relay's lease says it publishes no changes (a relay of
// an older kind, during a rolling upgrade), the relay follows every live
// subject instead (the wide subscription), as older relays do.

const (
	// changeEvery bounds how stale the record of a streaming conversation
	// is on a relay that does not follow it: its updatedAt, the list's
	// sort key, and its lastSeq.
	changeEvery = 5 * time.Second
	// liveQueue is how many live and change messages may wait for the
	// relay; past it they are dropped, counted, and caught up from the
	// stream (Reconnected).
	liveQueue = 1 << 16
	// followFlush bounds the round trip that makes sure the server has a
	// new subscription's interest before the relay reads what is stored.
	followFlush = 5 * time.Second
)

// leaseValue is what a relay's key in pd_relays holds: when it was last
// renewed, and that it publishes record changes. A relay of an older kind
// writes a bare time there.
type leaseValue struct {
	At      string `json:"at"`
	Changes bool   `json:"changes"`
}

func newLeaseValue() []byte {
	b, _ := json.Marshal(leaseValue{At: time.Now().UTC().Format(time.RFC3339), Changes: true})
	return b
}

// publishesChanges reports whether a lease value is a relay's that
// publishes its conversations' record changes.
func publishesChanges(v []byte) bool {
	var l leaseValue
	return json.Unmarshal(v, &l) == nil && l.Changes
}

// follow is one followed conversation: how many asked, and its
// subscription (nil while the wide one covers it).
type follow struct {
	n   int
	sub *nats.Subscription
}

// followers is a Cluster's subscriptions to the live and changes subjects.
// Every one delivers into msgs, drained by one goroutine (deliver): the
// pending events of an append keep one owner, and a subject's messages
// stay in order.
type followers struct {
	msgs chan *nats.Msg

	mu      sync.Mutex         // guards the fields below
	follows map[string]*follow // by subject token
	wide    *nats.Subscription // pilotdesk.live.*, while some relay lacks changes
	changes *nats.Subscription // pilotdesk.changed.*
	older   map[string]bool    // the live relays whose lease says they publish no changes
	gone    int                // messages dropped by subscriptions since removed
	stopped bool
}

func (c *Cluster) changedSubject(tok string) string { return c.base + ".changed." + tok }

// ClusterStats is what a relay follows, for tests and monitoring.
type ClusterStats struct {
	// Followed is how many conversations' live subjects the relay follows.
	Followed int
	// Wide says it follows every live subject: some relay publishes no
	// changes.
	Wide bool
	// LiveMessages counts the messages of live subjects it handled.
	LiveMessages uint64
}

// Stats says what the relay follows.
func (c *Cluster) Stats() ClusterStats {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	return ClusterStats{Followed: len(c.f.follows), Wide: c.f.wide != nil, LiveMessages: c.liveMsgs.Load()}
}

// startFollowing subscribes to the changes subject and, unless every live
// relay publishes changes, to every live subject: Start calls it before it
// starts the relays' watcher, with the relays listed (relays: id to lease
// value).
func (c *Cluster) startFollowing(relays map[string][]byte) error {
	c.f.msgs = make(chan *nats.Msg, liveQueue)
	c.f.follows = map[string]*follow{}
	c.f.older = map[string]bool{}
	self := c.ID()
	for id, v := range relays {
		if id != self && !publishesChanges(v) {
			c.f.older[id] = true
		}
	}
	sub, err := c.nc.ChanSubscribe(c.changedSubject("*"), c.f.msgs)
	if err != nil {
		return fmt.Errorf("jetstream cluster: subscribe to the record changes: %w", err)
	}
	c.f.mu.Lock()
	c.f.changes = sub
	c.f.mu.Unlock()
	if len(c.f.older) > 0 {
		c.log.Info("jetstream cluster: some relays publish no record changes: following every conversation", "relays", len(c.f.older))
		if err := c.setWide(true); err != nil {
			return err
		}
	}
	if err := c.nc.Flush(); err != nil {
		return fmt.Errorf("jetstream cluster: subscribe to the record changes: %w", err)
	}
	return nil
}

// listRelays reads every relay's lease value.
func (c *Cluster) listRelays(ctx context.Context) (map[string][]byte, error) {
	entries, err := c.s.readKV(ctx, c.relays, jetstream.AllKeys)
	if err != nil {
		return nil, fmt.Errorf("jetstream cluster: list the relays: %w", err)
	}
	out := map[string][]byte{}
	for _, e := range entries {
		out[e.Key()] = e.Value()
	}
	return out, nil
}

// noteRelay notes a relay's lease value (nil: its key went away), and
// follows every live subject while some relay publishes no changes.
func (c *Cluster) noteRelay(id string, v []byte) {
	if id == c.ID() {
		return
	}
	older := v != nil && !publishesChanges(v)
	c.f.mu.Lock()
	if c.f.older[id] == older {
		c.f.mu.Unlock()
		return
	}
	if older {
		c.f.older[id] = true
	} else {
		delete(c.f.older, id)
	}
	want := len(c.f.older) > 0
	c.f.mu.Unlock()
	if err := c.setWide(want); err != nil {
		c.log.Warn("jetstream cluster: switch how the live events are followed", "wide", want, "err", err)
		return
	}
}

// setWide follows every live subject (on), or only the followed ones. The
// new subscriptions are made, and the server has their interest, before
// the old ones go: nothing falls in between; what comes twice meanwhile
// the relay drops by its seq. Then the relay catches up all the same
// (Reconnected), since a change of a conversation it does not follow may
// have been told one way and not the other.
func (c *Cluster) setWide(on bool) error {
	c.f.mu.Lock()
	if c.f.stopped || (c.f.wide != nil) == on {
		c.f.mu.Unlock()
		return nil
	}
	var drop []*nats.Subscription
	if on {
		sub, err := c.nc.ChanSubscribe(c.liveSubject("*"), c.f.msgs)
		if err != nil {
			c.f.mu.Unlock()
			return fmt.Errorf("jetstream cluster: subscribe to every live subject: %w", err)
		}
		_ = c.nc.Flush()
		c.f.wide = sub
		for _, f := range c.f.follows {
			drop = append(drop, f.sub)
			f.sub = nil
		}
	} else {
		for tok, f := range c.f.follows {
			sub, err := c.nc.ChanSubscribe(c.liveSubject(tok), c.f.msgs)
			if err != nil {
				c.f.mu.Unlock()
				return fmt.Errorf("jetstream cluster: subscribe to a live subject: %w", err)
			}
			f.sub = sub
		}
		_ = c.nc.Flush()
		drop = append(drop, c.f.wide)
		c.f.wide = nil
	}
	for _, s := range drop {
		c.f.dropSubLocked(s)
	}
	c.f.mu.Unlock()
	h := c.hooksNow()
	c.log.Info("jetstream cluster: live events followed anew", "everyConversation", on)
	if h != nil {
		h.Reconnected()
	}
	return nil
}

// dropSubLocked unsubscribes s, keeping its count of dropped messages.
func (f *followers) dropSubLocked(s *nats.Subscription) {
	if s == nil {
		return
	}
	if d, err := s.Dropped(); err == nil {
		f.gone += d
	}
	_ = s.Unsubscribe()
}

// dropped is how many live and change messages the relay's subscriptions
// dropped so far (it fell behind): a change of it is a gap to catch up.
func (c *Cluster) dropped() int {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	n := c.f.gone
	add := func(s *nats.Subscription) {
		if s != nil {
			if d, err := s.Dropped(); err == nil {
				n += d
			}
		}
	}
	add(c.f.changes)
	add(c.f.wide)
	for _, f := range c.f.follows {
		add(f.sub)
	}
	return n
}

// Follow makes the relay get a conversation's live events (Stored, with
// its record) from when it returns until the returned function is called:
// it subscribes to the live subject and waits for the server to have the
// interest, so that what the relay reads of the conversation after it
// misses nothing stored later. Several may follow one conversation at once.
func (c *Cluster) Follow(ctx context.Context, id string) (unfollow func(), err error) {
	tok := token(id)
	c.f.mu.Lock()
	if c.f.stopped || c.f.follows == nil {
		c.f.mu.Unlock()
		return func() {}, errors.New("jetstream cluster: stopped")
	}
	f := c.f.follows[tok]
	if f == nil {
		f = &follow{}
		if c.f.wide == nil {
			if f.sub, err = c.nc.ChanSubscribe(c.liveSubject(tok), c.f.msgs); err != nil {
				c.f.mu.Unlock()
				return func() {}, fmt.Errorf("jetstream cluster: follow %q: %w", id, err)
			}
		}
		c.f.follows[tok] = f
	}
	f.n++
	c.f.mu.Unlock()
	fctx, cancel := context.WithTimeout(ctx, followFlush)
	defer cancel()
	if err := c.nc.FlushWithContext(fctx); err != nil {
		// Followed all the same: the subscription comes back with the
		// connection, and the relay catches up then (Reconnected).
		c.log.Debug("jetstream cluster: follow a conversation while the connection is down", "conversationId", id, "err", err)
	}
	var once sync.Once
	return func() { once.Do(func() { c.unfollow(tok, f) }) }, nil
}

func (c *Cluster) unfollow(tok string, f *follow) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if f.n--; f.n > 0 || c.f.follows[tok] != f {
		return
	}
	delete(c.f.follows, tok)
	c.f.dropSubLocked(f.sub)
}

// covered reports whether the live subject of tok says what its changes
// say: the relay follows it, or every live subject.
func (c *Cluster) covered(tok string) bool {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	return c.f.wide != nil || c.f.follows[tok] != nil
}

func (c *Cluster) wideNow() bool {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	return c.f.wide != nil
}

// hooksNow is the relay's hooks, nil before Start and after Stop.
func (c *Cluster) hooksNow() history.ClusterHooks {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hooks
}

// deliver hands the relay every live and change message, in the order
// they came, until ctx ends (Stop). It is the one goroutine that handles
// them, so it alone owns what they build up (Cluster.pending) and runs the
// hooks of live delivery (onLive, onChanged) one at a time: nats.go only
// queues the messages on f.msgs. A message still queued when ctx ends runs
// no hook, even if select picks it.
func (c *Cluster) deliver(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-c.f.msgs:
			if ctx.Err() != nil {
				return
			}
			c.onLive(m)
		}
	}
}

// stopFollowing unsubscribes from everything: no message comes after it.
func (c *Cluster) stopFollowing() {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	c.f.stopped = true
	for tok, f := range c.f.follows {
		c.f.dropSubLocked(f.sub)
		delete(c.f.follows, tok)
	}
	c.f.dropSubLocked(c.f.wide)
	c.f.dropSubLocked(c.f.changes)
	c.f.wide, c.f.changes = nil, nil
}

// onChanged handles a message of a changes subject: a conversation's
// record, or its delete notice. A conversation whose live subject the
// relay follows learns both from there.
func (c *Cluster) onChanged(tok string, m *nats.Msg) {
	id, ok := idOfToken(tok)
	if !ok {
		return
	}
	h := c.hooksNow()
	if h == nil {
		return
	}
	if m.Header.Get(hdrDeleted) != "" {
		if c.wideNow() {
			return // told on the live subject too
		}
		c.deletedRemote(h, tok, id)
		return
	}
	if c.covered(tok) {
		return
	}
	rec, ok, err := recordOf(m.Header, m.Data)
	if err != nil || !ok || rec.ID != id {
		c.log.Warn("jetstream cluster: a bad record on a changes subject", "subject", m.Subject, "err", err)
		return
	}
	if rec.Tail > 0 {
		c.s.observe(id, rec.Tail, rec)
	}
	h.Stored(id, nil, rec.conversation())
}

// listedAs is what a list shows of a conversation's record: a change of it
// is published.
type listedAs struct {
	title, mode, model, agent, pending string
	streaming                          bool
	workspace                          history.Workspace
}

func listed(r record) listedAs {
	l := listedAs{title: r.Title, mode: r.Mode, model: r.Model, agent: r.Agent, pending: string(r.PendingInput), streaming: r.Streaming}
	if r.Workspace != nil {
		l.workspace = *r.Workspace
	}
	return l
}

// tellChange publishes, on the conversation's changes subject, the record
// of an append this store has just made, when the lists of relays that do
// not follow the conversation would show something new: a new
// conversation, a title, a mode, a model or agent, a workspace fixed,
// streaming on or off, a
// question opened or closed; and at most every changeEvery while it
// streams. A core publish: a relay that misses it repairs its list
// (Reconnected).
func (s *Store) tellChange(id string, st *convState, rec record, tail uint64) {
	prefix := s.changes.Load()
	if prefix == nil {
		return
	}
	now := time.Now()
	s.mu.Lock()
	tell := !st.toldOK || listed(st.told) != listed(rec) || (rec.Streaming && now.Sub(st.toldAt) >= changeEvery)
	if tell {
		st.told, st.toldAt, st.toldOK = rec, now, true
	}
	s.mu.Unlock()
	if !tell {
		return
	}
	rec.Tail = tail
	js, err := json.Marshal(rec)
	if err != nil {
		return
	}
	m := &nats.Msg{Subject: *prefix + token(id), Header: nats.Header{}}
	if len(js) > maxRecordHeader {
		m.Header.Set(hdrConv, "-")
		m.Data = js
	} else {
		m.Header.Set(hdrConv, string(js))
	}
	if err := s.nc.PublishMsg(m); err != nil {
		s.log.Debug("jetstream history: publish a record change (the other relays repair their lists when they reconnect)", "conversationId", id, "err", err)
	}
}

// liveToken is the token of a live subject, if m is on one.
func (c *Cluster) liveToken(subject string) (string, bool) {
	return strings.CutPrefix(subject, c.base+".live.")
}
