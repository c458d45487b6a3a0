package acp

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/pilotdesk/pilotdesk/session"
)

// TestElicitReader: only elicitation/create requests are renamed; every
// other line, a long one, a notification naming the method in its text, a
// response, reaches the SDK byte for byte, however the reads are cut.
func TestElicitReader(t *testing.T) {
	long := `{"jsonrpc":"2.0","method":"session/update","params":{"text":"` + strings.Repeat("x", 200<<10) + `"}}` + "\n"
	text := `{"jsonrpc":"2.0","method":"session/update","params":{"text":"\"elicitation/create\""}}` + "\n"
	resp := `{"jsonrpc":"2.0","id":3,"result":{"method":"elicitation/create"}}` + "\n"
	req := `{"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{"sessionId":"s"}}` + "\n"
	in := long + text + resp + req + `{"last":true}`
	got, err := io.ReadAll(iotest.OneByteReader(newElicitReader(strings.NewReader(in), nil)))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(got, []byte("\n"))
	if len(lines) != 5 {
		t.Fatalf("%d lines", len(lines))
	}
	for i, want := range []string{long, text, resp} {
		if string(lines[i]) != want {
			t.Errorf("line %d changed: %.80q", i, lines[i])
		}
	}
	var msg struct {
		ID     string          `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(lines[3], &msg); err != nil || msg.Method != elicitMethod || msg.ID != "e1" || string(msg.Params) != `{"sessionId":"s"}` {
		t.Errorf("request became %s (%v)", lines[3], err)
	}
	if string(lines[4]) != `{"last":true}` {
		t.Errorf("the unterminated last line became %q", lines[4])
	}
}

// TestFieldValues: answers are checked against the field's schema and
// turned into its type, or the reason is given for the question asked
// again.
func TestFieldValues(t *testing.T) {
	parse := func(raw string) field {
		t.Helper()
		f, err := parseField("f", json.RawMessage(raw))
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		return f
	}
	text := func(s string) session.Answer { return session.Answer{Text: s, Index: -1} }
	cases := []struct {
		schema, answer string
		want           any
		problem        string
	}{
		{`{"type":"string","pattern":"^[a-z]+$"}`, "abc", "abc", ""},
		{`{"type":"string","pattern":"^[a-z]+$"}`, "ABC", nil, "“ABC” does not have the form asked for (^[a-z]+$)."},
		{`{"type":"string","pattern":"^(?=x).*$"}`, "anything", "anything", ""}, // Go cannot read it: the agent checks
		{`{"type":"string","maxLength":3}`, "four", nil, "The answer is 4 characters long; at most 3 fit."},
		{`{"type":"integer","minimum":1,"maximum":5}`, "2.5", nil, "“2.5” is not a whole number."},
		{`{"type":"integer","minimum":1,"maximum":5}`, "0", nil, "0 is less than 1."},
		{`{"type":"number"}`, "2.5", 2.5, ""},
		{`{"type":"array","items":{"enum":["go","web"]},"maxItems":1}`, "go, web", nil, "Pick at most 1."},
		{`{"type":"array","items":{"enum":["go","web"]}}`, "rust", nil, "“rust” is not one of the options."},
		{`{"type":"string","enum":["a","b"]}`, "c", nil, "“c” is not one of the choices."},
	}
	for _, c := range cases {
		v, problem := fieldValue(parse(c.schema), text(c.answer))
		if problem != c.problem || (c.problem == "" && v != c.want) {
			t.Errorf("%s %q: %v, %q; want %v, %q", c.schema, c.answer, v, problem, c.want, c.problem)
		}
	}
	if _, err := parseField("f", json.RawMessage(`{"type":"object"}`)); err == nil {
		t.Error("an object field was taken")
	}
}
