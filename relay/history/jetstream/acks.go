package jetstream

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A Write's appends go out together, and their acks are awaited by the
// writing goroutine alone (issue #32). Before, each conversation of a
// commit had a goroutine of its own (each), which made a request
// (nats.Conn.RequestMsgWithContext) and parked until its ack: per append,
// a goroutine started, the connection's lock taken by as many appenders
// and by its reply handler at once, a flusher kick, and each ack handed
// from the connection's reader to the reply handler's goroutine and from
// it to the appender's. Now the Write publishes the first attempt of
// every conversation's append (their first unit) with a reply subject of
// the store's one ack inbox (a channel subscription), and reads the
// acks from it: one goroutine, and each ack handed once, from the
// reader to the writer.
//
// Only the first attempt goes so. An append whose first attempt is not
// acknowledged (an error, no ack in time), or which has more than one
// unit, goes on in appendUnit as before, in parallel (each), from that
// outcome: the same errors are retried, the same are conflicts, an ack
// that never came leaves the append unsure and resolved by reading the
// stream. What the first attempt checks first is the same too: the lease
// (mayAppend), right before the unit goes out. jetstream.PublishMsgAsync
// was not used: it retries a publish that found no responders by itself,
// from its reply handler, where the lease is not checked (an append must
// not go out once the relay was stalled past its lease), and hands every
// ack to that handler's goroutine first, as a request does.

// ackInbox is a store's subscription for the acks of first attempts. One
// Write uses it at a time; a Write that finds it in use (another Write of
// the same store at once: the committer makes one at a time) makes its
// appends' requests as before.
//
// The acks come on a channel of its own (nats.Conn.ChanSubscribe), not a
// synchronous subscription, whose NextMsg answers a no-responders status
// with nats.ErrNoResponders and drops the message, so that which append it
// was for is lost.
type ackInbox struct {
	mu     sync.Mutex
	sub    *nats.Subscription // nil until the first Write needs it
	ch     chan *nats.Msg     // its messages
	prefix string             // the inbox and a dot: a reply subject is prefix + a token
	next   uint64             // the last token handed out
	closed bool               // the store is closed: no subscription any more
	// connClosed gets the connection's CLOSED, registered with sub: a
	// closed connection leaves ch open and silent (nats.go closes only a
	// synchronous subscription's), so without it an attempt learned of
	// it only when its ack was given up, 2 s on.
	connClosed chan nats.Status
}

// firstTry is the outcome of an append's first attempt, made for the
// whole Write by firstAttempts.
type firstTry struct {
	ack     uint64 // the stream seq of the unit's last message
	err     error  // the attempt's error, as send returns it
	refused error  // mayAppend's: the attempt did not go out
}

// commitJob is one conversation's append in a Write.
type commitJob struct {
	w        *convWrite
	units    []*unit
	deadline time.Time // WriteTimeout after the first attempt
	first    *firstTry // nil: firstAttempts did not make it
	until    time.Time // when its first attempt is given up
}

// settled says the append was stored in one unit by its first attempt:
// committing it takes no more round trip.
func (j *commitJob) settled() bool {
	return j.first != nil && j.first.refused == nil && j.first.err == nil && len(j.units) == 1
}

// firstAttempts makes the first attempt of each job's first unit, all of
// them before it waits for an ack, at most MaxInflight at once, and notes
// each outcome in job.first. It does nothing (the jobs make their first
// attempts as requests) when another Write is using the ack inbox, or it
// cannot be subscribed.
func (s *Store) firstAttempts(ctx context.Context, jobs []*commitJob, epoch uint64) {
	a := &s.acks
	if len(jobs) == 0 || !a.mu.TryLock() {
		return
	}
	defer a.mu.Unlock()
	if a.sub != nil && !a.sub.IsValid() {
		// Unsubscribed under it (the server refused it, say, or the
		// connection closed): no ack would come. Subscribed again below.
		a.unsubscribe(s.nc)
	}
	if a.sub == nil {
		if a.closed {
			return
		}
		// Room for a wave's acks and the late ones of attempts given up
		// on in the wave before (each wave drains those first); were it
		// full, an ack would be dropped, and its append retried as one
		// whose ack was lost.
		ch := make(chan *nats.Msg, 4*cap(s.inflight))
		prefix := s.nc.NewInbox() + "."
		// Before the subscription: a close after it is heard.
		closed := s.nc.StatusChanged(nats.CLOSED)
		sub, err := s.nc.ChanSubscribe(prefix+"*", ch)
		if err != nil {
			// A closed connection: the appends' requests say so.
			s.nc.RemoveStatusListener(closed)
			s.log.Debug("jetstream history: no ack inbox: each append waits for its ack on its own", "err", err)
			return
		}
		a.sub, a.ch, a.prefix, a.connClosed = sub, ch, prefix, closed
	}
	for start := 0; start < len(jobs); start += cap(s.inflight) {
		s.attemptWave(ctx, jobs[start:min(len(jobs), start+cap(s.inflight))], epoch)
	}
}

