package reliability

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/google/uuid"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
)

// validField is a valid value for each field name the client messages use.
// A field the protocol adds later without a value here fails the test, so
// the table stays complete.
var validField = map[string]any{
	"conversationId": uuid.NewString(),
	"sinceSeq":       0,
	"prompt":         "hello",
	"mode":           "plan",
	"model":          "gpt-5",
	"requestId":      uuid.NewString(),
	"answer":         "yes",
	"wasFreeform":    false,
	"index":          0,
	"rejected":       false,
	"checkpoint":     "4bd4a24f1d20e5b58b130324c1a0e7f3d9b2a6c8",
	"path":           "main.go",
}

// optionalFields are the optional fields of each client message type
// (docs/protocol.md, Client to server); protocol.RequiredFields lists the required ones.
var optionalFields = map[string][]string{
	protocol.TypeSubscribe:         {"sinceSeq"},
	protocol.TypeSend:              {"mode", "model"},
	protocol.TypeAbort:             {"conversationId"},
	protocol.TypeUserInputResponse: {"wasFreeform", "index", "rejected"},
	protocol.TypeDiff:              {"path"},
}

// wrongTypes are values of the wrong JSON type for a field whose valid
// value is v: the other scalar kinds, an object, an array.
func wrongTypes(v any) []any {
	out := []any{map[string]any{"value": v}, []any{v}}
	switch v.(type) {
	case string:
		out = append(out, 42, true)
	case int, float64:
		out = append(out, "7", false)
	case bool:
		out = append(out, "true", 1)
	}
	return out
}

