package jetstream

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// The headers of a conversation's messages. One header per kind of message
// keeps them small: an event's costs about 30 bytes.
const (
	// hdrEvent is on the message that starts an event too big for a pack:
	// "<seq> <max> <parts> <type>". max is the highest event seq stored on
	// the subject up to this message (never smaller than on an earlier
	// message: a replay finds where seq > since starts by bisecting on
	// it); parts is how many messages the frame takes.
	hdrEvent = "Pd"
	// hdrPack is on a message that holds several small events, in the
	// order they were written: "<max> <count>"; its body is, per event,
	// uvarint seq, uvarint length and type, uvarint length and frame
	// (appendPacked).
	hdrPack = "Pd-Pack"
	// hdrPart is on each further piece of a frame too big for one
	// message: "<i> <max>", i from 2.
	hdrPart = "Pd-Part"
	// hdrMeta is on a message that carries only a record: "<max>".
	hdrMeta = "Pd-Meta"
	// hdrConv is on the last message of every append: the conversation's
	// record as JSON, or "-" when the record is the message's body (a
	// record too big for a header).
	hdrConv = "Pd-Conv"

	// maxRecordHeader is the largest record carried in a header; a bigger
	// one (a long pending question) gets a message of its own.
	maxRecordHeader = 8 << 10
)

// record is a conversation as the stream keeps it: history.Conversation
// and the store's counters for its subject.
type record struct {
	ID           string    `json:"id"`
	Title        string    `json:"title,omitempty"`
	Mode         string    `json:"mode,omitempty"`
	CreatedAt    time.Time `json:"created,omitzero"`
	UpdatedAt    time.Time `json:"updated,omitzero"`
	LastSeq      int64     `json:"lastSeq,omitempty"`
	Streaming    bool      `json:"streaming,omitempty"`
	PendingInput []byte    `json:"pending,omitempty"`
	Model        string    `json:"model,omitempty"`
	Agent        string    `json:"agent,omitempty"`
	// Workspace is the conversation's folder once fixed (nil before).
	Workspace *history.Workspace `json:"workspace,omitempty"`

	// Msgs is how many messages the subject holds with this append: the
	// KV record is stale when the stream counts more (Conversations).
	Msgs uint64 `json:"msgs"`
	// Max is the highest event seq stored.
	Max int64 `json:"max,omitempty"`
	// Unsorted says an event was stored after one with a higher seq, so a
	// replay must sort (read.go).
	Unsorted bool `json:"unsorted,omitempty"`
	// Append names the append that wrote this record: the store and a
	// counter, and the part of a long append. A store whose append was
	// refused because the subject moved on recognises its own by it: the
	// ack was lost, the append was stored.
	Append string `json:"append"`
	// Tail, in the KV record only, is the stream seq of the message that
	// carries it.
	Tail uint64 `json:"tail,omitempty"`
}

func recordFrom(c history.Conversation) record {
	r := record{ID: c.ID, Title: c.Title, Mode: c.Mode, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
		LastSeq: c.LastSeq, Streaming: c.Streaming, PendingInput: c.PendingInput, Model: c.Model, Agent: c.Agent}
	if !c.Workspace.IsZero() {
		w := c.Workspace
		r.Workspace = &w
	}
	return r
}

func (r record) conversation() history.Conversation {
	c := history.Conversation{ID: r.ID, Title: r.Title, Mode: r.Mode, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		LastSeq: r.LastSeq, Streaming: r.Streaming, PendingInput: r.PendingInput, Model: r.Model, Agent: r.Agent}
	if r.Workspace != nil {
		c.Workspace = *r.Workspace
	}
	return c
}

// withConversation is r's counters with c's fields.
func (r record) withConversation(c history.Conversation) record {
	n := recordFrom(c)
	n.Msgs, n.Max, n.Unsorted, n.Append = r.Msgs, r.Max, r.Unsorted, r.Append
	return n
}

// recordOf reads the record a message carries, if any.
func recordOf(h nats.Header, body []byte) (record, bool, error) {
	m, err := recordAfter(h, body, nil)
	if m == nil || err != nil {
		return record{}, false, err
	}
	return m.rec, true, nil
}

