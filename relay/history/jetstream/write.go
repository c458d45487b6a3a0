package jetstream

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// maxBatch is the most messages one atomic batch may hold: the server's
// default jetstream.limits.batch.max_batch_size. A longer append (over
// a thousand events of one conversation in one Write, which the relay's
// committer never makes) is sent as several batches.
const maxBatch = 1000

// packLimit bounds a pack's body: a typical delta is 150 bytes, so a
// pack holds hundreds, and a replay that stops early has read little.
const packLimit = 64 << 10

// Headers of JetStream's atomic batch publish (server 2.12, ADR-50).
const (
	hdrBatchID     = "Nats-Batch-Id"
	hdrBatchSeq    = "Nats-Batch-Sequence"
	hdrBatchCommit = "Nats-Batch-Commit"
)

// The JetStream API error codes an append can meet.
const (
	codeWrongLastSeq         jetstream.ErrorCode = 10071 // the subject moved on: a conflict
	codeWrongLastSeqInFlight jetstream.ErrorCode = 10164 // another conditional write of the subject is being proposed
	codeNotLeader            jetstream.ErrorCode = 10009
	codeInsufficientRes      jetstream.ErrorCode = 10023
	codeBatchIncomplete      jetstream.ErrorCode = 10176 // the batch was dropped (a leader change mid-batch)
	codeBatchTooManyInflight jetstream.ErrorCode = 10210
)

// convWrite is one conversation's part of a Write.
type convWrite struct {
	id     string
	sh     *shard // the stream it is in
	subj   string
	events []history.Event
	meta   *history.Conversation // nil: the events alone, the metadata stays
	st     *convState
	v      view // the conversation before the write
}

// Write validates the whole batch before it appends anything, so a bad
// batch (an unknown conversation, a repeated seq) writes nothing. Then it
// appends each conversation's part as one fenced append, the conversations
// together (their first attempts sent at once, the acks collected by the
// caller: acks.go); a conversation that fails (a conflict, the cluster gone
// for longer than WriteTimeout) is named in a *history.PartialWriteError,
// and the others are stored.
func (s *Store) Write(ctx context.Context, b history.Batch) error {
	if len(b.Events) == 0 && len(b.Conversations) == 0 {
		return s.writeSpend(ctx, b.Spend, false)
	}
	ws, err := s.parts(b)
	if err != nil {
		return err
	}
	for _, w := range ws {
		w.st.write.Lock()
	}
	defer func() {
		for _, w := range ws {
			w.st.write.Unlock()
		}
	}()

	// Validate. An error reading a conversation's state fails that
	// conversation only; a bad batch fails the batch.
	failed := map[string]error{}
	var failedMu sync.Mutex
	var invalid []error
	check := func(i int) {
		w := ws[i]
		err := s.prepare(ctx, w)
		if err == nil {
			return
		}
		failedMu.Lock()
		defer failedMu.Unlock()
		if errors.Is(err, errInvalid) {
			invalid = append(invalid, err)
		} else {
			failed[w.id] = err
		}
	}
	// A conversation whose state the store knows (it wrote it last) is
	// checked without a read: here, not in a goroutine of its own, which
	// each group commit paid for every conversation in it (issue #32).
	// Those it must read go in parallel.
	var reads []int
	for i, w := range ws {
		if s.knownSure(w.st) {
			check(i)
		} else {
			reads = append(reads, i)
		}
	}
	s.each(len(reads), func(j int) { check(reads[j]) })
	if len(invalid) > 0 {
		return errors.Join(invalid...)
	}
	// The lease this relay held when the write began: an append goes out
	// only while that very lease surely holds (mayAppend).
	epoch := s.leaseEpoch()
	// Plan each conversation's append, make every first attempt at once
	// and collect their acks here (acks.go), then finish what those did
	// not: the rest of a long append, or the retries, in parallel.
	var jobs []*commitJob
	for _, w := range ws {
		if _, ok := failed[w.id]; ok {
			continue
		}
		units, err := s.plan(w)
		if err != nil {
			failed[w.id] = err
			continue
		}
		jobs = append(jobs, &commitJob{w: w, units: units})
	}
	s.firstAttempts(ctx, jobs, epoch)
	var rest []*commitJob
	for _, j := range jobs {
		if !j.settled() {
			rest = append(rest, j)
		} else if err := s.commit(ctx, j, epoch); err != nil {
			failed[j.w.id] = err // a lost ack (Options.LoseAck)
		}
	}
	s.each(len(rest), func(i int) {
		j := rest[i]
		if err := s.commit(ctx, j, epoch); err != nil {
			failedMu.Lock()
			failed[j.w.id] = err
			failedMu.Unlock()
		}
	})
	if len(failed) > 0 {
		return &history.PartialWriteError{Failed: failed}
	}
	// Only once every conversation is stored: a failed Write stores no
	// spend (spend.go).
	return s.writeSpend(ctx, b.Spend, true)
}

