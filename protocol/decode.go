package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// MaxIDLength bounds conversation and request ids so a client cannot make the
// relay store arbitrarily long keys.
const MaxIDLength = 128

// Request is a decoded, validated client message. Data holds a pointer to the
// type's struct (*Send, *Subscribe, *List, …) or nil for ping.
type Request struct {
	Type string
	Data any
}

// ConversationID returns the conversation the request names, if any. It is
// used to attach the id to an error about the request.
func (r Request) ConversationID() string { return conversationOf(r.Data) }

type fieldKind int

const (
	kindID     fieldKind = iota // non-empty string of at most MaxIDLength bytes
	kindString                  // any string
	kindText                    // a string with some non-space content
	kindMode                    // "plan" or "act"
	kindSeq                     // an integer >= 0
	kindIndex                   // an integer >= 0
	kindBool
	kindWorkspace // {path: non-empty string, isolation?: "none" | "worktree"}
)

type field struct {
	name     string
	kind     fieldKind
	required bool
}

type schema struct {
	fields []field
	// build returns a fresh value to unmarshal the validated data into.
	build func() any
}

var schemas = map[string]schema{
	TypePing: {},
	TypeList: {fields: []field{
		{"watch", kindBool, false},
		{"limit", kindIndex, false},
		{"cursor", kindString, false},
	}, build: func() any { return new(List) }},
	TypeSubscribe: {fields: []field{
		{"conversationId", kindID, true},
		{"sinceSeq", kindSeq, false},
		{"epoch", kindString, false},
	}, build: func() any { return new(Subscribe) }},
	TypeUnsubscribe: {fields: []field{{"conversationId", kindID, true}}, build: func() any { return new(ConversationRef) }},
	TypeClose:       {fields: []field{{"conversationId", kindID, true}}, build: func() any { return new(ConversationRef) }},
	TypeDelete:      {fields: []field{{"conversationId", kindID, true}}, build: func() any { return new(ConversationRef) }},
	TypeDiff: {fields: []field{
		{"conversationId", kindID, true},
		{"checkpoint", kindString, true},
		{"path", kindString, false},
	}, build: func() any { return new(Diff) }},
	TypeRestore: {fields: []field{
		{"conversationId", kindID, true},
		{"checkpoint", kindString, true},
	}, build: func() any { return new(Restore) }},
	TypeSend: {fields: []field{
		{"conversationId", kindID, true},
		{"prompt", kindText, true},
		{"mode", kindMode, false},
		{"model", kindString, false},
		{"workspace", kindWorkspace, false},
		{"clientId", kindID, false},
	}, build: func() any { return new(Send) }},
	TypeWorkspaces: {build: func() any { return new(WorkspacesRequest) }},
	// conversationId is optional on abort: its absence is the deprecated form.
	TypeAbort: {fields: []field{{"conversationId", kindID, false}}, build: func() any { return new(Abort) }},
	TypeSetMode: {fields: []field{
		{"conversationId", kindID, true},
		{"mode", kindMode, true},
	}, build: func() any { return new(SetMode) }},
	TypeUserInputResponse: {fields: []field{
		{"conversationId", kindID, true},
		{"requestId", kindID, true},
		{"answer", kindString, true},
		{"wasFreeform", kindBool, false},
		{"index", kindIndex, false},
		{"rejected", kindBool, false},
	}, build: func() any { return new(UserInputResponse) }},
}

// KnownClientType reports whether t is a client-to-server message type.
func KnownClientType(t string) bool {
	_, ok := schemas[t]
	return ok
}

// ClientTypes lists every client-to-server message type.
func ClientTypes() []string {
	out := make([]string, 0, len(schemas))
	for t := range schemas {
		out = append(out, t)
	}
	return out
}

// RequiredFields lists the required fields of a client message type.
func RequiredFields(t string) []string {
	var out []string
	for _, f := range schemas[t].fields {
		if f.required {
			out = append(out, f.name)
		}
	}
	return out
}

