package relay

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// encodedLen is what encoding/json, without HTML escaping (as
// protocol.Encode), makes of s, quotes left out.
func encodedLen(t *testing.T, s string) int {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return b.Len() - 3 // the quotes and the newline
}

// randomText mixes every class of character jsonLen tells apart.
func randomText(r *rand.Rand, n int) string {
	parts := []string{"a", "<", "&", "\"", "\\", "\n", "\t", "\b", "\x01", "\x1f", "\x7f", "é", "😀", "\u2028", "\u2029", "\xff", "\xe2\x80", "\xed\xa0\x80"}
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(parts[r.IntN(len(parts))])
	}
	return b.String()
}

func TestJSONLenIsExact(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		s := randomText(r, r.IntN(64))
		if got, want := jsonLen(s), encodedLen(t, s); got != want {
			t.Fatalf("case %d: jsonLen(%q) = %d, encoding/json makes %d", i, s, got, want)
		}
	}
}

func TestSplitJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 500 {
		s := randomText(r, r.IntN(400))
		budget := 6 + r.IntN(60)
		parts := splitJSON(s, budget)
		if strings.Join(parts, "") != s {
			t.Fatalf("case %d: the parts of %q do not join to it: %q", i, s, parts)
		}
		for _, p := range parts {
			if p == "" || jsonLen(p) > budget {
				t.Fatalf("case %d: part %q is %d bytes encoded, budget %d", i, p, jsonLen(p), budget)
			}
		}
	}
}