// parts is the batch b by conversation, each part with its events and
// its last listing entry, in the order their locks are taken: by id, so
// that two Writes that share conversations cannot each hold one the other
// waits for.
func (s *Store) parts(b history.Batch) ([]*convWrite, error) {
	byID := map[string]*convWrite{}
	part := func(id string) (*convWrite, error) {
		w := byID[id]
		if w == nil {
			st, err := s.state(id)
			if err != nil {
				return nil, err
			}
			sh := s.shardOf(id)
			w = &convWrite{id: id, sh: sh, subj: sh.subjectOf(id), st: st}
			byID[id] = w
		}
		return w, nil
	}
	for _, e := range b.Events {
		w, err := part(e.ConversationID)
		if err != nil {
			return nil, err
		}
		w.events = append(w.events, e)
	}
	for i := range b.Conversations {
		w, err := part(b.Conversations[i].ID)
		if err != nil {
			return nil, err
		}
		w.meta = &b.Conversations[i] // the last one of an id wins
	}
	ws := make([]*convWrite, 0, len(byID))
	for _, w := range byID {
		ws = append(ws, w)
	}
	slices.SortFunc(ws, func(a, b *convWrite) int { return cmp.Compare(a.id, b.id) })
	return ws, nil
}

// errInvalid marks the errors of a bad batch.
var errInvalid = errors.New("invalid batch")

type invalidError struct{ msg string }

func (e *invalidError) Error() string        { return e.msg }
func (e *invalidError) Is(target error) bool { return target == errInvalid }

func invalidf(format string, args ...any) error {
	return &invalidError{msg: fmt.Sprintf(format, args...)}
}

// notFoundError is an event of a conversation neither stored nor in the
// batch: invalid, and history.ErrNotFound.
type notFoundError struct{ msg string }

func (e *notFoundError) Error() string { return e.msg }
func (e *notFoundError) Is(target error) bool {
	return target == errInvalid || target == history.ErrNotFound
}

// each runs fn for 0..n-1, at most MaxInflight at once, and returns when
// all have. The caller runs the last one itself instead of starting a
// goroutine for it and parking until the others end: each group commit of
// a relay whose conversations are few (its share of a cluster's) paid a
// goroutine and a wake-up more per Write for it (issue #32).
func (s *Store) each(n int, fn func(i int)) {
	switch n {
	case 0:
		return
	case 1:
		fn(0)
		return
	}
	var wg sync.WaitGroup
	for i := range n - 1 {
		s.inflight <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-s.inflight; wg.Done() }()
			fn(i)
		}()
	}
	s.inflight <- struct{}{}
	fn(n - 1)
	<-s.inflight
	wg.Wait()
}

