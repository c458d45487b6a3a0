package shellquote

import (
	"os/exec"
	"testing"
)

// A word comes back from a shell as it went in, quoted only where it
// must be.
func TestWord(t *testing.T) {
	for w, want := range map[string]string{
		"/tmp/project":        "/tmp/project",
		"pilotdesk/dddddddd":  "pilotdesk/dddddddd",
		"/home/me/my project": "'/home/me/my project'",
		"it's":                `'it'\''s'`,
		"$HOME":               "'$HOME'",
		"":                    "''",
		"a;rm -rf ~":          "'a;rm -rf ~'",
	} {
		if got := Word(w); got != want {
			t.Errorf("Word(%q) = %s, want %s", w, got, want)
		}
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh to read the words back")
	}
	for _, w := range []string{"/home/me/my project", "it's", "$HOME", "a;b", "tab\there", "*", "~x"} {
		out, err := exec.Command(sh, "-c", "printf %s "+Word(w)).Output()
		if err != nil || string(out) != w {
			t.Errorf("sh read %s back as %q (%v), want %q", Word(w), out, err, w)
		}
	}
}