// DecodeRequest parses and validates one client frame. Any problem is returned
// as an *Error whose Code is one of the protocol's error codes; Type is set to
// the frame's type when it could be read.
func DecodeRequest(frame []byte) (Request, *Error) {
	if len(frame) > MaxFrameBytes {
		return Request{}, &Error{Code: CodeTooLarge, Message: fmt.Sprintf("frame of %d bytes is over the %d byte limit", len(frame), MaxFrameBytes)}
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(frame, &top); err != nil || top == nil {
		return Request{}, &Error{Code: CodeInvalidJSON, Message: "frame is not a JSON object: " + describeJSONError(frame, err)}
	}
	if key, dup := duplicateKey(frame); dup { // strict.go
		return Request{}, &Error{Code: CodeInvalidJSON, Message: fmt.Sprintf("the frame holds the key %q twice: send each key once", truncate(key, 64))}
	}
	rawType, ok := top["type"]
	if !ok {
		return Request{}, &Error{Code: CodeInvalidMessage, Message: `frame has no "type": send {"type": string, "data"?: object}`}
	}
	var msgType string
	// null unmarshals into a string without error, but it is no string.
	if err := json.Unmarshal(rawType, &msgType); err != nil || bytes.Equal(bytes.TrimSpace(rawType), []byte("null")) {
		return Request{}, &Error{Code: CodeInvalidMessage, Message: `"type" must be a string`}
	}
	req := Request{Type: msgType}
	sc, known := schemas[msgType]
	if !known {
		return req, &Error{Code: CodeUnknownType, Type: msgType, Message: fmt.Sprintf("unknown message type %q", truncate(msgType, 64))}
	}
	fields := map[string]json.RawMessage{}
	if rawData, ok := top["data"]; ok {
		if !isJSONObject(rawData) {
			// A null data is as good as none for messages without required
			// fields (ping; copilot:list, whose fields are all optional).
			if !(bytes.Equal(bytes.TrimSpace(rawData), []byte("null")) && len(RequiredFields(msgType)) == 0) {
				return req, &Error{Code: CodeInvalidMessage, Type: msgType, Message: `"data" must be an object`}
			}
		} else if err := json.Unmarshal(rawData, &fields); err != nil {
			return req, &Error{Code: CodeInvalidMessage, Type: msgType, Message: `"data" must be an object`}
		}
	}
	for _, f := range sc.fields {
		raw, present := fields[f.name]
		if !present || (bytes.Equal(bytes.TrimSpace(raw), []byte("null")) && f.required) {
			if f.required {
				return req, &Error{Code: CodeMissingField, Type: msgType, Message: fmt.Sprintf("%s needs data.%s", msgType, f.name)}
			}
			continue
		}
		if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			delete(fields, f.name) // an optional field given as null is absent
			continue
		}
		if msg := checkField(f, raw); msg != "" {
			return req, &Error{Code: CodeInvalidField, Type: msgType, Message: fmt.Sprintf("%s: data.%s %s", msgType, f.name, msg)}
		}
	}
	if sc.build == nil {
		return req, nil
	}
	v := sc.build()
	// Re-encode only the validated fields so unknown fields and nulls never
	// reach the struct.
	clean := make(map[string]json.RawMessage, len(sc.fields))
	for _, f := range sc.fields {
		if raw, ok := fields[f.name]; ok {
			clean[f.name] = raw
		}
	}
	buf, _ := json.Marshal(clean)
	if err := json.Unmarshal(buf, v); err != nil {
		return req, &Error{Code: CodeInvalidField, Type: msgType, Message: fmt.Sprintf("%s: %v", msgType, err)}
	}
	req.Data = v
	return req, nil
}

func checkField(f field, raw json.RawMessage) string {
	switch f.kind {
	case kindID, kindString, kindText, kindMode:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "must be a string"
		}
		switch f.kind {
		case kindID:
			if s == "" {
				return "must not be empty"
			}
			if loneSurrogate(raw) { // strict.go
				return `must not hold half of a UTF-16 surrogate pair (such as "\ud800"): it would read as U+FFFD`
			}
			if len(s) > MaxIDLength {
				return fmt.Sprintf("must be at most %d bytes", MaxIDLength)
			}
			if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				return "must not contain control characters"
			}
		case kindText:
			if strings.TrimSpace(s) == "" {
				return "must not be empty"
			}
		case kindMode:
			if !Mode(s).Valid() {
				return fmt.Sprintf(`must be "plan" or "act", not %q`, truncate(s, 32))
			}
		}
	case kindSeq, kindIndex:
		var n float64
		if err := json.Unmarshal(raw, &n); err != nil {
			return "must be a number"
		}
		if n < 0 || n != math.Trunc(n) || n > 1<<53 {
			return "must be a whole number of 0 or more"
		}
	case kindBool:
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return "must be true or false"
		}
	case kindWorkspace:
		return checkWorkspace(raw)
	}
	return ""
}

// checkWorkspace checks the shape of copilot:send's workspace; whether
// the folder may be used is the relay's to say.
func checkWorkspace(raw json.RawMessage) string {
	if !isJSONObject(raw) {
		return `must be an object {"path": string, "isolation"?: "none" | "worktree"}`
	}
	var w map[string]json.RawMessage
	if err := json.Unmarshal(raw, &w); err != nil {
		return `must be an object {"path": string, "isolation"?: "none" | "worktree"}`
	}
	var path string
	if p, ok := w["path"]; !ok || json.Unmarshal(p, &path) != nil || bytes.Equal(bytes.TrimSpace(p), []byte("null")) {
		return "must have a string path (an absolute folder on the relay's machine)"
	}
	if path == "" {
		return "path must not be empty"
	}
	if len(path) > MaxPathLength {
		return fmt.Sprintf("path must be at most %d bytes", MaxPathLength)
	}
	if strings.ContainsFunc(path, func(r rune) bool { return r == 0 }) {
		return "path must not contain a NUL character"
	}
	if iso, ok := w["isolation"]; ok && !bytes.Equal(bytes.TrimSpace(iso), []byte("null")) {
		var s string
		if json.Unmarshal(iso, &s) != nil || (s != IsolationNone && s != IsolationWorktree) {
			return fmt.Sprintf(`isolation must be %q or %q`, IsolationNone, IsolationWorktree)
		}
	}
	return ""
}

// MaxPathLength bounds a workspace's path (PATH_MAX on Linux).
const MaxPathLength = 4096

func isJSONObject(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{'
}

func describeJSONError(frame []byte, err error) string {
	if err == nil {
		return "it is JSON null"
	}
	if !utf8.Valid(frame) {
		return "it is not valid UTF-8"
	}
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return "it is a JSON " + typeErr.Value
	}
	return err.Error()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
