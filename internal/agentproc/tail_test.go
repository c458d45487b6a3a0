package agentproc

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTailLines(t *testing.T) {
	var got []string
	tl := &tail{max: 4096, line: func(b []byte) { got = append(got, string(b)) }}
	for _, w := range []string{"one\ntw", "o\n", "\n  three  \nfour\nfive\nsix\nseven"} {
		if n, err := tl.Write([]byte(w)); n != len(w) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	// Lines as written, blank ones too; "seven" awaits its newline. The
	// tail is trimmed as a whole, not line by line.
	if want := []string{"one", "two", "", "  three  ", "four", "five", "six"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("lines %q, want %q", got, want)
	}
	if s, want := tl.Tail(), "  three   | four | five | six | seven"; s != want {
		t.Errorf("Tail = %q, want %q", s, want)
	}
}

func TestTailBounds(t *testing.T) {
	tl := &tail{max: 4096}            // no line function
	long := strings.Repeat("é", 3000) // 6000 bytes, one line
	tl.Write([]byte(long))
	if len(tl.buf) != 4096 || len(tl.partial) != 4096 {
		t.Errorf("kept %d bytes and a partial line of %d, want 4096 each", len(tl.buf), len(tl.partial))
	}
	s := tl.Tail()
	if !strings.HasPrefix(s, "…") || !utf8.ValidString(s) || len(s) > 600+len("…") {
		t.Errorf("Tail of a long line: %d bytes, %q…", len(s), s[:20])
	}
	if (&tail{max: 10}).Tail() != "" {
		t.Error("the tail of nothing is not empty")
	}
}
