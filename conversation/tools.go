package conversation

import (
	"encoding/json"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
)

// ToolKind says what a tool call did, as far as its name and arguments
// tell: the expanded row shows each kind its own way.
type ToolKind int

const (
	ToolOther  ToolKind = iota
	ToolShell           // ran a command: the command and its output
	ToolEdit            // changed a file: a diff
	ToolCreate          // wrote a new file: its lines, all added
	ToolRead            // read a file: what was read
	ToolSearch          // searched: what was found
)

// DiffLine is one line of a unified diff: Op is '+', '-', ' ' (context) or
// '@' (a hunk header).
type DiffLine struct {
	Op   byte
	Text string
}

// ToolWork is what a tool call did, ready to show: in Act what ran, in
// Plan what would have run.
type ToolWork struct {
	Kind    ToolKind
	Command string     // ToolShell
	Path    string     // the file of an edit, a creation or a read
	Query   string     // ToolSearch
	Diff    []DiffLine // ToolEdit, ToolCreate
	Output  string     // what the tool answered
}

// DescribeTool works out what a tool call did from its name, its raw
// arguments and its result. Agents name their tools differently (the
// Copilot CLI's bash, edit, create, view, grep; ACP agents' titles), so the
// arguments decide where the name does not.
func DescribeTool(name string, args json.RawMessage, result string) ToolWork {
	var a map[string]any
	_ = json.Unmarshal(args, &a)
	str := func(keys ...string) string {
		for _, k := range keys {
			if s, ok := a[k].(string); ok && s != "" {
				return s
			}
		}
		return ""
	}
	w := ToolWork{Output: result}
	lower := strings.ToLower(name)
	path := str("path", "file_path", "filePath", "file", "fileName")
	switch {
	case str("command", "cmd") != "" || oneOf(lower, "bash", "shell", "powershell", "execute", "run"):
		w.Kind, w.Command = ToolShell, str("command", "cmd")
	case str("old_str", "oldString", "old_string") != "" || str("new_str", "newString", "new_string") != "" || oneOf(lower, "edit", "str_replace", "replace", "patch"):
		w.Kind, w.Path = ToolEdit, path
		old, nw := str("old_str", "oldString", "old_string"), str("new_str", "newString", "new_string")
		switch {
		case old != "" || nw != "":
			w.Diff = unifiedDiff(path, old, nw)
		case looksLikeDiff(result):
			w.Diff = parseDiff(result)
		}
	case str("file_text", "content", "contents") != "" || oneOf(lower, "create", "write"):
		w.Kind, w.Path = ToolCreate, path
		w.Diff = unifiedDiff(path, "", str("file_text", "content", "contents"))
	case str("pattern", "query", "regex", "glob") != "" || oneOf(lower, "grep", "glob", "search", "find"):
		w.Kind, w.Query, w.Path = ToolSearch, str("pattern", "query", "regex", "glob"), path
	case path != "" || oneOf(lower, "view", "read", "cat"):
		w.Kind, w.Path = ToolRead, path
	}
	if w.Kind != ToolEdit && w.Kind != ToolCreate && looksLikeDiff(result) {
		w.Diff = parseDiff(result)
	}
	// What runs and what it touches, with nothing hidden (Visible); the
	// command whole, every line of it.
	w.Command, w.Path, w.Query = Visible(w.Command), Visible(w.Path), Visible(w.Query)
	return w
}

// oneOf reports whether name contains one of the words.
func oneOf(name string, words ...string) bool {
	for _, w := range words {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// unifiedDiff is the diff from old to new of path, three lines of context.
func unifiedDiff(path, old, new string) []DiffLine {
	text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: splitLines(old), B: splitLines(new),
		FromFile: "a/" + path, ToFile: "b/" + path, Context: 3,
	})
	if err != nil {
		return nil
	}
	return parseDiff(text)
}

// splitLines cuts s after each newline; unlike difflib.SplitLines it adds
// no empty last line, which would show as a changed blank line. A last
// line without its newline gets one: the diff's lines are joined as they
// are, and an edit's strings often end without one ("-TWO+two" else).
func splitLines(s string) []string {
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	} else {
		lines[len(lines)-1] += "\n"
	}
	return lines
}

// looksLikeDiff reports whether a tool's answer is a unified diff.
func looksLikeDiff(s string) bool {
	return strings.Contains(s, "\n@@ ") || strings.HasPrefix(s, "@@ ") || strings.HasPrefix(s, "--- ")
}

// parseDiff turns a unified diff into lines, without its file headers.
func parseDiff(s string) []DiffLine {
	var out []DiffLine
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "--- "), strings.HasPrefix(l, "+++ "), strings.HasPrefix(l, "diff "), strings.HasPrefix(l, "index "):
		case strings.HasPrefix(l, "@@"):
			out = append(out, DiffLine{'@', l})
		case strings.HasPrefix(l, "+"), strings.HasPrefix(l, "-"), strings.HasPrefix(l, " "):
			out = append(out, DiffLine{l[0], l[1:]})
		case l == "":
			out = append(out, DiffLine{' ', ""})
		default:
			out = append(out, DiffLine{' ', l})
		}
	}
	return out
}

// HeadTail returns the first and last n lines of s with how many were left
// out between them (0 when s has at most 2n lines).
func HeadTail(s string, n int) (head, tail []string, hidden int) {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) <= 2*n {
		return lines, nil, 0
	}
	return lines[:n], lines[len(lines)-n:], len(lines) - 2*n
}