// prepare reads the conversation's state (taking back a failed append
// first) and checks its part of the batch.
func (s *Store) prepare(ctx context.Context, w *convWrite) error {
	v, err := s.load(ctx, w.id, w.st)
	if err != nil {
		return err
	}
	if v.unsure != nil {
		if v, err = s.resolve(ctx, w.id, w.st, v.unsure); err != nil {
			return err
		}
	}
	w.v = v
	if len(w.events) == 0 {
		return nil
	}
	if !v.exists && w.meta == nil {
		return &notFoundError{msg: fmt.Sprintf("history: write event %d of conversation %q: %v", w.events[0].Seq, w.id, history.ErrNotFound)}
	}
	seen := make(map[int64]struct{}, len(w.events))
	var stored map[int64]struct{}
	for _, e := range w.events {
		if _, dup := seen[e.Seq]; dup {
			return invalidf("history: write event %d of conversation %q: the seq is repeated in the batch", e.Seq, w.id)
		}
		seen[e.Seq] = struct{}{}
		if !v.exists || e.Seq > v.rec.Max {
			continue // the usual case: past every stored seq
		}
		if stored == nil {
			if stored, err = s.storedSeqs(ctx, w.sh.stream, w.subj, v.tail); err != nil {
				return fmt.Errorf("check the seqs of %q: %w", w.id, err)
			}
		}
		if _, dup := stored[e.Seq]; dup {
			// Another writer stored it (a stale relay's append that landed
			// after this one read the conversation), or an unsure append
			// of this writer's did: the history moved on under this
			// writer. That is this conversation's conflict, as at the
			// fence, not a bad batch: the relay takes what is stored, and
			// the batch's other conversations are written.
			return fmt.Errorf("history: write event %d of conversation %q: the seq is already stored: %w", e.Seq, w.id, history.ErrConflict)
		}
	}
	return nil
}

// commit appends the conversation's part, planned in j.units, from the
// outcome of its first attempt if firstAttempts made it, and records the
// new state.
func (s *Store) commit(ctx context.Context, j *commitJob, epoch uint64) error {
	w, units := j.w, j.units
	deadline := j.deadline
	if j.first == nil {
		deadline = time.Now().Add(s.opts.WriteTimeout)
	}
	tail := w.v.tail
	for i, u := range units {
		var first *firstTry
		if i == 0 {
			first = j.first
		}
		ack, uncertain, err := s.appendUnit(ctx, w, u, tail, deadline, epoch, first)
		if err != nil {
			if errors.Is(err, history.ErrConflict) {
				s.forget(w.st)
			}
			if uncertain || i > 0 {
				// Some of the append may be stored: the next write
				// finds out first (resolve).
				s.mu.Lock()
				w.st.unsure = &undo{before: w.v.tail, append: strings.TrimSuffix(u.append, strconv.Itoa(i+1))}
				s.mu.Unlock()
			}
			return err
		}
		tail, u.ack = ack, ack
	}
	last := units[len(units)-1]
	s.mu.Lock()
	w.st.known, w.st.exists, w.st.tail, w.st.rec, w.st.unsure = true, true, tail, last.rec, nil
	if !last.rec.Unsorted {
		// A batch's messages have consecutive stream seqs.
		noted := s.lastPosLocked(w.st)
		for _, u := range units {
			for _, p := range u.events {
				if p.seq >= noted+posEvery {
					noted = p.seq
					s.notePosLocked(w.st, position{p.seq, u.ack - uint64(len(u.msgs)-1) + p.stream})
				}
			}
		}
	}
	s.mu.Unlock()
	s.kvDirty(w.id)
	s.tellChange(w.id, w.st, last.rec, tail)
	return nil
}

