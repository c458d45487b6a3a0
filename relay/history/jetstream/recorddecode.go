package jetstream

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Decoding a conversation's record (Pd-Conv) without reflection.
//
// A relay that follows a conversation it does not own decodes the record
// of every message the stream republishes (live.go): json.Unmarshal of it
// was half of what following cost (docs/scale-out.md). A record is flat
// JSON written by encoding/json (record's fields, in their order), and
// from one append to the next of a streaming conversation only a few of
// its values change (updated, lastSeq, msgs, max, append). So
// decodeRecord splits the object into its keys' raw values, takes a value
// equal to the previous record's of the same conversation from that one,
// and decodes the others with a fast path for what encoding/json writes
// (a plain ASCII string, an integer, a bool) and json.Unmarshal for the
// rest. Anything it does not know (another key, a key twice, odd syntax)
// goes to json.Unmarshal of the whole record: the result is always what
// json.Unmarshal makes of it, which TestDecodeRecordAsJSON and
// FuzzDecodeRecord check.

// recordFields is the record's JSON keys, in the order encoding/json
// writes them, each with how its raw value is decoded into a record (false:
// not as json.Unmarshal would) and how it is taken from the previous one.
// The pending question's bytes are shared (nothing writes a record's bytes
// once it is made); the workspace is copied, since a record's is a pointer.
// TestRecordFieldsAreTheRecords checks that it names every field of record.
var recordFields = [...]struct {
	key    string
	decode func(r *record, raw string) bool
	take   func(r, prev *record)
}{
	{"id", func(r *record, raw string) (ok bool) { r.ID, ok = jsonString(raw); return }, func(r, p *record) { r.ID = p.ID }},
	{"title", func(r *record, raw string) (ok bool) { r.Title, ok = jsonString(raw); return }, func(r, p *record) { r.Title = p.Title }},
	{"mode", func(r *record, raw string) (ok bool) { r.Mode, ok = jsonString(raw); return }, func(r, p *record) { r.Mode = p.Mode }},
	{"created", func(r *record, raw string) bool { return r.CreatedAt.UnmarshalJSON([]byte(raw)) == nil }, func(r, p *record) { r.CreatedAt = p.CreatedAt }},
	{"updated", func(r *record, raw string) bool { return r.UpdatedAt.UnmarshalJSON([]byte(raw)) == nil }, func(r, p *record) { r.UpdatedAt = p.UpdatedAt }},
	{"lastSeq", func(r *record, raw string) (ok bool) { r.LastSeq, ok = jsonInt(raw); return }, func(r, p *record) { r.LastSeq = p.LastSeq }},
	{"streaming", func(r *record, raw string) (ok bool) { r.Streaming, ok = jsonBool(raw); return }, func(r, p *record) { r.Streaming = p.Streaming }},
	{"pending", func(r *record, raw string) bool { return json.Unmarshal([]byte(raw), &r.PendingInput) == nil }, func(r, p *record) { r.PendingInput = p.PendingInput }},
	{"model", func(r *record, raw string) (ok bool) { r.Model, ok = jsonString(raw); return }, func(r, p *record) { r.Model = p.Model }},
	{"agent", func(r *record, raw string) (ok bool) { r.Agent, ok = jsonString(raw); return }, func(r, p *record) { r.Agent = p.Agent }},
	{"workspace", func(r *record, raw string) bool { return json.Unmarshal([]byte(raw), &r.Workspace) == nil }, func(r, p *record) {
		if p.Workspace != nil {
			w := *p.Workspace
			r.Workspace = &w
		}
	}},
	{"msgs", func(r *record, raw string) (ok bool) { r.Msgs, ok = jsonUint(raw); return }, func(r, p *record) { r.Msgs = p.Msgs }},
	{"max", func(r *record, raw string) (ok bool) { r.Max, ok = jsonInt(raw); return }, func(r, p *record) { r.Max = p.Max }},
	{"unsorted", func(r *record, raw string) (ok bool) { r.Unsorted, ok = jsonBool(raw); return }, func(r, p *record) { r.Unsorted = p.Unsorted }},
	{"append", func(r *record, raw string) (ok bool) { r.Append, ok = jsonString(raw); return }, func(r, p *record) { r.Append = p.Append }},
	{"tail", func(r *record, raw string) (ok bool) { r.Tail, ok = jsonUint(raw); return }, func(r, p *record) { r.Tail = p.Tail }},
}

// rkID is recordFields' index of the id, and rkCount its length.
const (
	rkID    = 0
	rkCount = len(recordFields)
)

// recordKey is k's index in recordFields, -1 if it is none of them.
func recordKey(k string) int {
	for i := range recordFields {
		if recordFields[i].key == k {
			return i
		}
	}
	return -1
}

// recordMemo is a decoded record and the raw JSON values it came from
// (unset keys ""), to decode the next record of the same conversation
// against.
type recordMemo struct {
	raw [rkCount]string
	rec record
}

