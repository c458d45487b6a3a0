package protocol

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestDecodeRequestErrors(t *testing.T) {
	tests := []struct {
		name  string
		frame string
		code  string
		typ   string
	}{
		{"not json", `hello`, CodeInvalidJSON, ""},
		{"truncated json", `{"type":"ping"`, CodeInvalidJSON, ""},
		{"json array", `[1,2]`, CodeInvalidJSON, ""},
		{"json string", `"ping"`, CodeInvalidJSON, ""},
		{"json null", `null`, CodeInvalidJSON, ""},
		{"duplicate type", `{"type":"ping","type":"copilot:delete"}`, CodeInvalidJSON, ""},
		{"duplicate data field", `{"type":"copilot:delete","data":{"conversationId":"a","conversationId":"b"}}`, CodeInvalidJSON, ""},
		{"duplicate key deeper", `{"type":"ping","data":{"x":[{"k":1,"k":2}]}}`, CodeInvalidJSON, ""},
		{"lone high surrogate in an id", `{"type":"copilot:subscribe","data":{"conversationId":"a\ud800b"}}`, CodeInvalidField, TypeSubscribe},
		{"lone low surrogate in an id", `{"type":"copilot:delete","data":{"conversationId":"\udc00"}}`, CodeInvalidField, TypeDelete},
		{"high surrogate then not low", `{"type":"copilot:delete","data":{"conversationId":"\ud800\u0041"}}`, CodeInvalidField, TypeDelete},
		{"no type", `{"data":{}}`, CodeInvalidMessage, ""},
		{"numeric type", `{"type":7}`, CodeInvalidMessage, ""},
		{"data not object", `{"type":"copilot:send","data":[1]}`, CodeInvalidMessage, TypeSend},
		{"data a string", `{"type":"copilot:subscribe","data":"c1"}`, CodeInvalidMessage, TypeSubscribe},
		{"unknown type", `{"type":"copilot:dance"}`, CodeUnknownType, "copilot:dance"},
		{"server type sent by client", `{"type":"copilot:delta","data":{}}`, CodeUnknownType, TypeDelta},
		{"send without data", `{"type":"copilot:send"}`, CodeMissingField, TypeSend},
		{"send without prompt", `{"type":"copilot:send","data":{"conversationId":"c1"}}`, CodeMissingField, TypeSend},
		{"send with null prompt", `{"type":"copilot:send","data":{"conversationId":"c1","prompt":null}}`, CodeMissingField, TypeSend},
		{"send with numeric prompt", `{"type":"copilot:send","data":{"conversationId":"c1","prompt":5}}`, CodeInvalidField, TypeSend},
		{"send with blank prompt", `{"type":"copilot:send","data":{"conversationId":"c1","prompt":"  "}}`, CodeInvalidField, TypeSend},
		{"send with bad mode", `{"type":"copilot:send","data":{"conversationId":"c1","prompt":"hi","mode":"yolo"}}`, CodeInvalidField, TypeSend},
		{"send with numeric model", `{"type":"copilot:send","data":{"conversationId":"c1","prompt":"hi","model":1}}`, CodeInvalidField, TypeSend},
		{"workspace a string", `{"type":"copilot:send","data":{"conversationId":"c1","prompt":"hi","workspace":"/tmp"}}`, CodeInvalidField, TypeSend},
		{"workspace without path", `{"type":"copilot:send","data":{"conversationId":"c1","prompt":"hi","workspace":{}}}`, CodeInvalidField, TypeSend},
		{"workspace numeric path", `{"type":"copilot:send","data":{"conversationId":"c1","prompt":"hi","workspace":{"path":7}}}`, CodeInvalidField, TypeSend},
		{"workspace empty path", `{"type":"copilot:send","data":{"conversationId":"c1","prompt":"hi","workspace":{"path":""}}}`, CodeInvalidField, TypeSend},
		{"workspace bad isolation", `{"type":"copilot:send","data":{"conversationId":"c1","prompt":"hi","workspace":{"path":"/tmp","isolation":"docker"}}}`, CodeInvalidField, TypeSend},
		{"empty conversation id", `{"type":"copilot:subscribe","data":{"conversationId":""}}`, CodeInvalidField, TypeSubscribe},
		{"huge conversation id", `{"type":"copilot:subscribe","data":{"conversationId":"` + strings.Repeat("x", MaxIDLength+1) + `"}}`, CodeInvalidField, TypeSubscribe},
		{"negative sinceSeq", `{"type":"copilot:subscribe","data":{"conversationId":"c1","sinceSeq":-1}}`, CodeInvalidField, TypeSubscribe},
		{"fractional sinceSeq", `{"type":"copilot:subscribe","data":{"conversationId":"c1","sinceSeq":1.5}}`, CodeInvalidField, TypeSubscribe},
		{"string sinceSeq", `{"type":"copilot:subscribe","data":{"conversationId":"c1","sinceSeq":"3"}}`, CodeInvalidField, TypeSubscribe},
		{"set_mode without mode", `{"type":"copilot:set_mode","data":{"conversationId":"c1"}}`, CodeMissingField, TypeSetMode},
		{"set_mode bad mode", `{"type":"copilot:set_mode","data":{"conversationId":"c1","mode":"PLAN"}}`, CodeInvalidField, TypeSetMode},
		{"abort numeric id", `{"type":"copilot:abort","data":{"conversationId":3}}`, CodeInvalidField, TypeAbort},
		{"response without answer", `{"type":"copilot:user_input_response","data":{"conversationId":"c1","requestId":"r1"}}`, CodeMissingField, TypeUserInputResponse},
		{"response bad wasFreeform", `{"type":"copilot:user_input_response","data":{"conversationId":"c1","requestId":"r1","answer":"x","wasFreeform":"yes"}}`, CodeInvalidField, TypeUserInputResponse},
		{"response negative index", `{"type":"copilot:user_input_response","data":{"conversationId":"c1","requestId":"r1","answer":"x","index":-2}}`, CodeInvalidField, TypeUserInputResponse},
		{"too large", `{"type":"ping","data":{"pad":"` + strings.Repeat("x", MaxFrameBytes) + `"}}`, CodeTooLarge, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeRequest([]byte(tt.frame))
			if err == nil {
				t.Fatalf("DecodeRequest(%.80q) = nil error, want %s", tt.frame, tt.code)
			}
			if err.Code != tt.code {
				t.Errorf("code = %q (%s), want %q", err.Code, err.Message, tt.code)
			}
			if err.Type != tt.typ {
				t.Errorf("type = %q, want %q", err.Type, tt.typ)
			}
			if strings.TrimSpace(err.Message) == "" {
				t.Error("message is empty; it must tell a person what to fix")
			}
		})
	}
}