// appendUnit sends one unit with the expectation that the subject's last
// message is expect, until it is stored, refused for good, or deadline.
// uncertain says a failed unit may have been stored all the same (an
// attempt's ack never came). first, if not nil, is the outcome of the
// first attempt, made already (firstAttempts).
func (s *Store) appendUnit(ctx context.Context, w *convWrite, u *unit, expect uint64, deadline time.Time, epoch uint64, first *firstTry) (ack uint64, uncertain bool, err error) {
	wait := 20 * time.Millisecond
	for attempt := 1; ; attempt++ {
		// Every attempt, right before it goes out: a relay paused (or cut
		// off) past its lease must not append what it had queued, since
		// another relay may have read the stream to take the conversation
		// over and be about to append its own closing events.
		var lerr error
		if attempt == 1 && first != nil {
			lerr, ack, err = first.refused, first.ack, first.err
		} else if lerr = s.mayAppend(epoch); lerr == nil {
			ack, err = s.send(ctx, u, expect)
		}
		if lerr != nil {
			return 0, uncertain, fmt.Errorf("jetstream history: append to %q: %w", w.id, lerr)
		}
		if err == nil {
			if s.opts.LoseAck != nil && s.opts.LoseAck(w.id) {
				uncertain, err = true, fmt.Errorf("jetstream history: append to %q: the ack was lost (test)", w.id)
				return 0, uncertain, err
			}
			return ack, false, nil
		}
		var apiErr *jetstream.APIError
		isAPI := errors.As(err, &apiErr)
		pause := wait
		switch {
		case isAPI && apiErr.ErrorCode == codeWrongLastSeq:
			// Refused because the subject moved on: by this very append,
			// if an earlier attempt was stored but its ack was lost, or by
			// another writer.
			v, terr := s.readTail(ctx, w.id)
			if terr == nil && v.exists && v.rec.Append == u.append {
				return v.tail, false, nil
			}
			if terr == nil && v.exists && v.tail <= expect {
				// The subject's last message, read from the stream's
				// leader, is the one this writer expected, or one before
				// it: nothing came after it, and no writer moves a
				// subject back, so the refusal came from a node whose
				// view is behind. A stream leader cut off the network
				// answers so for a moment after the partition heals, with
				// the subject's last as it was at the cut (make chaos's
				// node-partition, seeds 402 and 408: stream seq 2805 for
				// 7575, 4051 for 8165, for under a second; the relay took
				// its own running turns for another relay's and closed
				// them "relay lost"). Not a conflict: ask again in a
				// moment, as in an election. (A deleted conversation has
				// no tail: that one is a conflict, below.)
				err = fmt.Errorf("%w; the subject's tail reads stream seq %d, the writer expected %d", err, v.tail, expect)
				break
			}
			if terr == nil {
				return 0, uncertain, fmt.Errorf("jetstream history: append to %q after stream seq %d: %w (%v)", w.id, expect, history.ErrConflict, err)
			}
			err = fmt.Errorf("%w; then reading the subject's tail: %v", err, terr)
		case isAPI && apiErr.ErrorCode == codeWrongLastSeqInFlight:
			// The server still has a conditional write of the subject in
			// process: on a cluster it acks before it clears that mark,
			// so this comes even to a writer that waits for every ack.
			// Not a conflict: ask again in a moment.
			pause = 2 * time.Millisecond
		case isAPI && slices.Contains([]jetstream.ErrorCode{codeNotLeader, codeInsufficientRes, codeBatchIncomplete, codeBatchTooManyInflight}, apiErr.ErrorCode),
			isAPI && apiErr.Code == 503:
			// Passes: a leader election, a full inflight table.
		case isAPI:
			return 0, uncertain, fmt.Errorf("jetstream history: append to %q: %w", w.id, err)
		case errors.Is(err, nats.ErrNoResponders):
			// Nobody took it: the stream has no leader at the moment.
		case errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, nats.ErrBadSubscription):
			return 0, uncertain, fmt.Errorf("jetstream history: append to %q: %w", w.id, err)
		default:
			// No answer in time, or the connection is reconnecting: the
			// append may have been stored.
			uncertain = true
		}
		if ctx.Err() != nil || time.Now().Add(pause).After(deadline) {
			return 0, uncertain, fmt.Errorf("jetstream history: append to %q: gave up after %d attempts: %w", w.id, attempt, err)
		}
		if attempt == 1 || attempt%20 == 0 {
			s.log.Debug("jetstream history: retrying an append", "conversationId", w.id, "attempt", attempt, "err", err)
		}
		select {
		case <-ctx.Done():
			return 0, uncertain, fmt.Errorf("jetstream history: append to %q: %w", w.id, ctx.Err())
		case <-time.After(pause):
		}
		if pause == wait {
			wait = min(2*wait, 500*time.Millisecond)
		}
	}
}

