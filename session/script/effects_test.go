package script

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pilotdesk/pilotdesk/session"
)

// TestToolEffects: write, remove and run change the session's folder in
// Act, nothing in Plan, and a path out of the folder fails the tool.
func TestToolEffects(t *testing.T) {
	t.Parallel()
	const src = `{"turns": [{"steps": [
		{"tool": {"name": "edit", "write": {"path": "notes/todo.md", "content": "- ship it\n"}}},
		{"tool": {"name": "bash", "remove": "old.md"}},
		{"tool": {"name": "bash", "run": "echo changed > kept.txt && echo ran"}},
		{"tool": {"name": "edit", "write": {"path": "../out.txt", "content": "x"}}},
		{"tool": {"name": "bash", "remove": "link/x"}}
	]}]}`
	for _, mode := range []string{"act", "plan"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			outside := t.TempDir()
			for name, content := range map[string]string{"old.md": "old", "kept.txt": "kept"} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(outside, "x"), []byte("outside"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
				t.Fatal(err)
			}
			host := newFakeHost(mode)
			a := New(mustParse(t, src))
			sess, err := a.Open(context.Background(), "c", session.OpenOptions{WorkDir: dir}, host)
			if err != nil {
				t.Fatal(err)
			}
			if err := run(t, sess, "x"); err != nil {
				t.Fatal(err)
			}
			events, _, _ := host.recorded()
			var ends []session.ToolEnd
			for _, e := range events {
				if end, ok := e.(session.ToolEnd); ok {
					ends = append(ends, end)
				}
			}
			todo, _ := os.ReadFile(filepath.Join(dir, "notes/todo.md"))
			_, oldErr := os.Stat(filepath.Join(dir, "old.md"))
			kept, _ := os.ReadFile(filepath.Join(dir, "kept.txt"))
			if _, err := os.Stat(filepath.Join(outside, "x")); err != nil {
				t.Fatal("a remove through a symlink reached outside the folder")
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "out.txt")); err == nil {
				t.Fatal("a write with .. left the folder")
			}
			if mode == "plan" {
				if len(todo) != 0 || oldErr != nil || string(kept) != "kept" {
					t.Fatal("a denied tool changed the folder")
				}
				return
			}
			if string(todo) != "- ship it\n" || oldErr == nil || string(kept) != "changed\n" {
				t.Fatalf("todo %q, old.md %v, kept %q", todo, oldErr, kept)
			}
			if !ends[0].Success || !ends[1].Success || ends[2].Result != "ran\n" || ends[3].Success || ends[4].Success ||
				!strings.Contains(ends[3].Result, "leaves the folder") {
				t.Fatalf("tool ends: %+v", ends)
			}
		})
	}
}

func TestToolEffectsParse(t *testing.T) {
	t.Parallel()
	if _, err := Parse("s", []byte(`{"turns": [{"steps": [{"tool": {"name": "x", "remove": "a", "run": "b"}}]}]}`)); err == nil ||
		!strings.Contains(err.Error(), "at most one") {
		t.Fatalf("two effects: %v", err)
	}
	if _, err := Parse("s", []byte(`{"turns": [{"steps": [{"tool": {"name": "x", "write": {"content": "a"}}}]}]}`)); err == nil ||
		!strings.Contains(err.Error(), `no "path"`) {
		t.Fatalf("write without a path: %v", err)
	}
}

// A run that fails says why first (its exit status and output), then the
// command: a tool row shows the start of the result, and showed the
// command again, which the row names already, the reason cut off.
func TestFailedRunSaysWhyFirst(t *testing.T) {
	t.Parallel()
	const src = `{"turns": [{"steps": [
		{"tool": {"name": "bash", "run": "echo 'chmod: no such file' >&2; exit 3"}},
		{"tool": {"name": "bash", "run": "exit 4"}}
	]}]}`
	host := newFakeHost("act")
	sess, err := New(mustParse(t, src)).Open(context.Background(), "c", session.OpenOptions{WorkDir: t.TempDir()}, host)
	if err != nil {
		t.Fatal(err)
	}
	if err := run(t, sess, "x"); err != nil {
		t.Fatal(err)
	}
	events, _, _ := host.recorded()
	var results []string
	for _, e := range events {
		if end, ok := e.(session.ToolEnd); ok && !end.Success {
			results = append(results, end.Result)
		}
	}
	want := []string{
		"exit status 3: chmod: no such file (running echo 'chmod: no such file' >&2; exit 3)",
		"exit status 4 (running exit 4)",
	}
	if len(results) != 2 || results[0] != want[0] || results[1] != want[1] {
		t.Fatalf("failed runs' results: %q, want %q", results, want)
	}
}
