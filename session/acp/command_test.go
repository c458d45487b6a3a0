package acp

import (
	"slices"
	"strings"
	"testing"
)

func TestSplitCommand(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
	}{
		{"copilot --acp", []string{"copilot", "--acp"}},
		{"  opencode \t acp\n", []string{"opencode", "acp"}},
		{"claude-agent-acp", []string{"claude-agent-acp"}},
		{`"/opt/My Agents/gemini" --acp`, []string{"/opt/My Agents/gemini", "--acp"}},
		{`'/opt/My Agents/gemini' --acp`, []string{"/opt/My Agents/gemini", "--acp"}},
		{`/opt/My\ Agents/gemini --acp`, []string{"/opt/My Agents/gemini", "--acp"}},
		{`agent --name ""`, []string{"agent", "--name", ""}},
		{`agent ''`, []string{"agent", ""}},
		{`agent --x=a"b c"d`, []string{"agent", "--x=ab cd"}},
		{`'it''s'`, []string{"its"}},
		{`'a\b'`, []string{`a\b`}}, // no escapes in single quotes
		{`"a\b"`, []string{`a\b`}}, // \b is not an escape in "…"
		{`"a\"b" "c\\d" "e\$f"`, []string{`a"b`, `c\d`, `e$f`}},
		{`a\\b`, []string{`a\b`}},
		{`a\"b`, []string{`a"b`}},
		{"agent \\\n--acp", []string{"agent", "--acp"}}, // line continuation
		{`"multi` + "\n" + `line"`, []string{"multi\nline"}},
		{`$HOME/bin/agent ~ *`, []string{"$HOME/bin/agent", "~", "*"}}, // nothing expanded
		{`agent "a|b" 'c;d' e\&f`, []string{"agent", "a|b", "c;d", "e&f"}},
		{`agent héllo "wörld"`, []string{"agent", "héllo", "wörld"}},
	} {
		got, err := SplitCommand(tc.line)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("SplitCommand(%q) = %q, %v; want %q", tc.line, got, err, tc.want)
		}
	}
}

func TestSplitCommandErrors(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{"", "empty"},
		{"   \t\n", "empty"},
		{`agent "unterminated`, `unterminated " quote`},
		{`agent 'unterminated`, `unterminated ' quote`},
		{`agent \`, "ends with a backslash"},
		{`agent | tee log`, `shell operator '|' at position 7`},
		{`agent > log`, "shell operator '>'"},
		{`agent; rm x`, "shell operator ';'"},
		{`agent &`, "shell operator '&'"},
		{"agent `id`", "shell operator '`'"},
		{`agent $(id)`, "shell operator '('"},
	} {
		got, err := SplitCommand(tc.line)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("SplitCommand(%q) = %q, %v; want an error saying %q", tc.line, got, err, tc.want)
		}
	}
}

func FuzzSplitCommand(f *testing.F) {
	for _, s := range []string{"copilot --acp", `"a b" 'c' d\ e`, `x "\"" '\'`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		args, err := SplitCommand(line)
		if err == nil && len(args) == 0 {
			t.Fatalf("SplitCommand(%q): no words and no error", line)
		}
		// A word without specials survives quoting with '…'.
		if err == nil {
			var quoted []string
			for _, a := range args {
				quoted = append(quoted, "'"+strings.ReplaceAll(a, "'", `'\''`)+"'")
			}
			again, err := SplitCommand(strings.Join(quoted, " "))
			if err != nil || !slices.Equal(again, args) {
				t.Fatalf("re-splitting the quoted %q gave %q, %v", args, again, err)
			}
		}
	})
}