// attemptWave sends the first attempts of jobs (no more than MaxInflight)
// and collects their acks. Each holds an inflight slot until its outcome
// is known, as a request of its own would.
func (s *Store) attemptWave(ctx context.Context, jobs []*commitJob, epoch uint64) {
	a := &s.acks
	taken := 0
	defer func() {
		for range taken {
			<-s.inflight
		}
	}()
	// Late acks of attempts given up on before: no append waits for them.
	for len(a.ch) > 0 {
		<-a.ch
	}
	waiting := make(map[string]*commitJob, len(jobs))
	for _, j := range jobs {
		s.inflight <- struct{}{}
		taken++
		j.deadline = time.Now().Add(s.opts.WriteTimeout)
		if lerr := s.mayAppend(epoch); lerr != nil {
			j.first = &firstTry{refused: lerr}
			continue
		}
		u := j.units[0]
		j.first = &firstTry{}
		j.until = time.Now().Add(attemptTimeout(u.bytes))
		last, err := s.startAttempt(u, j.w.v.tail)
		if err == nil {
			a.next++
			token := strconv.FormatUint(a.next, 36)
			err = s.nc.PublishMsg(&nats.Msg{Subject: last.Subject, Reply: a.prefix + token, Header: last.Header, Data: last.Data})
			if err == nil {
				waiting[token] = j
				continue
			}
		}
		j.first.err = err
	}
	// The acks, in whatever order they come, until the earliest time an
	// attempt is given up (the same for all but a big unit's), then the
	// next.
	for len(waiting) > 0 {
		var until time.Time
		for _, j := range waiting {
			if until.IsZero() || j.until.Before(until) {
				until = j.until
			}
		}
		s.collectAcks(ctx, waiting, until)
	}
}

// collectAcks notes the outcome of each attempt in waiting whose ack comes
// before until (and takes it out), and at until that of each attempt given
// up by then. It returns at until, or when waiting is empty.
func (s *Store) collectAcks(ctx context.Context, waiting map[string]*commitJob, until time.Time) {
	a := &s.acks
	timer := time.NewTimer(time.Until(until))
	defer timer.Stop()
	for len(waiting) > 0 {
		select {
		case m := <-a.ch:
			token, ok := strings.CutPrefix(m.Subject, a.prefix)
			j := waiting[token]
			if !ok || j == nil {
				continue // the ack of an attempt given up on before
			}
			delete(waiting, token)
			j.first.ack, j.first.err = parseAck(m)
		case <-ctx.Done():
			// The Write's context ended: every attempt fails so, as its
			// request would have.
			for token, j := range waiting {
				j.first.err = ctx.Err()
				delete(waiting, token)
			}
		case <-a.connClosed:
			// No ack will come: every attempt fails at once, as a request
			// does when the connection closes under it.
			for token, j := range waiting {
				j.first.err = nats.ErrConnectionClosed
				delete(waiting, token)
			}
			return
		case <-timer.C:
			// No ack in time: as a request's context says then, or, if
			// the connection was closed meanwhile, as a request says of
			// that (its reply channel closed).
			why := context.DeadlineExceeded
			if s.nc.IsClosed() {
				why = nats.ErrConnectionClosed
			}
			now := time.Now()
			for token, j := range waiting {
				if !j.until.After(now) || why == nats.ErrConnectionClosed {
					j.first.err = why
					delete(waiting, token)
				}
			}
			return
		}
	}
}

// closeAcks ends the store's ack inbox (Close): the store does not own the
// connection, which goes on without it.
func (s *Store) closeAcks() {
	s.acks.mu.Lock()
	defer s.acks.mu.Unlock()
	s.acks.closed = true
	if s.acks.sub != nil {
		s.acks.unsubscribe(s.nc)
	}
}

// unsubscribe ends the inbox's subscription and its listener for the
// connection's close; a's lock is held.
func (a *ackInbox) unsubscribe(nc *nats.Conn) {
	_ = a.sub.Unsubscribe()
	a.sub = nil
	if a.connClosed != nil {
		nc.RemoveStatusListener(a.connClosed)
		a.connClosed = nil
	}
}

// parseAck reads an append's ack: the stream seq of the message it
// acknowledges, or the error the server answered with.
func parseAck(reply *nats.Msg) (uint64, error) {
	// nats.go's status header and no-responders code, which it does not export.
	if len(reply.Data) == 0 && reply.Header.Get("Status") == "503" {
		// Nobody took the request: the stream has no leader at the
		// moment (a request returns nats.ErrNoResponders so).
		return 0, nats.ErrNoResponders
	}
	var resp struct {
		Error *jetstream.APIError `json:"error"`
		Seq   uint64              `json:"seq"`
	}
	if err := json.Unmarshal(reply.Data, &resp); err != nil {
		return 0, fmt.Errorf("a bad ack %q: %w", reply.Data, err)
	}
	if resp.Error != nil {
		return 0, resp.Error
	}
	if resp.Seq == 0 {
		return 0, fmt.Errorf("an ack with no seq: %q", reply.Data)
	}
	return resp.Seq, nil
}