// decodeRecord decodes a record's JSON as json.Unmarshal would, taking the
// values equal to prev's (nil: none) from prev. It returns the memo of
// this record for the next one.
func decodeRecord(src string, prev *recordMemo) (*recordMemo, error) {
	m := &recordMemo{}
	if !splitRecord(src, &m.raw) || !m.decode(prev) {
		var r record
		if err := json.Unmarshal([]byte(src), &r); err != nil {
			return nil, fmt.Errorf("a bad conversation record: %w", err)
		}
		// Its raw values are not kept: the next record decodes whole.
		return &recordMemo{rec: r}, nil
	}
	return m, nil
}

// decode fills m.rec from m.raw; false if some value needs
// json.Unmarshal of the whole record (it is not what it should be).
func (m *recordMemo) decode(prev *recordMemo) bool {
	r := &m.rec
	for k, raw := range m.raw {
		if raw == "" {
			continue
		}
		if prev != nil && prev.raw[k] == raw {
			recordFields[k].take(r, &prev.rec)
			continue
		}
		if !recordFields[k].decode(r, raw) {
			return false
		}
	}
	return true
}

// splitRecord puts the raw value of each of the object's keys in raw;
// false for anything but an object of known keys, each once, with values
// of valid shape (whose content the field decoders check).
func splitRecord(s string, raw *[rkCount]string) bool {
	i := skipSpace(s, 0)
	if i >= len(s) || s[i] != '{' {
		return false
	}
	i = skipSpace(s, i+1)
	if i < len(s) && s[i] == '}' {
		return skipSpace(s, i+1) == len(s)
	}
	for {
		if i >= len(s) || s[i] != '"' {
			return false
		}
		end := plainStringEnd(s, i)
		if end < 0 {
			return false
		}
		k := recordKey(s[i+1 : end-1])
		if k < 0 || raw[k] != "" {
			return false
		}
		i = skipSpace(s, end)
		if i >= len(s) || s[i] != ':' {
			return false
		}
		i = skipSpace(s, i+1)
		end = valueEnd(s, i)
		if end < 0 {
			return false
		}
		raw[k] = s[i:end]
		i = skipSpace(s, end)
		if i >= len(s) {
			return false
		}
		switch s[i] {
		case ',':
			i = skipSpace(s, i+1)
		case '}':
			return skipSpace(s, i+1) == len(s)
		default:
			return false
		}
	}
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// plainStringEnd is the index after the closing quote of the string at
// s[i] if it is printable ASCII with no escape, else -1.
func plainStringEnd(s string, i int) int {
	for j := i + 1; j < len(s); j++ {
		switch c := s[j]; {
		case c == '"':
			return j + 1
		case c == '\\' || c < 0x20 || c >= 0x7f:
			return -1
		}
	}
	return -1
}

// valueEnd is the index after the JSON value at s[i], -1 if it is not one
// whose extent is clear: a string (any content: its decoder checks it),
// an object or array (brackets matched outside strings: json.Unmarshal of
// it checks the rest), a literal, or a number's characters.
func valueEnd(s string, i int) int {
	if i >= len(s) {
		return -1
	}
	switch c := s[i]; {
	case c == '"':
		return stringEnd(s, i)
	case c == '{' || c == '[':
		depth := 0
		for j := i; j < len(s); j++ {
			switch s[j] {
			case '"':
				e := stringEnd(s, j)
				if e < 0 {
					return -1
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	case c == 't' || c == 'f' || c == 'n':
		for _, lit := range []string{"true", "false", "null"} {
			if len(s)-i >= len(lit) && s[i:i+len(lit)] == lit {
				return i + len(lit)
			}
		}
		return -1
	case c == '-' || c >= '0' && c <= '9':
		j := i + 1
		for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.' || s[j] == 'e' || s[j] == 'E' || s[j] == '+' || s[j] == '-') {
			j++
		}
		return j
	}
	return -1
}

// stringEnd is the index after the closing quote of the string at s[i],
// escapes skipped, or -1.
func stringEnd(s string, i int) int {
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// jsonString is a string value: printable ASCII without escapes as it is,
// anything else as json.Unmarshal makes it.
func jsonString(raw string) (string, bool) {
	if raw[0] == '"' && plainStringEnd(raw, 0) == len(raw) {
		return raw[1 : len(raw)-1], true
	}
	var v string
	return v, json.Unmarshal([]byte(raw), &v) == nil
}

// isJSONInt reports whether raw is an integer as JSON writes one: no sign
// but a minus, no leading zero.
func isJSONInt(raw string) bool {
	d := raw
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || (d[0] == '0' && len(d) > 1) {
		return false
	}
	for i := range len(d) {
		if d[i] < '0' || d[i] > '9' {
			return false
		}
	}
	return true
}

func jsonInt(raw string) (int64, bool) {
	if isJSONInt(raw) {
		n, err := strconv.ParseInt(raw, 10, 64)
		return n, err == nil
	}
	var v int64
	return v, json.Unmarshal([]byte(raw), &v) == nil
}

func jsonUint(raw string) (uint64, bool) {
	if raw[0] != '-' && isJSONInt(raw) {
		n, err := strconv.ParseUint(raw, 10, 64)
		return n, err == nil
	}
	var v uint64
	return v, json.Unmarshal([]byte(raw), &v) == nil
}

func jsonBool(raw string) (bool, bool) {
	switch raw {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	var v bool
	return v, json.Unmarshal([]byte(raw), &v) == nil
}
