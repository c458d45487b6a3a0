package client

import (
	"cmp"
	"context"
	"slices"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// Routing: what the client remembers of each conversation it follows
// (subscription), so that the events it delivers come once each and in
// order across reconnections, and a history the relay replaced is
// replayed whole after a Reset. It is the Client's state under c.mu; the
// reading goroutine (serve) routes every event through route.

// subscription is what the client remembers of a conversation it follows.
type subscription struct {
	lastSeq int64  // the highest seq delivered
	epoch   string // from the last copilot:subscribed; "" before one
	// streaming: a turn runs, as the events delivered say (from
	// copilot:subscribed or copilot:user_message to copilot:idle).
	streaming bool
	// syncing is true between sending copilot:subscribe and receiving
	// copilot:subscribed: events are held in buf so that they can be
	// ordered, de-duplicated, or dropped if the epoch changed.
	syncing bool
	buf     []Event
	// fresh is true from a first Subscribe (from seq 0, with no epoch
	// held) until its copilot:subscribed: no copy is held that the relay
	// could replace with a reset, so its replay's events are delivered as
	// they arrive, in seq order, rather than held: a consumer folds a
	// long history while the rest of it comes, and holds one event of it
	// at a time rather than all of them.
	fresh bool
}

// route applies subscription bookkeeping to ev and delivers what should be
// delivered. It returns false when ctx ended while delivering.
func (c *Client) route(ctx context.Context, ev Event) bool {
	var out []Event
	c.id.observe(ev) // before anyone applies it

	c.mu.Lock()
	switch d := ev.Data.(type) {
	case *protocol.Subscribed:
		s := c.sub(d.ConversationID)
		if d.Reset || (s.epoch != "" && d.Epoch != s.epoch) {
			// The relay's history of this conversation is not the one we
			// held. The relay decides: given our epoch it replayed from
			// seq 0 and said so with reset, so what it replayed replaces
			// our copy, with no second round trip.
			if !d.Reset {
				c.logger().Warn("the relay's epoch changed but it did not replay from the start; the conversation may show only part of its history",
					"conversation", d.ConversationID, "old_epoch", s.epoch, "new_epoch", d.Epoch)
			}
			c.logger().Info("conversation history changed on the relay; replaying it", "conversation", d.ConversationID, "old_epoch", s.epoch, "new_epoch", d.Epoch)
			s.lastSeq = 0
			out = append(out, Event{Type: TypeReset, Data: &Reset{ConversationID: d.ConversationID, Epoch: d.Epoch}})
		}
		s.epoch = d.Epoch
		s.fresh = false
		out = append(out, s.flush()...)
		s.lastSeq = max(s.lastSeq, d.Seq)
		out = append(out, ev)
		out = append(out, c.lostSendsLocked(d)...)
	case *protocol.Error:
		if d.Type == protocol.TypeSubscribe && d.ConversationID != "" {
			if s, ok := c.subs[d.ConversationID]; ok && s.syncing {
				out = append(out, s.flush()...)
			}
		}
		out = append(out, ev)
		if d.Type == protocol.TypeSend {
			// A refusal of what this connection sent: the consumer shows
			// the error, and gets the prompt back to give to the user.
			if r := c.refusedLocked(d); r != nil {
				out = append(out, Event{Type: TypeRefused, Data: r})
			}
		}
	case protocol.Sequenced:
		h := d.EventHeader()
		if h.ConversationID == "" {
			out = append(out, ev)
			break
		}
		if um, ok := d.(*protocol.UserMessage); ok {
			c.echoedLocked(um)
		}
		if ev.Type == protocol.TypeDeleted {
			c.forgetSendsLocked(h.ConversationID, func(*unechoed) bool { return true })
			delete(c.subs, h.ConversationID)
			out = append(out, ev)
			break
		}
		s := c.sub(h.ConversationID)
		if s.syncing {
			// A first replay's next event goes on at once; anything
			// else waits for copilot:subscribed.
			if s.fresh && len(s.buf) == 0 && h.Seq == s.lastSeq+1 {
				s.lastSeq = h.Seq
				out = append(out, ev)
				break
			}
			s.buf = append(s.buf, ev)
			break
		}
		if h.Seq > 0 {
			if h.Seq <= s.lastSeq {
				c.logger().Debug("dropping an event already delivered", "conversation", h.ConversationID, "seq", h.Seq, "last", s.lastSeq)
				break
			}
			s.lastSeq = h.Seq
		}
		out = append(out, ev)
	default:
		out = append(out, ev)
	}
	out = c.arrivedLocked(out)
	for _, e := range out {
		noteStreaming(c.subs, e)
	}
	c.mu.Unlock()

	for _, e := range out {
		if !c.emit(ctx, e) {
			return false
		}
	}
	return true
}

// unechoed is a prompt sent whose copilot:user_message has not come: its
// conversation, its text, and gen, the connection on which the relay was
// last known to hold it (the one it went on, or one whose
// copilot:subscribed named it starting).
type unechoed struct {
	conv   string
	prompt string
	gen    int
	order  int // when it was sent, in the client's count of sends
}

// lostSendsLocked is what copilot:subscribed d, on the current
// connection, says of the prompts for its conversation sent on an earlier
// one whose echo has not come: the relay does not have those it does not
// name starting (TypeUnsent events, oldest first, once each); the one it
// names is held now by this connection. c.mu is held.
func (c *Client) lostSendsLocked(d *protocol.Subscribed) []Event {
	starting := ""
	if d.Starting != nil {
		starting = d.Starting.ClientID
	}
	var lost []Event
	for id, u := range c.unechoed {
		if u.conv != d.ConversationID || u.gen >= c.gen {
			continue
		}
		if id == starting {
			u.gen = c.gen
			continue
		}
		delete(c.unechoed, id)
		lost = append(lost, Event{Type: TypeUnsent, Data: &Unsent{ConversationID: u.conv, ClientID: id, Prompt: u.prompt, order: u.order}})
		if len(c.givenBack) == maxGivenBack {
			c.givenBack = c.givenBack[1:]
		}
		c.givenBack = append(c.givenBack, Unsent{ConversationID: u.conv, ClientID: id, Prompt: u.prompt})
	}
	slices.SortFunc(lost, func(a, b Event) int {
		return cmp.Compare(a.Data.(*Unsent).order, b.Data.(*Unsent).order)
	})
	if len(lost) > 0 {
		c.logger().Warn("the relay did not get prompts sent before the connection dropped; they are given back, not sent again", "conversation", d.ConversationID, "prompts", len(lost))
	}
	return lost
}

// echoedLocked records that the prompt um echoes arrived, whether the
// echo comes live, in a replay, or held until copilot:subscribed. A relay
// that echoes no clientId (an older one) is matched by the prompt's text,
// the oldest first: else every prompt would look lost after a reconnect.
// c.mu is held.
func (c *Client) echoedLocked(um *protocol.UserMessage) {
	if um.ClientID != "" {
		delete(c.unechoed, um.ClientID)
		return
	}
	oldest := ""
	for id, u := range c.unechoed {
		if u.conv == um.ConversationID && u.prompt == um.Content && (oldest == "" || u.order < c.unechoed[oldest].order) {
			oldest = id
		}
	}
	delete(c.unechoed, oldest)
}

// maxGivenBack bounds the prompts given back whose echo the client still
// watches for.
const maxGivenBack = 16

// arrivedLocked follows each echo in out of a prompt given back as lost
// with a TypeUnsent event that says it arrived after all (a relay of a
// cluster that was setting it up, which the relay this client reconnected
// to could not name starting): the consumer takes it back from the user.
// c.mu is held.
func (c *Client) arrivedLocked(out []Event) []Event {
	if len(c.givenBack) == 0 {
		return out
	}
	with := make([]Event, 0, len(out)+1)
	for _, e := range out {
		with = append(with, e)
		um, ok := e.Data.(*protocol.UserMessage)
		if !ok || um.ClientID == "" {
			continue
		}
		i := slices.IndexFunc(c.givenBack, func(g Unsent) bool { return g.ClientID == um.ClientID })
		if i < 0 {
			continue
		}
		arrived := c.givenBack[i]
		arrived.Arrived = true
		c.givenBack = slices.Delete(c.givenBack, i, i+1)
		with = append(with, Event{Type: TypeUnsent, Data: &arrived})
	}
	return with
}

// refusedLocked is the send the relay's error e refused, no longer waited
// for: the one e names by its clientId; from a relay that names none (an
// older one), the one prompt of e's conversation sent on the current
// connection whose echo has not come, if there is only one (with two, the
// refused one is not known: none is given back, and none forgotten). nil
// if there is none. c.mu is held.
func (c *Client) refusedLocked(e *protocol.Error) *Refused {
	id := e.ClientID
	if id == "" {
		for k, u := range c.unechoed {
			if u.conv != e.ConversationID || u.gen != c.gen {
				continue
			}
			if id != "" {
				return nil
			}
			id = k
		}
	}
	u, ok := c.unechoed[id]
	if !ok || u.conv != e.ConversationID {
		return nil
	}
	delete(c.unechoed, id)
	return &Refused{ConversationID: u.conv, ClientID: id, Prompt: u.prompt, Err: e}
}

// forgetSendsLocked stops waiting for the echoes of conv's prompts that
// match. c.mu is held.
func (c *Client) forgetSendsLocked(conv string, match func(*unechoed) bool) {
	for id, u := range c.unechoed {
		if u.conv == conv && match(u) {
			delete(c.unechoed, id)
		}
	}
}

// noteStreaming keeps a subscription's streaming up to date with an event
// about to be delivered. c.mu is held.
func noteStreaming(subs map[string]*subscription, ev Event) {
	var id string
	var on bool
	switch d := ev.Data.(type) {
	case *protocol.Subscribed:
		id, on = d.ConversationID, d.Streaming
	case *protocol.UserMessage:
		id, on = d.ConversationID, true
	case *protocol.Idle:
		id, on = d.ConversationID, false
	default:
		return
	}
	if s, ok := subs[id]; ok {
		s.streaming = on
	}
}

// sub returns the subscription of id, creating it (a conversation this
// connection receives events of, e.g. after copilot:send). c.mu is held.
func (c *Client) sub(id string) *subscription {
	s, ok := c.subs[id]
	if !ok {
		s = &subscription{}
		c.subs[id] = s
	}
	return s
}

// flush ends a resync: it returns the held events in seq order without the
// ones already delivered. c.mu is held.
func (s *subscription) flush() []Event {
	buf := s.buf
	s.buf = nil
	s.syncing = false
	slices.SortStableFunc(buf, func(a, b Event) int { return cmp.Compare(a.Seq(), b.Seq()) })
	out := buf[:0]
	for _, e := range buf {
		seq := e.Seq()
		if seq > 0 && seq <= s.lastSeq {
			continue
		}
		if seq > 0 {
			s.lastSeq = seq
		}
		out = append(out, e)
	}
	return out
}