// recordAfter is recordOf of a message that follows prev's of the same
// conversation (nil: none): the record's values equal to prev's are taken
// from prev rather than decoded again (decodeRecord). Nil if the message
// carries no record.
func recordAfter(h nats.Header, body []byte, prev *recordMemo) (*recordMemo, error) {
	v := h.Get(hdrConv)
	if v == "" {
		return nil, nil
	}
	if v == "-" {
		v = string(body)
	}
	return decodeRecord(v, prev)
}

// msgInfo is what a message's headers say of its place in the history.
type msgInfo struct {
	kind  msgKind
	seq   int64  // event seq (kindEvent)
	max   int64  // highest event seq stored up to this message
	parts int    // kindEvent: messages of the frame; kindPart: which one
	typ   string // kindEvent
}

type msgKind uint8

const (
	kindEvent msgKind = iota + 1
	kindPart
	kindMeta
	kindPack
)

// packOverhead bounds the bytes appendPacked adds to an event's frame.
func packOverhead(e history.Event) int { return 3*binary.MaxVarintLen64 + len(e.Type) }

// appendPacked appends an event to a pack's body.
func appendPacked(b []byte, e history.Event) []byte {
	b = binary.AppendUvarint(b, uint64(e.Seq))
	b = binary.AppendUvarint(b, uint64(len(e.Type)))
	b = append(b, e.Type...)
	b = binary.AppendUvarint(b, uint64(len(e.Frame)))
	return append(b, e.Frame...)
}

// unpack calls fn for each event of a pack's body. The frames are slices
// of body.
func unpack(body []byte, fn func(seq int64, typ string, frame []byte) error) error {
	for len(body) > 0 {
		seq, n := binary.Uvarint(body)
		if n <= 0 {
			return errors.New("a bad pack: seq")
		}
		body = body[n:]
		tl, n := binary.Uvarint(body)
		if n <= 0 || uint64(len(body)-n) < tl {
			return errors.New("a bad pack: type")
		}
		typ := string(body[n : n+int(tl)])
		body = body[n+int(tl):]
		fl, n := binary.Uvarint(body)
		if n <= 0 || uint64(len(body)-n) < fl {
			return errors.New("a bad pack: frame")
		}
		frame := body[n : n+int(fl) : n+int(fl)]
		body = body[n+int(fl):]
		if err := fn(int64(seq), typ, frame); err != nil {
			return err
		}
	}
	return nil
}

func parseInfo(h nats.Header) (msgInfo, error) {
	if v := h.Get(hdrEvent); v != "" {
		f := strings.SplitN(v, " ", 4)
		if len(f) != 4 {
			return msgInfo{}, fmt.Errorf("bad %s header %q", hdrEvent, v)
		}
		seq, err1 := strconv.ParseInt(f[0], 10, 64)
		mx, err2 := strconv.ParseInt(f[1], 10, 64)
		parts, err3 := strconv.Atoi(f[2])
		if err := errors.Join(err1, err2, err3); err != nil || parts < 1 {
			return msgInfo{}, fmt.Errorf("bad %s header %q", hdrEvent, v)
		}
		return msgInfo{kind: kindEvent, seq: seq, max: mx, parts: parts, typ: f[3]}, nil
	}
	if v := h.Get(hdrPack); v != "" {
		mx, n, ok := twoInts(v)
		if !ok || n < 1 || n > math.MaxInt32 {
			return msgInfo{}, fmt.Errorf("bad %s header %q", hdrPack, v)
		}
		return msgInfo{kind: kindPack, max: mx, parts: int(n)}, nil
	}
	if v := h.Get(hdrPart); v != "" {
		i, mx, ok := twoInts(v)
		if !ok || i < math.MinInt32 || i > math.MaxInt32 {
			return msgInfo{}, fmt.Errorf("bad %s header %q", hdrPart, v)
		}
		return msgInfo{kind: kindPart, parts: int(i), max: mx}, nil
	}
	if v := h.Get(hdrMeta); v != "" {
		mx, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return msgInfo{}, fmt.Errorf("bad %s header %q", hdrMeta, v)
		}
		return msgInfo{kind: kindMeta, max: mx}, nil
	}
	return msgInfo{}, errors.New("a message with no pilotdesk header")
}

