package acp

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"testing/iotest"
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
	got, err := io.ReadAll(iotest.OneByteReader(newElicitReader(strings.NewReader(in))))
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
