package jetstream

// Planning an append: a conversation's part of a Write becomes the units
// it is sent as, packs of small events and atomic batches of big ones.
// write.go sends them.

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// unit is one atomic batch of an append.
type unit struct {
	msgs   []*nats.Msg
	events []position // the events it starts: seq, and the index of the message
	ack    uint64     // the stream seq of its last message, once stored
	append string     // the Append of the record its last message carries
	rec    record
	bytes  int
}

// plan turns a conversation's part of the batch into the units of its
// append: the events' messages (a frame bigger than a message split in
// pieces), and the record on the last message of each unit.
func (s *Store) plan(w *convWrite) ([]*unit, error) {
	prev := w.v.rec
	p := &planner{
		w:        w,
		chunk:    s.chunk,
		final:    prev,
		appendID: s.writer + "." + strconv.FormatUint(s.appends.Add(1), 10) + "/",
		msgs:     prev.Msgs, mx: prev.Max, unsorted: prev.Unsorted,
		cur: &unit{},
	}
	if w.meta != nil {
		p.final = prev.withConversation(*w.meta)
	}
	for _, e := range w.events {
		if err := p.add(e); err != nil {
			return nil, err
		}
	}
	p.closePack()
	if err := p.seal(true); err != nil {
		return nil, err
	}
	return p.units, nil
}

// planner is the state of one plan: the units sealed so far, the one being
// filled, and the pack of small events being filled in it.
//
// Small events are packed, in order, into messages of up to packLimit
// bytes: one message for a typical write of a few deltas, so the append is
// a plain fenced publish, one store operation (on a single node an atomic
// batch costs a staging store and fsyncs of its own: 3.7 ms against
// 0.26 ms for one message, measured). An event bigger than a pack gets
// messages of its own, split if need be; an append of several messages is
// an atomic batch.
type planner struct {
	w        *convWrite
	chunk    int    // the store's largest message
	final    record // the record after the whole append
	appendID string // the Append of its records, less the unit's number

	units    []*unit
	cur      *unit
	msgs     uint64 // the conversation's messages before cur's
	mx       int64  // the largest seq so far
	unsorted bool

	pack       *nats.Msg // the pack being filled, nil if none
	packEvents int
	packMax    int64
}

// add plans one event: into the pack, or messages of its own; first
// sealing the unit if the event's messages would not fit in it.
func (p *planner) add(e history.Event) error {
	w := p.w
	parts, packed := 1, len(e.Frame) <= packLimit-packOverhead(e)
	if len(e.Frame) > p.chunk {
		parts = (len(e.Frame) + p.chunk - 1) / p.chunk
	}
	if parts+1 > maxBatch {
		return fmt.Errorf("history: event %d of %q: a frame of %d bytes is too big", e.Seq, w.id, len(e.Frame))
	}
	if packed && p.pack != nil && len(p.pack.Data)+packOverhead(e)+len(e.Frame) > packLimit {
		p.closePack()
	}
	if !packed || p.pack == nil {
		// New messages: the unit may be full.
		if n := len(p.cur.msgs) + parts + 1; len(p.cur.msgs) > 0 && n > maxBatch {
			p.closePack()
			if err := p.seal(false); err != nil {
				return err
			}
		}
	}
	if e.Seq < p.mx {
		p.unsorted = true
	}
	p.mx = max(p.mx, e.Seq)
	if packed {
		p.addPacked(e)
		return nil
	}
	p.closePack()
	p.addSplit(e, parts)
	return nil
}

// addPacked adds an event to the pack, starting one if need be.
func (p *planner) addPacked(e history.Event) {
	cur := p.cur
	if p.pack == nil {
		p.pack = &nats.Msg{Subject: p.w.subj, Header: nats.Header{}}
		p.packEvents = 0
		cur.events = append(cur.events, position{e.Seq, uint64(len(cur.msgs))})
		cur.msgs = append(cur.msgs, p.pack)
	}
	p.pack.Data = appendPacked(p.pack.Data, e)
	p.packEvents, p.packMax = p.packEvents+1, p.mx
}

// addSplit adds an event as messages of its own: parts pieces of its frame.
func (p *planner) addSplit(e history.Event, parts int) {
	cur := p.cur
	for i := range parts {
		m := &nats.Msg{Subject: p.w.subj, Header: nats.Header{}}
		if i == 0 {
			cur.events = append(cur.events, position{e.Seq, uint64(len(cur.msgs))})
			m.Header.Set(hdrEvent, fmt.Sprintf("%d %d %d %s", e.Seq, p.mx, parts, e.Type))
		} else {
			m.Header.Set(hdrPart, fmt.Sprintf("%d %d", i+1, p.mx))
		}
		m.Data = e.Frame[i*p.chunk : min(len(e.Frame), (i+1)*p.chunk)]
		cur.msgs = append(cur.msgs, m)
		cur.bytes += len(m.Data)
	}
}

// closePack ends the pack being filled, if any: its header says how many
// events it holds and its largest seq.
func (p *planner) closePack() {
	if p.pack != nil {
		p.pack.Header.Set(hdrPack, fmt.Sprintf("%d %d", p.packMax, p.packEvents))
		p.cur.bytes += len(p.pack.Data)
		p.pack = nil
	}
}

// seal puts the record on the unit's last message (or a message of its
// own) and starts the next unit; last says it ends the append.
func (p *planner) seal(last bool) error {
	w, cur := p.w, p.cur
	rec := p.final
	if !last {
		// The state after part of the events: the new metadata, and
		// only the seqs stored so far.
		rec.LastSeq = min(rec.LastSeq, p.mx)
	}
	rec.Max, rec.Unsorted = p.mx, p.unsorted
	rec.Append = p.appendID + strconv.Itoa(len(p.units)+1)
	rec.Msgs = p.msgs + uint64(len(cur.msgs))
	js, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode the record of %q: %w", w.id, err)
	}
	if len(cur.msgs) == 0 || len(js) > maxRecordHeader {
		// A message of its own for the record.
		rec.Msgs++
		if js, err = json.Marshal(rec); err != nil {
			return fmt.Errorf("encode the record of %q: %w", w.id, err)
		}
		m := &nats.Msg{Subject: w.subj, Header: nats.Header{}}
		m.Header.Set(hdrMeta, strconv.FormatInt(p.mx, 10))
		if len(js) > maxRecordHeader {
			m.Header.Set(hdrConv, "-")
			m.Data = js
		} else {
			m.Header.Set(hdrConv, string(js))
		}
		cur.msgs = append(cur.msgs, m)
		cur.bytes += len(js)
	} else {
		cur.msgs[len(cur.msgs)-1].Header.Set(hdrConv, string(js))
	}
	p.msgs = rec.Msgs
	cur.append, cur.rec = rec.Append, rec
	p.units = append(p.units, cur)
	p.cur = &unit{}
	return nil
}
