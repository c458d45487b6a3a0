package capped

import (
	"strings"
	"testing"
)

// A Buffer keeps its first limit bytes across writes, drops the rest, and
// tells every writer its whole write went.
func TestBufferKeepsTheStart(t *testing.T) {
	b := NewBuffer(10)
	for _, s := range []string{"abcd", "efghij", "klmn", strings.Repeat("x", 1<<20)} {
		if n, err := b.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%d bytes) = %d, %v; want all of it, no error", len(s), n, err)
		}
	}
	if got := b.String(); got != "abcdefghij" {
		t.Fatalf("kept %q, want the first 10 bytes", got)
	}
}
