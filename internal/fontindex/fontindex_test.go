package fontindex

import "testing"

// The window takes only flags; every other command is a word first.
func TestIsWindow(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{nil, true},
		{[]string{"--agent", "script"}, true},
		{[]string{"-version"}, true},
		{[]string{"serve", "--listen", ":7420"}, false},
		{[]string{"chat"}, false},
		{[]string{"token", "create"}, false},
		{[]string{"help"}, false},
	} {
		if got := isWindow(c.args); got != c.want {
			t.Errorf("isWindow(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}