func TestDecodeRequestValid(t *testing.T) {
	req, err := DecodeRequest([]byte(`{"type":"copilot:send","data":{"conversationId":"c1","prompt":"hi","mode":"plan","model":"gpt-5","extra":[1]}}`))
	if err != nil {
		t.Fatal(err)
	}
	send, ok := req.Data.(*Send)
	if !ok {
		t.Fatalf("data is %T, want *Send", req.Data)
	}
	if *send != (Send{ConversationID: "c1", Prompt: "hi", Mode: ModePlan, Model: "gpt-5"}) {
		t.Errorf("send = %+v", *send)
	}
	if req.ConversationID() != "c1" {
		t.Errorf("ConversationID() = %q", req.ConversationID())
	}

	for frame, want := range map[string]*WorkspaceRequest{
		`{"type":"copilot:send","data":{"conversationId":"c1","prompt":"hi","workspace":{"path":"/srv/a","isolation":"worktree","x":1}}}`: {Path: "/srv/a", Isolation: IsolationWorktree},
		`{"type":"copilot:send","data":{"conversationId":"c1","prompt":"hi","workspace":{"path":"rel","isolation":null}}}`:                {Path: "rel"},
		`{"type":"copilot:send","data":{"conversationId":"c1","prompt":"hi","workspace":null}}`:                                           nil,
	} {
		req, err := DecodeRequest([]byte(frame))
		if err != nil {
			t.Fatalf("DecodeRequest(%s): %v", frame, err)
		}
		got := req.Data.(*Send).Workspace
		if (got == nil) != (want == nil) || (got != nil && *got != *want) {
			t.Errorf("DecodeRequest(%s).Workspace = %+v, want %+v", frame, got, want)
		}
	}
	if req, err := DecodeRequest([]byte(`{"type":"copilot:workspaces"}`)); err != nil || req.Type != TypeWorkspaces {
		t.Errorf("copilot:workspaces without data: %+v, %v", req, err)
	}

	for _, frame := range []string{`{"type":"ping"}`, `{"type":"ping","data":null}`, `{"type":"ping","data":{}}`} {
		req, err := DecodeRequest([]byte(frame))
		if err != nil || req.Data != nil {
			t.Errorf("DecodeRequest(%s) = %+v, %v; want no data, no error", frame, req, err)
		}
	}
	// copilot:list has only optional fields: no data is the first page.
	for frame, want := range map[string]List{
		`{"type":"copilot:list"}`:                                                 {},
		`{"type":"copilot:list","data":{}}`:                                       {},
		`{"type":"copilot:list","data":null}`:                                     {},
		`{"type":"copilot:list","data":{"limit":5,"cursor":"abc","watch":false}}`: {Limit: 5, Cursor: "abc", Watch: new(bool)},
	} {
		req, err := DecodeRequest([]byte(frame))
		l, ok := req.Data.(*List)
		if err != nil || !ok || l.Limit != want.Limit || l.Cursor != want.Cursor || (l.Watch == nil) != (want.Watch == nil) {
			t.Errorf("DecodeRequest(%s) = %+v, %v; want %+v", frame, req.Data, err, want)
		}
	}
	if n := (&List{Limit: 1000}).PageSize(); n != MaxListLimit {
		t.Errorf("a limit over the maximum gives pages of %d", n)
	}

	req, err = DecodeRequest([]byte(`{"type":"copilot:subscribe","data":{"conversationId":"c1","sinceSeq":0}}`))
	if err != nil {
		t.Fatal(err)
	}
	if sub := req.Data.(*Subscribe); sub.SinceSeq == nil || *sub.SinceSeq != 0 {
		t.Errorf("sinceSeq 0 must be kept as present: %+v", sub)
	}
	req, err = DecodeRequest([]byte(`{"type":"copilot:subscribe","data":{"conversationId":"c1","sinceSeq":null}}`))
	if err != nil {
		t.Fatal(err)
	}
	if sub := req.Data.(*Subscribe); sub.SinceSeq != nil {
		t.Errorf("a null sinceSeq is absent: %+v", sub)
	}

	req, err = DecodeRequest([]byte(`{"type":"copilot:abort","data":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	if a := req.Data.(*Abort); a.ConversationID != "" {
		t.Errorf("abort without conversationId decoded as %+v", a)
	}

	req, err = DecodeRequest([]byte(`{"type":"copilot:user_input_response","data":{"conversationId":"c1","requestId":"r1","answer":"blue","wasFreeform":false,"index":1,"rejected":false}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp := req.Data.(*UserInputResponse)
	if resp.Answer != "blue" || resp.Index == nil || *resp.Index != 1 || resp.WasFreeform == nil || *resp.WasFreeform {
		t.Errorf("response = %+v", resp)
	}
}

// Every client type's required fields are reported missing one at a time,
// and a wrong JSON type in each is reported as invalid.
func TestDecodeRequestEachRequiredField(t *testing.T) {
	valid := map[string]map[string]any{
		TypeSubscribe:         {"conversationId": "c1", "sinceSeq": 2},
		TypeUnsubscribe:       {"conversationId": "c1"},
		TypeSend:              {"conversationId": "c1", "prompt": "hi", "mode": "act"},
		TypeAbort:             {"conversationId": "c1"},
		TypeSetMode:           {"conversationId": "c1", "mode": "plan"},
		TypeUserInputResponse: {"conversationId": "c1", "requestId": "r1", "answer": "x"},
		TypeClose:             {"conversationId": "c1"},
		TypeDelete:            {"conversationId": "c1"},
		TypeDiff:              {"conversationId": "c1", "checkpoint": "0123"},
		TypeRestore:           {"conversationId": "c1", "checkpoint": "0123"},
	}
	for _, typ := range ClientTypes() {
		data, ok := valid[typ]
		if !ok {
			if len(RequiredFields(typ)) > 0 {
				t.Errorf("no valid example for %s", typ)
			}
			continue
		}
		frame, _ := json.Marshal(map[string]any{"type": typ, "data": data})
		if _, err := DecodeRequest(frame); err != nil {
			t.Errorf("%s: valid frame refused: %v", typ, err)
		}
		for _, name := range RequiredFields(typ) {
			without := map[string]any{}
			wrong := map[string]any{}
			for k, v := range data {
				if k != name {
					without[k] = v
				}
				wrong[k] = v
			}
			wrong[name] = []int{1}
			frame, _ := json.Marshal(map[string]any{"type": typ, "data": without})
			if _, err := DecodeRequest(frame); err == nil || err.Code != CodeMissingField {
				t.Errorf("%s without %s: got %v, want %s", typ, name, err, CodeMissingField)
			}
			frame, _ = json.Marshal(map[string]any{"type": typ, "data": wrong})
			if _, err := DecodeRequest(frame); err == nil || err.Code != CodeInvalidField {
				t.Errorf("%s with an array for %s: got %v, want %s", typ, name, err, CodeInvalidField)
			}
		}
	}
}

// TestEncodeKeepsMarkup: <, > and & leave as they are, not as six-byte
// escapes, so a prompt of them does not grow six-fold on the wire.
func TestEncodeKeepsMarkup(t *testing.T) {
	b, err := Encode(TypeDelta, &Delta{Header: Header{ConversationID: "c", Seq: 1}, MessageID: "m", Content: "<a & b>"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"type":"copilot:delta","data":{"conversationId":"c","seq":1,"messageId":"m","content":"<a & b>"}}`; string(b) != want {
		t.Fatalf("Encode = %s, want %s", b, want)
	}
}

func TestEncode(t *testing.T) {
	b, err := Encode(TypePong, nil)
	if err != nil || string(b) != `{"type":"pong"}` {
		t.Errorf("Encode(pong) = %s, %v", b, err)
	}
	b, err = Encode(TypeDelta, Delta{Header: Header{ConversationID: "c1", Seq: 4}, MessageID: "m", Content: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"type":"copilot:delta","data":{"conversationId":"c1","seq":4,"messageId":"m","content":"hi"}}`
	if string(b) != want {
		t.Errorf("Encode(delta) = %s, want %s", b, want)
	}
}

var validCodes = map[string]bool{
	CodeInvalidJSON: true, CodeInvalidMessage: true, CodeUnknownType: true, CodeMissingField: true,
	CodeInvalidField: true, CodeTooLarge: true,
}

// FuzzDecodeRequest: the decoder never panics, every refusal carries a code the
// protocol defines and a message, and every accepted frame has the data its
// type needs.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"type":"ping"}`, `{"type":"copilot:list","data":null}`,
		`{"type":"copilot:send","data":{"conversationId":"c1","prompt":"hi","mode":"plan"}}`,
		`{"type":"copilot:subscribe","data":{"conversationId":"c1","sinceSeq":3}}`,
		`{"type":"copilot:user_input_response","data":{"conversationId":"c","requestId":"r","answer":"a","index":0,"rejected":true}}`,
		`{"type":"copilot:abort"}`, `{"type":"copilot:set_mode","data":{"conversationId":"c","mode":"act"}}`,
		`[]`, `{}`, `{"type":null}`, "\xff\xfe", `{"type":"copilot:send","data":{"prompt":{"a":1}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		req, err := DecodeRequest(frame)
		if err != nil {
			if !validCodes[err.Code] {
				t.Fatalf("unexpected code %q for %q", err.Code, frame)
			}
			if err.Message == "" {
				t.Fatalf("empty message for %q", frame)
			}
			return
		}
		if !KnownClientType(req.Type) {
			t.Fatalf("accepted unknown type %q", req.Type)
		}
		if len(RequiredFields(req.Type)) > 0 && req.Data == nil {
			t.Fatalf("accepted %q without data", req.Type)
		}
		if id := req.ConversationID(); len(id) > MaxIDLength {
			t.Fatalf("accepted an id of %d bytes", len(id))
		}
	})
}

// Keys repeated in different objects, a whole surrogate pair and an
// escaped U+FFFD are all fine: only a key twice in one object and half a
// pair in an id are refused (TestDecodeRequestErrors).
func TestDecodeRequestStrictButFair(t *testing.T) {
	for _, frame := range []string{
		`{"type":"ping","data":{"a":{"k":1},"b":{"k":2},"c":[{"k":1},{"k":2}]}}`,
		`{"type":"copilot:delete","data":{"conversationId":"pair \ud83d\ude00"}}`,
		`{"type":"copilot:delete","data":{"conversationId":"\ufffd"}}`,
		`{"type":"copilot:send","data":{"conversationId":"c","prompt":"text with a lone \ud800 is only text"}}`,
		`{"type":"copilot:delete","data":{"conversationId":"back\\ud800slash"}}`,
	} {
		if _, err := DecodeRequest([]byte(frame)); err != nil {
			t.Errorf("%s: %v", frame, err)
		}
	}
}

// Encode writes the envelope itself (a buffer kept between calls, the
// type quoted by hand when it needs no escaping): its frames are byte for
// byte what json.Encoder makes of the two-field struct without escaping
// markup, for types that need escaping and data of every shape, and a
// value that cannot be encoded fails without spoiling the next frame.
func TestEncodeIsTheStructsJSON(t *testing.T) {
	reference := func(msgType string, data any) string {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		var err error
		if data == nil {
			err = enc.Encode(struct {
				Type string `json:"type"`
			}{msgType})
		} else {
			err = enc.Encode(struct {
				Type string `json:"type"`
				Data any    `json:"data"`
			}{msgType, data})
		}
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSuffix(buf.String(), "\n")
	}
	var nilDelta *Delta
	cases := []struct {
		typ  string
		data any
	}{
		{TypePong, nil},
		{TypeDelta, &Delta{Header: Header{ConversationID: "c", Seq: 7}, MessageID: "m", Content: "<b> & \"q\" \\ \u2028 \x01 é 😀"}},
		{TypeDelta, nilDelta},
		{TypeError, Error{Code: CodeLimit, Message: "too many"}},
		{"odd \"type\" \\ é \x7f <x>", map[string]any{"a": []int{1, 2}, "b": nil}},
		{"", "a string"},
		{"tab\there", 3.5},
		{`say "hi" \ <x>`, true},
	}
	for _, c := range cases {
		got, err := Encode(c.typ, c.data)
		if err != nil {
			t.Fatalf("Encode(%q, %#v): %v", c.typ, c.data, err)
		}
		if want := reference(c.typ, c.data); string(got) != want {
			t.Errorf("Encode(%q, %#v)\n got %s\nwant %s", c.typ, c.data, got, want)
		}
	}
	if _, err := Encode(TypeDelta, map[string]any{"c": make(chan int)}); err == nil {
		t.Fatal("Encode of a channel succeeded")
	}
	got, err := Encode(TypePong, nil)
	if err != nil || string(got) != `{"type":"pong"}` {
		t.Fatalf("Encode after a failure = %s, %v", got, err)
	}
}
