package markdown

import (
	"strings"
	"testing"
)

// Links that end are left alone; only text holding more than
// maxLongDestinations destinations that run into the next link is escaped.
func TestDefuseLinkDestinations(t *testing.T) {
	for _, md := range []string{
		"see [the docs](https://example.com/a_(b)) and [x](<y z>)",
		strings.Repeat("[a](x) ", 100),
		strings.Repeat("[a](x)[b](y)", 100),
		strings.Repeat("[a](x ", 100), // each ends at its space
		strings.Repeat("[a](<x>", 100),
		strings.Repeat("[a](x", maxLongDestinations),
		"`f[a](b[c](d)` in code",
	} {
		if got := defuseLinkDestinations(md); got != md {
			t.Errorf("%.60q… changed to %.60q…", md, got)
		}
	}
	for md, want := range map[string]string{
		strings.Repeat("[a](x", 100):   strings.Repeat(`[a]\(x`, 100),
		strings.Repeat("[a](<x", 100):  strings.Repeat(`[a]\(<x`, 100),
		strings.Repeat("![a](x(", 100): strings.Repeat(`![a]\(x(`, 100),
	} {
		if got := defuseLinkDestinations(md); got != want {
			t.Errorf("defused %.40q…: %.80q…, want %.80q…", md, got, want)
		}
	}
}