// twoInts reads a header of two integers, "<a> <b>", as written with
// "%d %d": strconv on the usual form (every live message has such a
// header, and fmt.Sscanf cost as much as the rest of the header's
// parsing), fmt.Sscanf on any other, which it accepted before.
func twoInts(v string) (a, b int64, ok bool) {
	x, y, cut := strings.Cut(v, " ")
	if cut {
		var err1, err2 error
		a, err1 = strconv.ParseInt(x, 10, 64)
		b, err2 = strconv.ParseInt(y, 10, 64)
		if err1 == nil && err2 == nil {
			return a, b, true
		}
	}
	_, err := fmt.Sscanf(v, "%d %d", &a, &b)
	return a, b, err == nil
}

// storedMsg is a message read from the stream through its leader.
type storedMsg struct {
	seq  uint64
	hdr  nats.Header
	data []byte
}

var errNoMessage = errors.New("no such message")

// msgGetRequest is the JetStream API's STREAM.MSG.GET request.
type msgGetRequest struct {
	Seq           uint64 `json:"seq,omitempty"`
	LastBySubject string `json:"last_by_subj,omitempty"`
	NextBySubject string `json:"next_by_subj,omitempty"`
}

// getMsg reads one message through the stream's leader. nats.go's GetMsg
// uses a direct get when the stream allows them, which any replica may
// answer, and a replica may not have the latest append yet: the store's
// own reads must see its writes.
func (s *Store) getMsg(ctx context.Context, stream string, req msgGetRequest) (storedMsg, error) {
	return s.getMsgOf(ctx, stream, req, true)
}

// getMsgHeaders is getMsg without decoding the body: a bisection probe
// needs only the headers, and a frame may be a megabyte.
func (s *Store) getMsgHeaders(ctx context.Context, stream string, req msgGetRequest) (storedMsg, error) {
	return s.getMsgOf(ctx, stream, req, false)
}

// msgGetAnswer is the JetStream API's STREAM.MSG.GET answer, and
// msgGetHeaders the same without the body, which json skips unread.
type (
	msgGetAnswer struct {
		Error   *jetstream.APIError `json:"error"`
		Message *struct {
			Seq    uint64 `json:"seq"`
			Header []byte `json:"hdrs"`
			Data   []byte `json:"data"`
		} `json:"message"`
	}
	msgGetHeaders struct {
		Error   *jetstream.APIError `json:"error"`
		Message *struct {
			Seq    uint64 `json:"seq"`
			Header []byte `json:"hdrs"`
		} `json:"message"`
	}
)

func (s *Store) getMsgOf(ctx context.Context, stream string, req msgGetRequest, withData bool) (storedMsg, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return storedMsg{}, err
	}
	var reply *nats.Msg
	if err := s.leaderCall(ctx, func(ctx context.Context) (err error) {
		reply, err = s.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+stream, body)
		return err
	}); err != nil {
		return storedMsg{}, err
	}
	var (
		apiErr *jetstream.APIError
		m      storedMsg
		hdr    []byte
		found  bool
	)
	if withData {
		var a msgGetAnswer
		err = json.Unmarshal(reply.Data, &a)
		if apiErr = a.Error; a.Message != nil {
			m, hdr, found = storedMsg{seq: a.Message.Seq, data: a.Message.Data}, a.Message.Header, true
		}
	} else {
		var a msgGetHeaders
		err = json.Unmarshal(reply.Data, &a)
		if apiErr = a.Error; a.Message != nil {
			m, hdr, found = storedMsg{seq: a.Message.Seq}, a.Message.Header, true
		}
	}
	if err != nil {
		return storedMsg{}, fmt.Errorf("a bad STREAM.MSG.GET answer: %w", err)
	}
	if apiErr != nil {
		if apiErr.ErrorCode == jetstream.JSErrCodeMessageNotFound {
			return storedMsg{}, errNoMessage
		}
		return storedMsg{}, apiErr
	}
	if !found {
		return storedMsg{}, errors.New("an empty STREAM.MSG.GET answer")
	}
	if len(hdr) > 0 {
		if m.hdr, err = nats.DecodeHeadersMsg(hdr); err != nil {
			return storedMsg{}, fmt.Errorf("the headers of stream seq %d: %w", m.seq, err)
		}
	}
	return m, nil
}
