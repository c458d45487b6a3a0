package protocol

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// decodeFlat decodes, without encoding/json's reflection, the frames a
// replay is made of: copilot:delta, copilot:reasoning, copilot:message,
// copilot:idle and copilot:tool_end, whose data is a flat object of
// strings, integers and booleans, and copilot:user_message (sentBy, a flat
// object) and copilot:tool_start (its arguments kept as they are, once
// json.Valid has checked them). A 5,000-message replay is 25,000 frames,
// all of them these, and decoding them with encoding/json (a validation pass, then
// reflection) was most of the window's CPU when it opened one
// (docs/performance.md). It takes only what Encode writes: the type
// first, then the data, no whitespace inside, each key once and spelled
// exactly as the struct's tag, no null, integers without fraction or
// exponent, strings of valid UTF-8 without control characters and without
// \u escapes of surrogates. On anything else ok is false and decodeEvent
// decodes the frame the general way, so an event decodes here exactly as
// encoding/json decodes it, or not here at all (TestDecodeFlat and
// FuzzDecodeFlat compare the two).
func decodeFlat(table map[string]func() any, frame []byte) (ev Event, ok bool) {
	rest, found := bytes.CutPrefix(frame, []byte(framePrefix))
	if !found {
		return Event{}, false
	}
	end := bytes.IndexByte(rest, '"')
	if end <= 0 {
		return Event{}, false
	}
	typ := rest[:end]
	var build func() (any, flatSetter)
	switch string(typ) { // no allocation: the switch compares bytes
	case TypeDelta:
		build = flatDelta
	case TypeReasoning:
		build = flatReasoning
	case TypeMessage:
		build = flatMessage
	case TypeIdle:
		build = flatIdle
	case TypeToolEnd:
		build = flatToolEnd
	case TypeUserMessage:
		build = flatUserMessage
	case TypeToolStart:
		build = flatToolStart
	default:
		return Event{}, false
	}
	name := flatTypeName(typ)
	if table[name] == nil {
		return Event{}, false
	}
	rest, found = bytes.CutPrefix(rest[end:], []byte(`","data":{`))
	if !found {
		return Event{}, false
	}
	data, set := build()
	if rest, ok = flatObject(rest, set); !ok {
		return Event{}, false
	}
	if len(rest) == 0 || rest[0] != '}' || len(bytes.TrimRight(rest[1:], " \t\r\n")) != 0 {
		return Event{}, false
	}
	return Event{Type: name, Data: data}, true
}

// flatObject reads the members of an object (b is what follows its '{')
// through set, and returns what follows its '}'.
func flatObject(b []byte, set flatSetter) (rest []byte, ok bool) {
	rest = b
	var seen [8]string // the keys so far: a repeated one goes the general way
	n := 0
	for first := true; ; first = false {
		if len(rest) > 0 && rest[0] == '}' && first {
			return rest[1:], true
		}
		var key []byte
		if key, rest, ok = flatKey(rest); !ok || n == len(seen) {
			return nil, false
		}
		for _, k := range seen[:n] {
			if k == string(key) {
				return nil, false
			}
		}
		var v flatValue
		if v, rest, ok = flatScalar(rest); !ok {
			return nil, false
		}
		k, ok := set(key, v)
		if !ok {
			return nil, false
		}
		seen[n] = k
		n++
		if len(rest) == 0 {
			return nil, false
		}
		if rest[0] == '}' {
			return rest[1:], true
		}
		if rest[0] != ',' {
			return nil, false
		}
		rest = rest[1:]
	}
}

// flatTypeName returns the type's constant, so that no event holds a copy.
func flatTypeName(typ []byte) string {
	switch string(typ) {
	case TypeDelta:
		return TypeDelta
	case TypeReasoning:
		return TypeReasoning
	case TypeMessage:
		return TypeMessage
	case TypeIdle:
		return TypeIdle
	case TypeUserMessage:
		return TypeUserMessage
	case TypeToolStart:
		return TypeToolStart
	default:
		return TypeToolEnd
	}
}

