package conversation

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// RejectedText is what a rejected turn says under its kept partial text
// (docs/protocol.md, Input requests).
const RejectedText = "Rejected. Agent response cancelled."

// ToolSummaryMax is the longest a tool summary gets, in runes.
const ToolSummaryMax = 100

// toolKeys are the argument keys that say most about a tool call, in the
// order they are looked for: a shell command, a file, a URL, a search.
var toolKeys = []string{"command", "path", "file", "url", "pattern", "query"}

// ToolSummary renders a tool call's arguments on one short line, the same
// in every front end: the most telling argument alone (a command as it is),
// else every argument as key=value, sorted, else the raw JSON.
func ToolSummary(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return OneLine(string(raw), ToolSummaryMax)
	}
	for _, k := range toolKeys {
		if s, ok := obj[k].(string); ok && strings.TrimSpace(s) != "" {
			return OneLine(s, ToolSummaryMax)
		}
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		var vs string
		if str, ok := obj[k].(string); ok {
			vs = str
		} else {
			b, _ := json.Marshal(obj[k])
			vs = string(b)
		}
		if len(keys) == 1 {
			parts = append(parts, vs)
		} else {
			parts = append(parts, k+"="+vs)
		}
	}
	return OneLine(strings.Join(parts, " "), ToolSummaryMax)
}

// TitleFrom makes a conversation's title from its first prompt.
func TitleFrom(prompt string) string {
	t := OneLine(prompt, 48)
	if t == "" {
		return "Untitled"
	}
	return t
}

// OneLine returns the first non-empty line of s, cut to max runes.
func OneLine(s string, max int) string {
	for line := range strings.SplitSeq(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if utf8.RuneCountInString(line) > max {
			r := []rune(line)
			return strings.TrimSpace(string(r[:max-1])) + "…"
		}
		return line
	}
	return ""
}

// StatusText is how the window words a turn's end.
func StatusText(status string) string {
	switch status {
	case protocol.StatusCompleted:
		return "Completed"
	case protocol.StatusAborted:
		return "Stopped. The agent's response so far is kept above."
	case protocol.StatusRejected:
		return RejectedText
	case protocol.StatusError:
		return "The turn failed."
	}
	return "Ended: " + status
}

func modeChangeText(mode protocol.Mode, streaming bool) string {
	when := "from the next turn"
	if streaming {
		when = "from the next tool call"
	}
	if mode == protocol.ModePlan {
		return "Switched to Plan: every tool call is denied " + when + "."
	}
	return "Switched to Act: tool calls run " + when + "."
}

// closedText says how an open question was closed.
func closedText(question string, answered map[string]string, d *protocol.UserInputClosed) string {
	q := OneLine(question, 80)
	switch d.Reason {
	case protocol.ClosedAnswered:
		if a, ok := answered[d.RequestID]; ok {
			return fmt.Sprintf("You answered %q to %q.", OneLine(a, 80), q)
		}
		return fmt.Sprintf("%q was answered from another window.", q)
	case protocol.ClosedRejected:
		if _, ok := answered[d.RequestID]; ok {
			return fmt.Sprintf("You rejected %q.", q)
		}
		return fmt.Sprintf("%q was rejected from another window.", q)
	case protocol.ClosedAborted:
		return fmt.Sprintf("The question %q was withdrawn: the turn was stopped.", q)
	}
	return fmt.Sprintf("The question %q was closed (%s).", q, d.Reason)
}
