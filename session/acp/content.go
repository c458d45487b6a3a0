package acp

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	sdk "github.com/coder/acp-go-sdk"
)

// maxResult bounds a tool's result text: a diff of a big file must not make
// one event of megabytes.
const maxResult = 64 << 10

// blockText is the text of a content block; for what is not text, a short
// stand-in.
func blockText(b sdk.ContentBlock) string {
	switch {
	case b.Text != nil:
		return b.Text.Text
	case b.ResourceLink != nil:
		return fmt.Sprintf("[%s](%s)", b.ResourceLink.Name, b.ResourceLink.Uri)
	case b.Resource != nil:
		if r := b.Resource.Resource.TextResourceContents; r != nil {
			return r.Text
		}
		return "[resource]"
	case b.Image != nil:
		return "[image]"
	case b.Audio != nil:
		return "[audio]"
	}
	return ""
}

// rawJSON encodes a tool's raw input for ToolStart; nil stays nil.
func rawJSON(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil || string(b) == "null" {
		return nil
	}
	return b
}

// toolResult is a tool call's result for its row: its content (text,
// diffs as unified diffs, terminal references), else its raw output.
func toolResult(content []sdk.ToolCallContent, rawOutput any) string {
	var parts []string
	for _, c := range content {
		switch {
		case c.Content != nil:
			if t := strings.TrimSpace(blockText(c.Content.Content)); t != "" {
				parts = append(parts, t)
			}
		case c.Diff != nil:
			parts = append(parts, unifiedDiff(*c.Diff))
		case c.Terminal != nil:
			parts = append(parts, "[terminal "+c.Terminal.TerminalId+"]")
		}
	}
	if len(parts) == 0 && rawOutput != nil {
		parts = append(parts, outputText(rawOutput))
	}
	return truncate(strings.Join(parts, "\n"), maxResult)
}

// outputText reads a raw output: a string, or an object's usual text field,
// or the JSON.
func outputText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	if m, ok := v.(map[string]any); ok {
		for _, k := range []string{"output", "stdout", "message", "error", "content"} {
			if s, ok := m[k].(string); ok && strings.TrimSpace(s) != "" {
				return s
			}
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// unifiedDiff renders an ACP diff as a unified diff of one hunk without
// context: the lines between the common head and the common tail.
func unifiedDiff(d sdk.ToolCallContentDiff) string {
	from := "--- " + d.Path
	var old []string
	if d.OldText == nil {
		from = "--- /dev/null" // a new file
	} else {
		old = lines(*d.OldText)
	}
	cur := lines(d.NewText)
	head := 0
	for head < len(old) && head < len(cur) && old[head] == cur[head] {
		head++
	}
	tail := 0
	for tail < len(old)-head && tail < len(cur)-head && old[len(old)-1-tail] == cur[len(cur)-1-tail] {
		tail++
	}
	removed, added := old[head:len(old)-tail], cur[head:len(cur)-tail]
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n+++ %s\n", from, d.Path)
	if len(removed) == 0 && len(added) == 0 {
		return b.String() + "(no change)"
	}
	fmt.Fprintf(&b, "@@ -%s +%s @@", hunkRange(head, len(removed)), hunkRange(head, len(added)))
	for _, l := range removed {
		b.WriteString("\n-" + l)
	}
	for _, l := range added {
		b.WriteString("\n+" + l)
	}
	return b.String()
}

// hunkRange is a unified diff's "start,count" for count lines after the
// first skip lines (an empty range names the line before it).
func hunkRange(skip, count int) string {
	switch count {
	case 0:
		return fmt.Sprintf("%d,0", skip)
	case 1:
		return fmt.Sprint(skip + 1)
	}
	return fmt.Sprintf("%d,%d", skip+1, count)
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// truncate cuts s to at most max bytes, on a rune boundary, saying so.
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "\n… (cut: " + fmt.Sprint(len(s)-cut) + " more bytes)"
}
