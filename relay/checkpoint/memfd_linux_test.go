package checkpoint

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitFilesInMemory: a git command gets its input and gives its output
// and its errors through files in memory, not pipes (which os/exec copies
// with a goroutine each, woken for every piece: issue #32), and the
// relay reads them as before: stdin given, stdout returned whole, stderr
// in the error of a command that fails.
func TestGitFilesInMemory(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	dir := t.TempDir()
	log := filepath.Join(t.TempDir(), "fds")
	wrapper := filepath.Join(t.TempDir(), "git")
	// The links are read before the redirection to the log is made.
	script := "#!/bin/sh\nfds=\"$(readlink /proc/$$/fd/0 /proc/$$/fd/1 /proc/$$/fd/2)\"\necho \"$fds\" >> '" + log + "'\nexec '" + s.git + "' \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	real := s.git
	s.git = wrapper
	ctx := context.Background()

	// More than a pipe holds (64 KiB), in and out.
	input := strings.Repeat("a line of the input\n", 10000)
	got, err := gitCmd{s: s, dir: dir, args: []string{"hash-object", "--stdin"}, in: strings.NewReader(input)}.output(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.git = real
	want, err := gitCmd{s: s, dir: dir, args: []string{"hash-object", "--stdin"}, in: strings.NewReader(input)}.output(ctx)
	if err != nil || len(want) != 41 || string(got) != string(want) {
		t.Fatalf("hash-object through the files in memory = %q, through the real git %q (%v)", got, want, err)
	}
	s.git = wrapper
	big, err := gitCmd{s: s, dir: dir, args: []string{"-c", "core.pager=cat", "var", "-l"}}.output(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.git = real
	bigWant, err := gitCmd{s: s, dir: dir, args: []string{"-c", "core.pager=cat", "var", "-l"}}.output(ctx)
	if err != nil || string(big) != string(bigWant) {
		t.Fatalf("git var -l: %d bytes through the files in memory, %d through pipes (%v)", len(big), len(bigWant), err)
	}
	s.git = wrapper
	_, err = gitCmd{s: s, dir: dir, args: []string{"cat-file", "-t", strings.Repeat("0", 40)}}.output(ctx)
	if err == nil || !strings.Contains(err.Error(), "git cat-file") || !strings.Contains(err.Error(), "fatal") {
		t.Fatalf("a failing command's error = %v, want its name and git's stderr", err)
	}

	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 9 {
		t.Fatalf("the wrapper noted %d files, want 3 for each of 3 commands:\n%s", len(lines), b)
	}
	for i, l := range lines {
		switch {
		case i == 0 && strings.HasPrefix(l, "/memfd:git-stdin"):
		case i%3 == 0 && i > 0 && l == "/dev/null":
		case i%3 == 1 && strings.HasPrefix(l, "/memfd:git-stdout"):
		case i%3 == 2 && strings.HasPrefix(l, "/memfd:git-stderr"):
		default:
			t.Errorf("command %d's fd %d is %s, not a file in memory", i/3+1, i%3, l)
		}
	}
}