// badInputClient connects to a real relay binary for the bad-input tests.
func badInputClient(t *testing.T) *relaytest.Client {
	t.Helper()
	const token = "bad-input-token-16180339"
	p := startRelay(t, nil, "--agent", "script", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--token", token)
	return relaytest.Dial(t, p.URL, token)
}

// expectError reads the one error a bad frame gets, checks its code (and
// the offending type when typ is not empty), and checks with a ping that
// nothing else came and the connection is open.
func expectError(t *testing.T, cl *relaytest.Client, what string, codes []string, typ string) {
	t.Helper()
	f, ok := cl.TryNext(timeout)
	if !ok {
		t.Fatalf("%s: no error; connection: %v", what, cl.Err())
	}
	if f.Type != "error" {
		t.Fatalf("%s: got %.300s, want an error", what, f.Raw)
	}
	m := dataOf(t, f)
	if !slices.Contains(codes, m["code"].(string)) {
		t.Errorf("%s: %s, want code %s", what, f.Raw, strings.Join(codes, " or "))
	}
	if msg, _ := m["message"].(string); len(msg) < 10 {
		t.Errorf("%s: %s: the message is too short to act on", what, f.Raw)
	}
	if typ != "" && m["type"] != typ {
		t.Errorf("%s: %s, want type %s", what, f.Raw, typ)
	}
	expectPong(t, cl, what)
}

func frame(t *testing.T, typ string, data any) []byte {
	t.Helper()
	env := map[string]any{"type": typ}
	if data != nil {
		env["data"] = data
	}
	b, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEveryMessageBadFields sends every client message type (from
// protocol.ClientTypes, so a new type is covered too) to the real relay with
// each required field missing, null, or of each wrong JSON type, and each
// optional field of a wrong type: each frame gets one `error`
// (missing_field or invalid_field) and the connection stays open.
func TestEveryMessageBadFields(t *testing.T) {
	t.Parallel()
	cl := badInputClient(t)
	types := protocol.ClientTypes()
	slices.Sort(types)
	sent := 0
	for _, typ := range types {
		required := protocol.RequiredFields(typ)
		fields := append(slices.Clone(required), optionalFields[typ]...)
		valid := map[string]any{}
		for _, name := range fields {
			v, ok := validField[name]
			if !ok {
				t.Fatalf("%s.%s: no valid example value for this field; add one to validField", typ, name)
			}
			valid[name] = v
		}
		// The test's own premise: the full valid message decodes.
		if _, perr := protocol.DecodeRequest(frame(t, typ, valid)); perr != nil {
			t.Fatalf("%s: the example message %s is not valid: %v", typ, frame(t, typ, valid), perr)
		}

		for _, name := range required {
			without := func(replace any, drop bool) map[string]any {
				d := map[string]any{}
				for k, v := range valid {
					d[k] = v
				}
				if drop {
					delete(d, name)
				} else {
					d[name] = replace
				}
				return d
			}
			cl.SendRaw(frame(t, typ, without(nil, true)))
			expectError(t, cl, typ+" without "+name, []string{protocol.CodeMissingField}, typ)
			cl.SendRaw(frame(t, typ, without(nil, false)))
			expectError(t, cl, typ+" with "+name+" null", []string{protocol.CodeMissingField}, typ)
			sent += 2
		}
		if len(required) > 0 {
			cl.SendRaw(frame(t, typ, nil))
			expectError(t, cl, typ+" without data", []string{protocol.CodeMissingField}, typ)
			cl.SendRaw(frame(t, typ, map[string]any{}))
			expectError(t, cl, typ+" with empty data", []string{protocol.CodeMissingField}, typ)
			sent += 2
		}
		for _, name := range fields {
			for _, bad := range wrongTypes(validField[name]) {
				d := map[string]any{}
				for k, v := range valid {
					d[k] = v
				}
				d[name] = bad
				raw := frame(t, typ, d)
				cl.SendRaw(raw)
				expectError(t, cl, fmt.Sprintf("%s with %s = %s", typ, name, mustJSON(bad)), []string{protocol.CodeInvalidField}, typ)
				sent++
			}
		}
		// data of the wrong type altogether.
		for _, data := range []string{`[1]`, `"x"`, `7`, `true`} {
			cl.SendRaw([]byte(`{"type":"` + typ + `","data":` + data + `}`))
			expectError(t, cl, typ+" with data "+data, []string{protocol.CodeInvalidMessage}, typ)
			sent++
		}
	}
	t.Logf("%d bad frames over %d message types, one error each, the connection open throughout", sent, len(types))
	if sent < 50 {
		t.Errorf("only %d bad frames were sent: the type list looks empty", sent)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestBadFramesReal sends frames that are not messages at all to the real
// relay: each gets one error with the right code and the connection stays.
func TestBadFramesReal(t *testing.T) {
	t.Parallel()
	cl := badInputClient(t)
	cases := []struct {
		name  string
		frame []byte
		codes []string
	}{
		{"invalid JSON", []byte(`{"type":`), []string{protocol.CodeInvalidJSON}},
		{"not JSON at all", []byte(`hello relay`), []string{protocol.CodeInvalidJSON}},
		{"empty frame", []byte(``), []string{protocol.CodeInvalidJSON}},
		{"JSON array", []byte(`[{"type":"ping"}]`), []string{protocol.CodeInvalidJSON}},
		{"JSON string", []byte(`"ping"`), []string{protocol.CodeInvalidJSON}},
		{"JSON number", []byte(`42`), []string{protocol.CodeInvalidJSON}},
		{"JSON null", []byte(`null`), []string{protocol.CodeInvalidJSON}},
		{"two objects", []byte(`{"type":"ping"}{"type":"ping"}`), []string{protocol.CodeInvalidJSON}},
		{"no type", []byte(`{"data":{}}`), []string{protocol.CodeInvalidMessage}},
		{"type a number", []byte(`{"type":5}`), []string{protocol.CodeInvalidMessage}},
		{"type null", []byte(`{"type":null}`), []string{protocol.CodeInvalidMessage}},
		{"unknown type", []byte(`{"type":"copilot:launch_missiles"}`), []string{protocol.CodeUnknownType}},
		{"server type sent by a client", []byte(`{"type":"copilot:delta","data":{"conversationId":"c","content":"x"}}`), []string{protocol.CodeUnknownType}},
		{"deep nesting", []byte(`{"type":"ping","data":` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + `}`), []string{protocol.CodeInvalidJSON, protocol.CodeInvalidMessage}},
	}
	for _, tc := range cases {
		cl.SendRaw(tc.frame)
		expectError(t, cl, tc.name, tc.codes, "")
	}

	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// A binary frame, even one holding a valid message.
	if err := cl.Conn.Write(ctx, websocket.MessageBinary, []byte(`{"type":"ping"}`)); err != nil {
		t.Fatal(err)
	}
	expectError(t, cl, "binary frame", []string{protocol.CodeInvalidMessage, protocol.CodeInvalidJSON}, "")

	// Over 1 MiB: too_large, in text and in binary, once or several times.
	big := bytes.Repeat([]byte("a"), protocol.MaxFrameBytes+1)
	copy(big, `{"type":"copilot:send","data":{"conversationId":"c","prompt":"`)
	cl.SendRaw(big)
	expectError(t, cl, "a text frame of 1 MiB + 1 byte", []string{protocol.CodeTooLarge}, "")
	if err := cl.Conn.Write(ctx, websocket.MessageBinary, big); err != nil {
		t.Fatal(err)
	}
	expectError(t, cl, "a binary frame of 1 MiB + 1 byte", []string{protocol.CodeTooLarge}, "")
	huge := bytes.Repeat([]byte(" "), 8<<20)
	for i := range 3 {
		cl.SendRaw(huge)
		expectError(t, cl, fmt.Sprintf("an 8 MiB frame (#%d)", i+1), []string{protocol.CodeTooLarge}, "")
	}

	// Exactly 1 MiB is within the limit: a ping padded to it is answered.
	ping := append([]byte(`{"type":"ping"}`), bytes.Repeat([]byte(" "), protocol.MaxFrameBytes-len(`{"type":"ping"}`))...)
	cl.SendRaw(ping)
	if f := cl.Next(); f.Type != "pong" {
		t.Fatalf("a ping of exactly 1 MiB got %.200s, want pong", f.Raw)
	}

	// After all that the connection still does real work.
	id := uuid.NewString()
	cl.Send("copilot:subscribe", map[string]any{"conversationId": id})
	if f := cl.Next(); f.Type != "copilot:subscribed" || f.Field("conversationId") != id {
		t.Fatalf("subscribe after the bad frames: %s", f.Raw)
	}
}

// TestBadUTF8Real: a text frame that is not valid UTF-8 closes the
// connection with 1007 (RFC 6455), where it used to get an error reply and,
// worse, a conversationId with an invalid byte became U+FFFD, so
// "ab\xffcd" and "ab\ufffdcd" named one conversation. Nothing the frame
// asked for happens, and other connections are not affected.
func TestBadUTF8Real(t *testing.T) {
	t.Parallel()
	const token = "bad-utf8-token-14142135"
	p := startRelay(t, nil, "--agent", "script", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--token", token)
	for _, bad := range [][]byte{
		[]byte("{\"type\":\"copilot:send\",\"data\":{\"conversationId\":\"ab\xffcd\",\"prompt\":\"hello\"}}"),
		[]byte("{\"type\":\"\xff\xfe\"}"),
		[]byte("{\"type\":\"ping\",\"data\":{\"x\":\"\xed\xa0\x80\"}}"), // a UTF-16 surrogate, encoded
	} {
		cl := relaytest.Dial(t, p.URL, token)
		cl.SendRaw(bad)
		code, reason := cl.WaitClosed()
		if code != websocket.StatusInvalidFramePayloadData {
			t.Errorf("%q: closed with %d %q, want 1007", bad, code, reason)
		}
		if f, ok := cl.TryNext(0); ok {
			t.Errorf("%q: answered with %s before the close", bad, f.Raw)
		}
	}
	other := relaytest.Dial(t, p.URL, token)
	other.Send("copilot:list", nil)
	f := other.Next()
	if f.Type != "copilot:conversations" {
		t.Fatalf("list: %s", f.Raw)
	}
	if convs := dataOf(t, f)["conversations"].([]any); len(convs) != 0 {
		t.Fatalf("the frame with an invalid id started a conversation: %s", f.Raw)
	}
}
