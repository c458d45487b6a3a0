package relay

import (
	"encoding/json"
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// No frame over protocol.MaxFrameBytes leaves the relay (docs/protocol.md,
// Transport): the clients read no more, so one larger frame would make every
// client that follows or replays the conversation drop the connection and
// resume into the same frame forever. Whatever an agent or a user sends is
// fitted here, and nothing is cut silently: a long delta becomes several
// deltas, a message too long for a frame is marked truncated (its deltas
// carried the text), other long texts end with a marker that says how much
// was left out.

// frameSlack is room kept in every fitted frame for what the size estimates
// leave out (the envelope's keys, a seq of more digits).
const frameSlack = 256

// maxSeq stands for any seq when a frame's size is measured: the longest it
// can print.
const maxSeq = math.MaxInt64

// jsonLen is the length of s encoded as the inside of a JSON string by
// protocol.Encode (encoding/json without HTML escaping): an invalid byte
// becomes \ufffd, U+2028 and U+2029 and control characters other than
// \b \f \n \r \t become \uXXXX.
func jsonLen(s string) int {
	n := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			switch {
			case b == '"' || b == '\\' || b == '\b' || b == '\f' || b == '\n' || b == '\r' || b == '\t':
				n += 2
			case b < 0x20:
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}

// cutJSON returns the longest prefix of s, cut on a UTF-8 boundary (an
// invalid byte counts as one character), whose jsonLen is at most budget.
func cutJSON(s string, budget int) string {
	n := 0
	for i := 0; i < len(s); {
		_, size := utf8.DecodeRuneInString(s[i:])
		w := jsonLen(s[i : i+size])
		if n+w > budget {
			return s[:i]
		}
		n += w
		i += size
	}
	return s
}

// splitJSON cuts s into pieces whose jsonLen is at most budget each, on
// UTF-8 boundaries; the pieces joined are s.
func splitJSON(s string, budget int) []string {
	var out []string
	for len(s) > 0 {
		p := cutJSON(s, budget)
		if p == "" { // budget below one character: cannot happen with a frame's budget
			p = s[:1]
		}
		out = append(out, p)
		s = s[len(p):]
	}
	return out
}

// overhead is the size of the frame of msgType with data whose long text
// fields are empty, for any seq.
func overhead(msgType string, data any) int {
	frame, err := protocol.Encode(msgType, data)
	if err != nil {
		return protocol.MaxFrameBytes // cannot be measured: nothing fits
	}
	return len(frame) + frameSlack
}

// surelyFits reports, without encoding anything, whether a frame fits that
// holds text of n bytes and the strings of ids, besides the envelope, the
// type, field names and numbers (frameSlack covers those): every byte
// encodes to at most six. It is the fast path that keeps the common case
// (deltas of a few bytes) from being measured.
func surelyFits(n int, ids ...string) bool {
	for _, id := range ids {
		n += len(id)
	}
	return n*6+frameSlack <= protocol.MaxFrameBytes
}

// splitDelta cuts a delta's text into pieces that each fit a copilot:delta
// frame of this conversation and message. Most deltas are one piece.
func splitDelta(conversationID, messageID, content string) []string {
	if surelyFits(len(content), conversationID, messageID) {
		return []string{content}
	}
	empty := protocol.Delta{Header: protocol.Header{ConversationID: conversationID, Seq: maxSeq}, MessageID: messageID}
	budget := protocol.MaxFrameBytes - overhead(protocol.TypeDelta, &empty)
	if jsonLen(content) <= budget {
		return []string{content}
	}
	return splitJSON(content, budget)
}

// truncatedMarker ends a text the relay cut to fit a frame.
func truncatedMarker(total int) string {
	return fmt.Sprintf("\n\n[… truncated by the relay: the text was %d bytes, over the %d-byte frame limit]", total, protocol.MaxFrameBytes)
}

// cutText makes *s fit in budget encoded bytes, ending it with the marker
// when it had to be cut. It reports whether it cut.
func cutText(s *string, budget int) bool {
	if jsonLen(*s) <= budget {
		return false
	}
	marker := truncatedMarker(len(*s))
	*s = cutJSON(*s, max(budget-jsonLen(marker), 0)) + marker
	return true
}

// fitText cuts the text field *s of a frame of msgType with data so that the
// frame fits, and reports whether it did anything.
func fitText(msgType string, data any, s *string) bool {
	text := *s
	*s = ""
	budget := protocol.MaxFrameBytes - overhead(msgType, data)
	*s = text
	return cutText(s, budget)
}

// fitEvent makes the data of an event fit in a frame of at most
// MaxFrameBytes, by the rules above, once its frame was found too long (size
// bytes). It reports false when it cannot (a type it does not know how to
// shorten).
func fitEvent(msgType string, data any, size int) bool {
	switch d := data.(type) {
	case *protocol.Message:
		// The deltas carried the text (emitMessageLocked makes sure they
		// did); the clients keep it (conversation.State).
		d.Content, d.Truncated = "", true
		return true
	case *protocol.Delta:
		// Deltas are split before they get here; this is for a stored
		// frame of an older relay, which keeps its one seq.
		return fitText(msgType, d, &d.Content)
	case *protocol.UserMessage:
		// copilot:send refuses a prompt that would not fit (too_large);
		// this is for a stored frame of an older relay.
		return fitText(msgType, d, &d.Content)
	case *protocol.ToolEnd:
		return fitText(msgType, d, &d.Result)
	case *protocol.ToolStart:
		d.Arguments = truncatedArguments(d.Arguments, size)
		return true
	case *protocol.AgentError:
		return fitText(msgType, d, &d.Message)
	case *protocol.Idle:
		return fitText(msgType, d, &d.Message)
	case *protocol.UserInputRequest:
		// ask fits a question before it is opened; for stored frames.
		d.Choices = nil
		return fitText(msgType, d, &d.Question)
	case *protocol.UserInputTimeout:
		d.Choices = nil
		return fitText(msgType, d, &d.Question)
	case *protocol.Quota:
		d.QuotaSnapshots = emptyObject
		return true
	case *protocol.Shutdown:
		d.ModelMetrics = emptyObject
		return true
	}
	return false
}

// truncatedArguments stands for tool arguments too long for a frame: an
// object whose one field says so and shows how they began, which the
// clients show as the tool's summary.
func truncatedArguments(args json.RawMessage, size int) json.RawMessage {
	start := cutJSON(string(args), 2048)
	b, err := json.Marshal(map[string]string{
		"truncated": fmt.Sprintf("the arguments (%d bytes) are over the %d-byte frame limit; they began: %s…", len(args), protocol.MaxFrameBytes, start),
	})
	if err != nil {
		return emptyObject
	}
	return b
}

// refitStored makes a stored frame of an older relay, which did not bound
// its frames, fit for a replay. It keeps the frame's seq: a long delta is
// cut with a marker rather than split.
func refitStored(frame []byte) ([]byte, error) {
	ev, err := protocol.DecodeEvent(frame)
	if err != nil {
		return nil, fmt.Errorf("decode a stored frame of %d bytes: %w", len(frame), err)
	}
	if ev.Data == nil || !fitEvent(ev.Type, ev.Data, len(frame)) {
		return nil, fmt.Errorf("a stored %s frame of %d bytes cannot be shortened", ev.Type, len(frame))
	}
	out, err := protocol.Encode(ev.Type, ev.Data)
	if err != nil {
		return nil, fmt.Errorf("encode a shortened %s frame: %w", ev.Type, err)
	}
	if len(out) > protocol.MaxFrameBytes {
		return nil, fmt.Errorf("a stored %s frame is still %d bytes once shortened", ev.Type, len(out))
	}
	return out, nil
}

// userMessageFits reports whether the copilot:user_message that echoes d's
// prompt fits in a frame, and the size it would have; by is its sentBy and
// agent its agent.
func userMessageFits(d *protocol.Send, by *protocol.By, agent string) (bool, int) {
	um := protocol.UserMessage{
		Header:    protocol.Header{ConversationID: d.ConversationID, Seq: maxSeq},
		MessageID: "00000000-0000-0000-0000-000000000000", // a UUID, as startTurnLocked makes
		Mode:      protocol.ModePlan,
		SentBy:    by,
		Agent:     agent,
		ClientID:  d.ClientID,
	}
	if surelyFits(len(d.Prompt)+len(um.MessageID), d.ConversationID, by.Device, by.Client, agent, d.ClientID) {
		return true, 0
	}
	size := overhead(protocol.TypeUserMessage, &um) + jsonLen(d.Prompt)
	return size <= protocol.MaxFrameBytes, size - frameSlack
}

// messageFits reports whether a copilot:message with this content fits.
func messageFits(conversationID, messageID, content string) bool {
	if surelyFits(len(content), conversationID, messageID) {
		return true
	}
	empty := protocol.Message{Header: protocol.Header{ConversationID: conversationID, Seq: maxSeq}, MessageID: messageID}
	return overhead(protocol.TypeMessage, &empty)+jsonLen(content) <= protocol.MaxFrameBytes
}

// maxQuestionBytes bounds a copilot:user_input_request's frame so that
// copilot:subscribed, which carries it as pendingInput besides the
// conversation's id, mode, seq and epoch, fits too.
const maxQuestionBytes = protocol.MaxFrameBytes - 6*protocol.MaxIDLength - 4*frameSlack

// fitQuestion makes a question from the agent fit a frame: a long question
// is cut with a marker; choices are never cut (an answer must name one as
// the agent wrote it), so when they alone are too long it reports false.
func fitQuestion(conversationID string, d *protocol.UserInputRequest) bool {
	// The header, expiresAt and queued are set when the question opens;
	// measure with their longest values.
	d.Header = protocol.Header{ConversationID: conversationID, Seq: maxSeq}
	d.ExpiresAt, d.Queued = protocol.FormatTime(time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)), math.MaxInt32
	defer func() { d.Header, d.ExpiresAt, d.Queued = protocol.Header{}, "", 0 }()
	q := d.Question
	d.Question = ""
	base := overhead(protocol.TypeUserInputRequest, d) + protocol.MaxFrameBytes - maxQuestionBytes
	d.Question = q
	if base > protocol.MaxFrameBytes {
		return false
	}
	cutText(&d.Question, protocol.MaxFrameBytes-base)
	return true
}