// flatValue is a string, an integer or a boolean of a flat object, or the
// raw bytes of an object (valid JSON, not copied).
type flatValue struct {
	kind byte // 's', 'i', 'b' or 'o'
	s    string
	i    int64
	b    bool
	raw  []byte
}

// flatSetter sets the field of a struct that key names to v, and returns
// the field's name; false for a key the struct does not have, or a value
// of another kind.
type flatSetter func(key []byte, v flatValue) (string, bool)

func (v flatValue) asString(p *string) bool {
	*p = v.s
	return v.kind == 's'
}

func (v flatValue) asInt(p *int64) bool {
	*p = v.i
	return v.kind == 'i'
}

func (v flatValue) asBool(p *bool) bool {
	*p = v.b
	return v.kind == 'b'
}

// flatHeader sets the fields of Header.
func flatHeader(h *Header, key []byte, v flatValue) (string, bool) {
	switch string(key) {
	case "conversationId":
		return "conversationId", v.asString(&h.ConversationID)
	case "seq":
		return "seq", v.asInt(&h.Seq)
	}
	return "", false
}

// flatText sets the fields the text events (delta, reasoning and message)
// share: their message's id, their text and the header.
func flatText(h *Header, messageID, content *string, key []byte, v flatValue) (string, bool) {
	switch string(key) {
	case "messageId":
		return "messageId", v.asString(messageID)
	case "content":
		return "content", v.asString(content)
	}
	return flatHeader(h, key, v)
}

func flatDelta() (any, flatSetter) {
	d := &Delta{}
	return d, func(key []byte, v flatValue) (string, bool) {
		return flatText(&d.Header, &d.MessageID, &d.Content, key, v)
	}
}

func flatReasoning() (any, flatSetter) {
	d := &Reasoning{}
	return d, func(key []byte, v flatValue) (string, bool) {
		return flatText(&d.Header, &d.MessageID, &d.Content, key, v)
	}
}

func flatMessage() (any, flatSetter) {
	d := &Message{}
	return d, func(key []byte, v flatValue) (string, bool) {
		if string(key) == "truncated" {
			return "truncated", v.asBool(&d.Truncated)
		}
		return flatText(&d.Header, &d.MessageID, &d.Content, key, v)
	}
}

func flatIdle() (any, flatSetter) {
	d := &Idle{}
	return d, func(key []byte, v flatValue) (string, bool) {
		switch string(key) {
		case "status":
			return "status", v.asString(&d.Status)
		case "message":
			return "message", v.asString(&d.Message)
		}
		return flatHeader(&d.Header, key, v)
	}
}

func flatUserMessage() (any, flatSetter) {
	d := &UserMessage{}
	return d, func(key []byte, v flatValue) (string, bool) {
		switch string(key) {
		case "messageId":
			return "messageId", v.asString(&d.MessageID)
		case "content":
			return "content", v.asString(&d.Content)
		case "mode":
			var m string
			ok := v.asString(&m)
			d.Mode = Mode(m)
			return "mode", ok
		case "agent":
			return "agent", v.asString(&d.Agent)
		case "clientId":
			return "clientId", v.asString(&d.ClientID)
		case "sentBy":
			if v.kind != 'o' {
				return "", false
			}
			by := &By{}
			rest, ok := flatObject(v.raw[1:], func(key []byte, v flatValue) (string, bool) {
				switch string(key) {
				case "device":
					return "device", v.asString(&by.Device)
				case "client":
					return "client", v.asString(&by.Client)
				}
				return "", false
			})
			d.SentBy = by
			return "sentBy", ok && len(rest) == 0
		}
		return flatHeader(&d.Header, key, v)
	}
}

func flatToolStart() (any, flatSetter) {
	d := &ToolStart{}
	return d, func(key []byte, v flatValue) (string, bool) {
		switch string(key) {
		case "toolCallId":
			return "toolCallId", v.asString(&d.ToolCallID)
		case "toolName":
			return "toolName", v.asString(&d.ToolName)
		case "arguments":
			// A json.RawMessage gets the value's bytes as they are.
			d.Arguments = bytes.Clone(v.raw)
			return "arguments", v.kind == 'o'
		}
		return flatHeader(&d.Header, key, v)
	}
}

