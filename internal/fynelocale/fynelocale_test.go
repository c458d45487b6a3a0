package fynelocale

import (
	"os"
	"testing"
)

func TestNarrowAndRestore(t *testing.T) {
	tests := []struct {
		env       map[string]string
		changed   string // the variable narrowed, "" for none
		whileInit string
	}{
		{map[string]string{"LANG": "C.UTF-8"}, "LANG", "C"},
		{map[string]string{"LANG": "POSIX.utf8"}, "LANG", "POSIX"},
		{map[string]string{"LC_ALL": "C.UTF-8", "LANG": "de_DE.UTF-8"}, "LC_ALL", "C"},
		{map[string]string{"LC_MESSAGES": "fr_FR.UTF-8", "LANG": "C.UTF-8"}, "", ""}, // go-locale reads LC_MESSAGES first
		{map[string]string{"LANG": "en_US.UTF-8"}, "", ""},
		{map[string]string{"LANG": "C"}, "", ""}, // go-locale handles plain C itself
	}
	for _, tt := range tests {
		for _, name := range []string{"LC_ALL", "LC_MESSAGES", "LANG"} {
			t.Setenv(name, tt.env[name])
		}
		narrow()
		for name, want := range tt.env {
			got := os.Getenv(name)
			if name == tt.changed {
				want = tt.whileInit
			}
			if got != want {
				t.Errorf("%v: during init %s = %q, want %q", tt.env, name, got, want)
			}
		}
		Restore()
		for name, want := range tt.env {
			if got := os.Getenv(name); got != want {
				t.Errorf("%v: after Restore %s = %q, want %q", tt.env, name, got, want)
			}
		}
	}
}
