package jetstream

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// Presence (history.Presence): which tokens have a connection open on
// each relay, so that a relay pushes to a device only when none of its
// connections is open anywhere (docs/push.md). The KV bucket pd_presence
// holds one key per relay, its id, whose value is the set as
// {"tokens": [<SHA-256 in hex>, …]}. A relay writes it at once when the
// set changes and again at each of its lease's renewals while the set is
// not empty, each write with the lease as its TTL: the set of a relay
// that dies goes a lease later, as its lease does, and the watchers hear
// the server's delete marker (limit_marker_ttl). A relay that stops
// deletes its key. Each relay watches the bucket and keeps the others'
// sets in memory, so Present costs no round trip when an event is due.

// presence is a Cluster's part of it.
type presence struct {
	kv   jetstream.KeyValue
	wake chan struct{} // SetPresent's call to the writer; one pending at most

	mu      sync.Mutex // guards the fields below
	mine    []string   // this relay's set, hex, sorted
	dirty   bool       // mine changed since the writer last wrote it
	written string     // the id whose key the writer last wrote, "" none
	others  map[string]map[[sha256.Size]byte]bool
}

type presenceValue struct {
	Tokens []string `json:"tokens"`
}

func (c *Cluster) presenceBucket() string {
	return "pd_presence" + c.suffix()
}

var _ history.Presence = (*Cluster)(nil)

// SetPresent keeps the set of tokens with a connection open on this
// relay, which the writer tells the others (history.Presence). It does
// not wait.
func (c *Cluster) SetPresent(tokens [][sha256.Size]byte) {
	set := make([]string, 0, len(tokens))
	for _, t := range tokens {
		set = append(set, hex.EncodeToString(t[:]))
	}
	slices.Sort(set)
	c.pres.mu.Lock()
	c.pres.mine, c.pres.dirty = set, true
	c.pres.mu.Unlock()
	select {
	case c.pres.wake <- struct{}{}:
	default: // a write is due already, and takes this set
	}
}

// Present returns the tokens with a connection open on the other relays,
// as the watch of the bucket last told (history.Presence).
func (c *Cluster) Present() map[[sha256.Size]byte]bool {
	self := c.ID()
	c.pres.mu.Lock()
	defer c.pres.mu.Unlock()
	out := map[[sha256.Size]byte]bool{}
	for id, set := range c.pres.others {
		if id == self {
			continue
		}
		for t := range set {
			out[t] = true
		}
	}
	return out
}

// writePresence writes this relay's set when it changes, and every
// renewal while it is not empty, until ctx ends. A write that fails is
// made again at the next renewal; the log says so at most once a minute.
func (c *Cluster) writePresence(ctx context.Context) {
	tick := time.NewTicker(c.every)
	defer tick.Stop()
	var warned time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.pres.wake:
		case <-tick.C:
		}
		c.pres.mu.Lock()
		set, dirty := c.pres.mine, c.pres.dirty
		c.pres.dirty = false
		c.pres.mu.Unlock()
		if !dirty && len(set) == 0 {
			continue // nothing to renew: an empty set is no key, or one left to lapse
		}
		id := c.ID()
		data, err := json.Marshal(presenceValue{Tokens: set})
		if err == nil {
			wctx, cancel := context.WithTimeout(ctx, min(c.every, c.lease/2))
			_, err = c.s.js.PublishMsg(wctx, &nats.Msg{Subject: "$KV." + c.presenceBucket() + "." + id, Data: data},
				jetstream.WithMsgTTL(c.lease))
			cancel()
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			c.pres.mu.Lock()
			if !c.pres.dirty {
				c.pres.dirty = true // this set again, unless a newer one came
			}
			c.pres.mu.Unlock()
			if time.Since(warned) >= time.Minute {
				warned = time.Now()
				c.log.Warn("jetstream cluster: could not tell the other relays which devices are connected here; they may push to them (retrying)", "err", err)
			}
			continue
		}
		c.pres.mu.Lock()
		c.pres.written = id
		c.pres.mu.Unlock()
	}
}

// watchPresence keeps the other relays' sets as the watch of the bucket
// tells them. A watch set up again after it stopped delivers every key
// anew: what was known is dropped first, so that a set deleted in the gap
// goes.
func (c *Cluster) watchPresence(ctx context.Context, sw *standingWatch) {
	sw.follow(ctx, func(e jetstream.KeyValueEntry) {
		if e == nil {
			return // the initial values are all in
		}
		c.pres.mu.Lock()
		defer c.pres.mu.Unlock()
		if e.Operation() != jetstream.KeyValuePut {
			delete(c.pres.others, e.Key())
			return
		}
		var v presenceValue
		if err := json.Unmarshal(e.Value(), &v); err != nil {
			c.log.Warn("jetstream cluster: a relay's presence is not readable", "relay", e.Key(), "err", err)
			delete(c.pres.others, e.Key())
			return
		}
		set := make(map[[sha256.Size]byte]bool, len(v.Tokens))
		for _, h := range v.Tokens {
			var t [sha256.Size]byte
			if b, err := hex.DecodeString(h); err == nil && len(b) == sha256.Size {
				copy(t[:], b)
				set[t] = true
			}
		}
		c.pres.others[e.Key()] = set
	}, func() {
		c.pres.mu.Lock()
		clear(c.pres.others)
		c.pres.mu.Unlock()
	})
}

// dropPresence deletes this relay's key, if it wrote one, as it stops.
func (c *Cluster) dropPresence(ctx context.Context) {
	c.pres.mu.Lock()
	id := c.pres.written
	c.pres.written = ""
	c.pres.mu.Unlock()
	if id == "" {
		return
	}
	if err := c.pres.kv.Delete(ctx, id); err != nil {
		c.log.Debug("jetstream cluster: delete this relay's presence (it lapses with the lease)", "relay", id, "err", err)
	}
}