func flatToolEnd() (any, flatSetter) {
	d := &ToolEnd{}
	return d, func(key []byte, v flatValue) (string, bool) {
		switch string(key) {
		case "toolCallId":
			return "toolCallId", v.asString(&d.ToolCallID)
		case "success":
			return "success", v.asBool(&d.Success)
		case "denied":
			return "denied", v.asBool(&d.Denied)
		case "result":
			return "result", v.asString(&d.Result)
		}
		return flatHeader(&d.Header, key, v)
	}
}

// flatKey reads `"key":` off b; the key is raw (a key with an escape is
// not one a struct here has, and goes the general way).
func flatKey(b []byte) (key, rest []byte, ok bool) {
	if len(b) == 0 || b[0] != '"' {
		return nil, nil, false
	}
	end := bytes.IndexByte(b[1:], '"')
	if end < 0 {
		return nil, nil, false
	}
	key, rest = b[1:1+end], b[2+end:]
	if bytes.IndexByte(key, '\\') >= 0 || len(rest) == 0 || rest[0] != ':' {
		return nil, nil, false
	}
	return key, rest[1:], true
}

// flatScalar reads a string, an integer, true or false off b.
func flatScalar(b []byte) (v flatValue, rest []byte, ok bool) {
	if len(b) == 0 {
		return v, nil, false
	}
	switch c := b[0]; {
	case c == '{':
		end, ok := objectEnd(b)
		if !ok || !json.Valid(b[:end]) {
			return v, nil, false
		}
		return flatValue{kind: 'o', raw: b[:end]}, b[end:], true
	case c == '"':
		v.kind = 's'
		v.s, rest, ok = flatString(b[1:])
		return v, rest, ok
	case c == 't' && bytes.HasPrefix(b, []byte("true")):
		return flatValue{kind: 'b', b: true}, b[4:], true
	case c == 'f' && bytes.HasPrefix(b, []byte("false")):
		return flatValue{kind: 'b'}, b[5:], true
	case c == '-' || c >= '0' && c <= '9':
		i := 0
		if c == '-' {
			i = 1
		}
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		digits := i - start
		if digits == 0 || digits > 1 && b[start] == '0' {
			return v, nil, false // not JSON, which json reports
		}
		if i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E') {
			return v, nil, false // a fraction: not an integer field's
		}
		n, err := strconv.ParseInt(string(b[:i]), 10, 64)
		if err != nil {
			return v, nil, false
		}
		return flatValue{kind: 'i', i: n}, b[i:], true
	}
	return v, nil, false
}

// objectEnd returns the length of the object b begins with, by its
// brackets outside strings; the caller checks that it is valid JSON.
func objectEnd(b []byte) (int, bool) {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1, true
			}
		}
	}
	return 0, false
}

// flatString reads the rest of a JSON string (after its opening quote) and
// returns it unquoted.
func flatString(b []byte) (s string, rest []byte, ok bool) {
	// Most strings have no escape: one scan, one copy.
	i := 0
	for i < len(b) {
		c := b[i]
		if c == '"' {
			if !utf8.Valid(b[:i]) {
				return "", nil, false
			}
			return string(b[:i]), b[i+1:], true
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return "", nil, false
		}
		i++
	}
	out := make([]byte, 0, len(b[:i])+64)
	start := 0
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			out = append(out, b[start:i]...)
			if !utf8.Valid(out) {
				return "", nil, false
			}
			return string(out), b[i+1:], true
		case c < 0x20:
			return "", nil, false
		case c != '\\':
			i++
			continue
		}
		out = append(out, b[start:i]...)
		if i+1 >= len(b) {
			return "", nil, false
		}
		switch b[i+1] {
		case '"', '\\', '/':
			out = append(out, b[i+1])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			if i+6 > len(b) {
				return "", nil, false
			}
			r, err := strconv.ParseUint(string(b[i+2:i+6]), 16, 16)
			if err != nil || utf16.IsSurrogate(rune(r)) {
				return "", nil, false
			}
			out = utf8.AppendRune(out, rune(r))
			i += 4
		default:
			return "", nil, false
		}
		i += 2
		start = i
	}
	return "", nil, false
}
