package conversation

import (
	"fmt"
	"strings"
	"testing"
)

func diffText(d []DiffLine) string {
	var b strings.Builder
	for _, l := range d {
		if l.Op == '@' {
			b.WriteString(l.Text + "\n")
			continue
		}
		fmt.Fprintf(&b, "%c%s\n", l.Op, l.Text)
	}
	return b.String()
}

func TestDescribeTool(t *testing.T) {
	w := DescribeTool("bash", []byte(`{"command":"go test ./...","description":"tests"}`), "ok\n")
	if w.Kind != ToolShell || w.Command != "go test ./..." || w.Output != "ok\n" {
		t.Errorf("shell: %+v", w)
	}
	w = DescribeTool("edit", []byte(`{"path":"main.go","old_str":"a := 1\nb := 2\n","new_str":"a := 1\nb := 3\n"}`), "edited")
	if w.Kind != ToolEdit || w.Path != "main.go" {
		t.Fatalf("edit: %+v", w)
	}
	if got, want := diffText(w.Diff), "@@ -1,2 +1,2 @@\n a := 1\n-b := 2\n+b := 3\n"; got != want {
		t.Errorf("edit diff\n%s\nwant\n%s", got, want)
	}
	w = DescribeTool("create", []byte(`{"path":"new.txt","file_text":"one\ntwo\n"}`), "")
	if got := diffText(w.Diff); w.Kind != ToolCreate || !strings.Contains(got, "+one\n+two\n") {
		t.Errorf("create: %+v\n%s", w, got)
	}
	w = DescribeTool("view", []byte(`{"path":"README.md"}`), "# demo")
	if w.Kind != ToolRead || w.Path != "README.md" {
		t.Errorf("read: %+v", w)
	}
	w = DescribeTool("grep", []byte(`{"pattern":"TODO","path":"."}`), "a.go:1: TODO")
	if w.Kind != ToolSearch || w.Query != "TODO" {
		t.Errorf("search: %+v", w)
	}
	// Strings without a last newline (opencode's edit: oldString "TWO",
	// newString "two"): one line each, not "-TWO+two".
	w = DescribeTool("edit", []byte(`{"filePath":"/w/notes.txt","oldString":"TWO","newString":"two"}`), "Edit applied successfully.")
	if got := diffText(w.Diff); w.Kind != ToolEdit || w.Path != "/w/notes.txt" || got != "@@ -1 +1 @@\n-TWO\n+two\n" {
		t.Errorf("edit without newlines: %+v\n%q", w, got)
	}
	// An agent that reports its edit as a diff in the result (ACP agents).
	w = DescribeTool("Edit file", nil, "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n")
	if got := diffText(w.Diff); w.Kind != ToolEdit || got != "@@ -1 +1 @@\n-old\n+new\n" {
		t.Errorf("diff result: %+v\n%s", w, got)
	}
	if w = DescribeTool("mystery", []byte(`[1]`), "x"); w.Kind != ToolOther {
		t.Errorf("other: %+v", w)
	}
}

func TestHeadTail(t *testing.T) {
	head, tail, hidden := HeadTail("1\n2\n3\n4\n5\n6\n7\n", 2)
	if strings.Join(head, ",") != "1,2" || strings.Join(tail, ",") != "6,7" || hidden != 3 {
		t.Errorf("%v %v %d", head, tail, hidden)
	}
	if head, tail, hidden = HeadTail("1\n2", 2); len(head) != 2 || tail != nil || hidden != 0 {
		t.Errorf("short: %v %v %d", head, tail, hidden)
	}
}
