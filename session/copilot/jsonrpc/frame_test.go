package jsonrpc

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
)

func frame(body string) string {
	return "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
}

// readAll reads frames until an error and returns the bodies, the warnings
// and the final error.
func readAll(input string, max int) (bodies []string, warnings []string, err error) {
	r := NewReader(strings.NewReader(input), max)
	r.Warn = func(fe *FrameError) { warnings = append(warnings, fe.Reason) }
	for {
		b, err := r.Read()
		if err != nil {
			return bodies, warnings, err
		}
		bodies = append(bodies, string(b))
	}
}

func TestReaderFrames(t *testing.T) {
	tests := []struct {
		name     string
		input    string
		max      int
		bodies   []string
		warnings int
		err      error // nil: io.EOF expected; errFrame: a fatal FrameError
	}{
		{name: "two frames", input: frame(`{"a":1}`) + frame(`{"b":2}`), bodies: []string{`{"a":1}`, `{"b":2}`}},
		{name: "empty stream", input: ""},
		{name: "lower-case header and extra headers", input: "content-length: 2\r\nContent-Type: application/json\r\n\r\n{}", bodies: []string{"{}"}},
		{name: "bare LF line ends", input: "Content-Length: 2\n\n{}", bodies: []string{"{}"}},
		{name: "blank lines between frames", input: frame("{}") + "\r\n\r\n" + frame("[]"), bodies: []string{"{}", "[]"}},
		{name: "stray line before a header", input: "npm warn something\r\n" + frame("{}"), bodies: []string{"{}"}, warnings: 1},
		{name: "stray line then blank line", input: "oops\r\n\r\n" + frame("{}"), bodies: []string{"{}"}, warnings: 1},
		{name: "empty body skipped", input: "Content-Length: 0\r\n\r\n" + frame("{}"), bodies: []string{"{}"}, warnings: 1},
		{name: "oversized body skipped", input: frame(strings.Repeat("x", 100)) + frame("{}"), max: 10, bodies: []string{"{}"}, warnings: 1},
		{name: "missing Content-Length", input: "Content-Type: x\r\n\r\n{}", err: errFrame},
		{name: "invalid Content-Length", input: "Content-Length: abc\r\n\r\n{}", err: errFrame},
		{name: "negative Content-Length", input: "Content-Length: -4\r\n\r\n{}", err: errFrame},
		{name: "header too long", input: "X: " + strings.Repeat("y", 5000) + "\r\n", err: errFrame},
		{name: "truncated body", input: "Content-Length: 10\r\n\r\n{}", err: io.ErrUnexpectedEOF},
		{name: "truncated header", input: "Content-Len", err: io.ErrUnexpectedEOF},
		{name: "end inside header block", input: "Content-Length: 2\r\n", err: io.ErrUnexpectedEOF},
		{name: "truncated oversized body", input: "Content-Length: 100\r\n\r\nxx", max: 10, err: io.ErrUnexpectedEOF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bodies, warnings, err := readAll(tc.input, tc.max)
			if strings.Join(bodies, "|") != strings.Join(tc.bodies, "|") {
				t.Errorf("bodies = %q, want %q", bodies, tc.bodies)
			}
			if len(warnings) != tc.warnings {
				t.Errorf("warnings = %q, want %d", warnings, tc.warnings)
			}
			switch tc.err {
			case nil:
				if err != io.EOF {
					t.Errorf("err = %v, want io.EOF", err)
				}
			case errFrame:
				var fe *FrameError
				if !errors.As(err, &fe) || fe.Recoverable {
					t.Errorf("err = %v, want a fatal *FrameError", err)
				}
			default:
				if !errors.Is(err, tc.err) {
					t.Errorf("err = %v, want %v", err, tc.err)
				}
			}
		})
	}
}

var errFrame = errors.New("a fatal frame error")

func TestWriteFrameRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	for _, body := range []string{`{"x":"é"}`, `{}`} {
		if err := WriteFrame(&buf, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.HasPrefix(buf.String(), "Content-Length: 10\r\n\r\n") {
		t.Errorf("frame = %q: want the byte length (10) in the header", buf.String())
	}
	bodies, _, err := readAll(buf.String(), 0)
	if err != io.EOF || len(bodies) != 2 || bodies[0] != `{"x":"é"}` {
		t.Errorf("round trip: %q, %v", bodies, err)
	}
}

func TestDecodeMessageKinds(t *testing.T) {
	tests := []struct {
		body string
		kind Kind
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"m"}`, Request},
		{`{"jsonrpc":"2.0","id":"a","method":"m","params":{}}`, Request},
		{`{"jsonrpc":"2.0","method":"m","params":{}}`, Notification},
		{`{"jsonrpc":"2.0","id":null,"method":"m"}`, Notification},
		{`{"jsonrpc":"2.0","id":1,"result":null}`, Response},
		{`{"jsonrpc":"2.0","id":1,"result":{"ok":true}}`, Response},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"x"}}`, Response},
	}
	for _, tc := range tests {
		m, err := DecodeMessage([]byte(tc.body))
		if err != nil {
			t.Errorf("%s: %v", tc.body, err)
			continue
		}
		if m.Kind() != tc.kind {
			t.Errorf("%s: kind %v, want %v", tc.body, m.Kind(), tc.kind)
		}
	}
	for _, bad := range []string{`[]`, `"x"`, `{not json`, `{"jsonrpc":"2.0"}`, `{"id":1}`, `{"method":5}`} {
		if _, err := DecodeMessage([]byte(bad)); err == nil {
			t.Errorf("%s: decoded, want an error", bad)
		}
	}
}

// FuzzReadFrame feeds arbitrary bytes to the reader: it must never panic,
// never return a body over the limit, and always end with an error.
func FuzzReadFrame(f *testing.F) {
	seeds := []string{
		frame(`{"jsonrpc":"2.0","id":1,"method":"connect","params":{}}`),
		frame(`{"jsonrpc":"2.0","method":"session.event","params":{"sessionId":"s","event":{"type":"assistant.message_delta","data":{"deltaContent":"hi"}}}}`) + frame(`{"jsonrpc":"2.0","id":1,"result":null}`),
		"Content-Length: 5\r\n\r\n{bad}",
		"Content-Length: 99999999999999999999\r\n\r\n",
		"Content-Length: -1\r\n\r\n",
		"Content-Length: 3\r\nContent-Length: 2\r\n\r\n{}",
		"garbage\r\n\r\n\r\nContent-Length: 2\r\n\r\n{}",
		"Content-Length: 2\n\n{}Content-Length: 2\r\n\r\n[]",
		"\r\n\r\n\r\n",
		"Content-Length:",
		"Content-Length: 0\r\n\r\n",
		strings.Repeat("a", 5000),
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	const max = 1 << 10
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data), max)
		for i := 0; ; i++ {
			body, err := r.Read()
			if err != nil {
				return
			}
			if len(body) == 0 || len(body) > max {
				t.Fatalf("body of %d bytes (limit %d)", len(body), max)
			}
			if _, err := DecodeMessage(body); err == nil {
				_ = err // valid or not, decoding must not panic
			}
			if i > len(data) {
				t.Fatalf("more frames (%d) than input bytes (%d)", i, len(data))
			}
		}
	})
}