// attemptTimeout bounds one attempt of an append: short, so that an append
// sent to a leader that just died is sent again soon after the election,
// and longer for a big unit.
func attemptTimeout(bytes int) time.Duration {
	return 2*time.Second + time.Duration(bytes/(32<<20))*time.Second
}

// send makes one attempt at a unit: a single message as a fenced publish,
// more as an atomic batch whose first message is fenced. It returns the
// stream seq of the unit's last message.
func (s *Store) send(ctx context.Context, u *unit, expect uint64) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, attemptTimeout(u.bytes))
	defer cancel()
	last, err := s.startAttempt(u, expect)
	if err != nil {
		return 0, err
	}
	reply, err := s.nc.RequestMsgWithContext(ctx, &nats.Msg{Subject: last.Subject, Header: last.Header, Data: last.Data})
	if err != nil {
		return 0, err
	}
	return parseAck(reply)
}

// startAttempt readies an attempt at a unit: the expectation on its first
// message, and for a batch the batch's headers, every message but the last
// published. The caller sends the last, whose reply is the ack.
func (s *Store) startAttempt(u *unit, expect uint64) (*nats.Msg, error) {
	u.msgs[0].Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(expect, 10))
	last := u.msgs[len(u.msgs)-1]
	if len(u.msgs) > 1 {
		// A new id each attempt: the server drops a batch it could not
		// finish, and a late piece of an old attempt must not join a new one.
		id := nuid.Next()
		for i, m := range u.msgs {
			m.Header.Set(hdrBatchID, id)
			m.Header.Set(hdrBatchSeq, strconv.Itoa(i+1))
			if m == last {
				m.Header.Set(hdrBatchCommit, "1")
				break
			}
			if err := s.nc.PublishMsg(m); err != nil {
				return nil, err
			}
		}
	}
	return last, nil
}

// undo is an append whose outcome is unsure (convState.unsure): it
// expected the subject's last message to be stream seq before.
type undo struct {
	before uint64
	append string // the Append of its records, less the unit number
}

// errUnsureStored is the conflict of a conversation whose failed append was
// stored after all, or which another writer appended to since.
var errUnsureStored = errors.New("the subject holds more than the writer knew")

// resolve finds out, by reading the subject's last message through the
// leader, whether an append whose Write failed was stored. It deletes
// nothing: what is stored may have been republished and delivered. If the
// subject's last message is still the one the append expected, the append
// was not stored (a later attempt of it could not be either: it is fenced
// on that message) and the write goes on after it. If anything came after
// it (the failed append, whole or in part, or another writer's appends),
// the conversation's state becomes what the stream holds and the write
// fails with history.ErrConflict: the writer's seqs after its last stored
// event are not free, and it must take the stream's history (the relay
// lets the conversation go and catches up, as after a takeover). If the
// subject cannot be read, the append stays unsure and the write fails.
func (s *Store) resolve(ctx context.Context, id string, st *convState, u *undo) (view, error) {
	v, err := s.readTail(ctx, id)
	if err != nil {
		return view{}, fmt.Errorf("find out whether a failed append to %q was stored: %w", id, err)
	}
	s.mu.Lock()
	st.known, st.exists, st.tail, st.rec, st.unsure = true, v.exists, v.tail, v.rec, nil
	s.mu.Unlock()
	if v.tail == u.before {
		return v, nil
	}
	ours := v.exists && strings.HasPrefix(v.rec.Append, u.append)
	s.log.Warn("jetstream history: an append whose Write failed was stored after all, or the conversation moved on: the writer takes what the stream holds",
		"conversationId", id, "expected", u.before, "tail", v.tail, "lastSeq", v.rec.Max, "itsOwn", ours)
	if ours {
		return view{}, fmt.Errorf("jetstream history: append to %q: %w (%w: %w: stream seq %d, seq %d)",
			id, history.ErrConflict, errUnsureStored, history.ErrOwnAppendStored, v.tail, v.rec.Max)
	}
	return view{}, fmt.Errorf("jetstream history: append to %q: %w (%w: stream seq %d, seq %d, another writer's)",
		id, history.ErrConflict, errUnsureStored, v.tail, v.rec.Max)
}
