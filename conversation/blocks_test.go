package conversation

import (
	"fmt"
	"testing"
)

const sampleMD = "# Plan\n\nFirst a paragraph\nthat spans two lines.\n\n- one\n- two with `code`\n\n```go\nfunc main() {\n\n\tprintln(\"hi\")\n}\n```\nAfter the fence.\n\n\n~~~\nplain\n~~~\nlast [link](https://example.com)"

var sampleBlocks = []block{
	{text: "# Plan"},
	{text: "First a paragraph\nthat spans two lines."},
	{text: "- one\n- two with `code`"},
	{text: "```go\nfunc main() {\n\n\tprintln(\"hi\")\n}\n```\n", code: true},
	{text: "After the fence."},
	{text: "~~~\nplain\n~~~\n", code: true},
}

func allBlocks(s *splitter, chunks []string) []block {
	var out []block
	for _, c := range chunks {
		out = append(out, s.write(c)...)
	}
	return out
}

func TestSplitterBlocks(t *testing.T) {
	for _, size := range []int{1, 2, 3, 7, 1000} {
		var chunks []string
		for i := 0; i < len(sampleMD); i += size {
			chunks = append(chunks, sampleMD[i:min(i+size, len(sampleMD))])
		}
		s := newSplitter()
		got := allBlocks(s, chunks)
		if fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", sampleBlocks) {
			t.Fatalf("chunk size %d: blocks\n%#v\nwant\n%#v", size, got, sampleBlocks)
		}
		tail, ok := s.tail()
		if !ok || tail.text != "last [link](https://example.com)" || tail.code {
			t.Fatalf("chunk size %d: tail %q %v", size, tail.text, ok)
		}
		if s.text() != sampleMD {
			t.Fatal("text() lost bytes")
		}
	}
}

func TestSplitterFenceStaysOpenUntilClosed(t *testing.T) {
	s := newSplitter()
	if got := s.write("```py\nx = 1\n\ny = 2\n``"); len(got) != 0 {
		t.Fatalf("a blank line inside a fence ended a block: %#v", got)
	}
	if b, _ := s.tail(); !b.code {
		t.Fatal("the open fence's tail is not code")
	}
	got := s.write("`\nnext")
	if len(got) != 1 || !got[0].code || got[0].text != "```py\nx = 1\n\ny = 2\n```\n" {
		t.Fatalf("closing fence: %#v", got)
	}
	if lang, code := CodeBody(got[0].text); lang != "py" || code != "x = 1\n\ny = 2" {
		t.Fatalf("CodeBody = %q, %q", lang, code)
	}
}

func TestSplitterCutInsideFence(t *testing.T) {
	s := newSplitter()
	s.write("```sh\nmake\n")
	b, ok := s.cut()
	if !ok || !b.code || b.text != "```sh\nmake\n```" {
		t.Fatalf("cut block %q", b.text)
	}
	s.write("make test\n```\nok")
	tail, _ := s.tail()
	if tail.text != "ok" {
		t.Fatalf("tail after fence %q", tail.text)
	}
}

func TestCodeBody(t *testing.T) {
	cases := map[string][2]string{
		"```go\na\n```":        {"go", "a"},
		"```\na\nb":            {"", "a\nb"}, // still streaming
		"~~~~ js x\n1\n~~~~\n": {"js", "1"},
		"not code":             {"", "not code"},
	}
	for in, want := range cases {
		lang, code := CodeBody(in)
		if lang != want[0] || code != want[1] {
			t.Errorf("CodeBody(%q) = %q %q, want %q %q", in, lang, code, want[0], want[1])
		}
	}
}
