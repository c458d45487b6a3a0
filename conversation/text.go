package conversation

import (
	"cmp"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pilotdesk/pilotdesk/internal/shellquote"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// RejectedText is what a rejected turn says under its kept partial text
// (docs/protocol.md, Input requests).
const RejectedText = "Rejected. Agent response cancelled."

// ToolSummaryMax is the longest a tool summary gets, in runes.
const ToolSummaryMax = 100

// toolKeys are the argument keys that say most about a tool call, in the
// order they are looked for: a shell command, a file (filePath: opencode's
// tools), a URL, a search.
var toolKeys = []string{"command", "path", "file_path", "filePath", "file", "url", "pattern", "query"}

// ToolSummary renders a tool call's arguments on one short line, the same
// in every front end: the most telling argument alone (a command as it is),
// else every argument as key=value, sorted, else the raw JSON. A value of
// several lines (a command of two) shows its first line and "+N lines" for
// the others, so that a second line never runs unseen behind an innocent
// first one; the expanded row shows it whole. Invisible characters are
// spelled out (Visible).
func ToolSummary(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return summaryLine(string(raw))
	}
	for _, k := range toolKeys {
		if s, ok := obj[k].(string); ok && strings.TrimSpace(s) != "" {
			return summaryLine(s)
		}
	}
	if argv, ok := stringList(obj["command"]); ok {
		return summaryLine(commandLine(argv))
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
	return summaryLine(strings.Join(parts, " "))
}

// stringList is v as a list of strings when it is a non-empty JSON array
// of strings and nothing else.
func stringList(v any) ([]string, bool) {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return nil, false
	}
	out := make([]string, len(list))
	for i, e := range list {
		if out[i], ok = e.(string); !ok {
			return nil, false
		}
	}
	return out, true
}

// commandLine is a command given as its argv (Codex's exec calls: ["bash",
// "-lc", "echo hi > a.txt"]) as a person would type it: a shell's -c or
// -lc script alone, else the words joined, quoted where a shell would
// need it.
func commandLine(argv []string) string {
	if len(argv) == 3 && (argv[1] == "-c" || argv[1] == "-lc") {
		switch shell := argv[0][strings.LastIndex(argv[0], "/")+1:]; shell {
		case "sh", "bash", "zsh", "dash":
			return argv[2]
		}
	}
	words := make([]string, len(argv))
	for i, w := range argv {
		words[i] = shellquote.Word(w)
	}
	return strings.Join(words, " ")
}

// summaryLine is s on one line of at most ToolSummaryMax runes: its first
// non-blank line, then " +N lines" when N more non-blank lines follow.
func summaryLine(s string) string {
	s = Visible(s)
	more := 0
	first := true
	for line := range strings.SplitSeq(s, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		if first {
			first = false
			continue
		}
		more++
	}
	if more == 0 {
		return OneLine(s, ToolSummaryMax)
	}
	mark := fmt.Sprintf(" +%d lines", more)
	if more == 1 {
		mark = " +1 line"
	}
	return OneLine(s, ToolSummaryMax-utf8.RuneCountInString(mark)) + mark
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

// RestartedMessage is the copilot:idle message of a turn the relay itself
// cut: stopped with the relay, or left open by a crash and closed when it
// started again (relay.RestartedMessage). A relay of a cluster that took a
// lost relay's conversation over closes its turn with "relay lost: …".
const RestartedMessage = "relay restarted"

// InterruptedText is how every front end words the end of a turn the
// relay cut (RestartedMessage, "relay lost: …"): nobody stopped it, so it
// is not StatusText's "Stopped" (web/static/js/conversation.js says the
// same).
const InterruptedText = "Interrupted: the relay restarted"

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

// modeChangedText is the mode-change marker's text: what the switch does,
// and who switched when it was another client ("Switched to Act by
// zebra-phone (web): …"); the relay names only device tokens (changedBy).
func (s *State) modeChangedText(d *protocol.ModeChanged) string {
	text := ModeChangeText(d.Mode, s.Streaming)
	if d.ChangedBy == nil || s.isSelf(*d.ChangedBy) {
		return text
	}
	return ModeByText(text, Who(*d.ChangedBy, s.self()))
}

// AgentChangeText is the note where a conversation's agent changed: its
// turns ran on from, the next runs on to (the relay restarted with another
// agent).
func AgentChangeText(from, to string) string {
	return "The agent changed from " + from + " to " + to + "."
}

// ModeByText puts who switched into a mode-change text: "Switched to
// Plan: …" becomes "Switched to Plan by zebra-phone (web): …".
func ModeByText(text, who string) string {
	head, rest, ok := strings.Cut(text, ":")
	if !ok {
		return text + " (by " + who + ")"
	}
	return head + " by " + who + ":" + rest
}

// ModeChangeText is the note where a conversation's mode changed, and
// from when it holds: the next turn, or, while a turn runs
// (streaming), its next tool call. The fold notes it; the terminal prints
// it for a switch the fold has no row for (before the first prompt).
func ModeChangeText(mode protocol.Mode, streaming bool) string {
	when := "from the next turn"
	if streaming {
		when = "from the next tool call"
	}
	if mode == protocol.ModePlan {
		return "Switched to Plan: every tool call is denied " + when + "."
	}
	return "Switched to Act: tool calls run " + when + "."
}

// ClosedText says how an open question was closed, and by whom: this
// client (it sent the answer now, or answeredBy names it, as after a
// restart), another client on this device, or another device. The fold
// notes it under the question; the terminal prints it where it closes its
// prompt (web/static/js/words.js closedText is the page's copy).
func (s *State) ClosedText(question string, d *protocol.UserInputClosed) string {
	q := OneLine(question, 80)
	answer, mine := s.answered[d.RequestID]
	switch d.Reason {
	case protocol.ClosedAnswered:
		switch {
		case mine:
			return fmt.Sprintf("You answered %q to %q.", OneLine(answer, 80), q)
		case d.AnsweredBy == nil: // an older relay names nobody
			return fmt.Sprintf("%q was answered from another window.", q)
		case s.isSelf(*d.AnsweredBy) && !s.Synced:
			// Replayed history: this device, this kind of client, an
			// earlier run (live, it would be another window like this one).
			return fmt.Sprintf("You answered %q.", q)
		}
		return fmt.Sprintf("%q was answered from %s.", q, Who(*d.AnsweredBy, s.self()))
	case protocol.ClosedRejected:
		switch {
		case mine, d.AnsweredBy != nil && s.isSelf(*d.AnsweredBy) && !s.Synced:
			return fmt.Sprintf("You rejected %q.", q)
		case d.AnsweredBy == nil:
			return fmt.Sprintf("%q was rejected from another window.", q)
		}
		return fmt.Sprintf("%q was rejected from %s.", q, Who(*d.AnsweredBy, s.self()))
	case protocol.ClosedAborted:
		return fmt.Sprintf("The question %q was withdrawn: the turn was stopped.", q)
	}
	return fmt.Sprintf("The question %q was closed (%s).", q, d.Reason)
}

// Who names another client for a client that is self: "Pixel (web)", or
// on self's own device "a terminal on this device".
func Who(by, self protocol.By) string {
	if by.Device == self.Device {
		return clientName(by.Client) + " on this device"
	}
	return ByText(by)
}

// ByText names a device and its client kind as a person reads them:
// "Pixel (web)", "this device (terminal)".
func ByText(by protocol.By) string {
	return fmt.Sprintf("%s (%s)", OneLine(by.Device, 40), OneLine(by.Client, 20))
}

func clientName(kind string) string {
	switch kind {
	case protocol.ClientWindow:
		return "a window"
	case protocol.ClientTerminal:
		return "a terminal"
	case protocol.ClientWeb:
		return "the web client"
	}
	return "another client"
}

// CountdownText says how long an open question has left, counted to the
// relay's deadline (Pending.Deadline; zero: the relay waits forever).
func CountdownText(deadline, now time.Time) string {
	if deadline.IsZero() {
		return "No time limit: the agent waits for your answer."
	}
	left := deadline.Sub(now)
	if left.Round(time.Second) <= 0 { // not "0:00", as WaitingText
		return "Time is up: the agent goes on without an answer."
	}
	return "Times out in " + Clock(left) + "; then the agent goes on without an answer."
}

// Clock says a time left as m:ss ("1:05", "12:00"), rounded to the
// second; nothing left is 0:00.
func Clock(d time.Duration) string {
	d = max(d, 0).Round(time.Second)
	return fmt.Sprintf("%d:%02d", int(d/time.Minute), int(d/time.Second)%60)
}

// EntryStatus is what a conversation's entry in a list says it is doing,
// in the window's sidebar, the terminal's /list and the web client's list
// alike: "waiting for your answer" while a question is open (with the
// time left to the relay's deadline, when there is one: "waiting for
// your answer · 1:05 left"), "working…" while a turn runs (a word for
// what the user waits on, not the protocol's "streaming"), and "" when no
// turn runs: then each front end says what it says of a resting
// conversation (its mode, or when it was last updated: Ago).
func EntryStatus(waiting bool, deadline time.Time, streaming bool, now time.Time) string {
	switch {
	case waiting:
		return "waiting for your answer" + timeLeft(deadline, now)
	case streaming:
		return "working…"
	}
	return ""
}

// RelayErrorText is the note for an `error` the relay answered a request
// of this conversation with: a prompt sent while a turn runs
// (conversation_busy) says what to do, in words for every front end (the
// window's and the web client's Stop, the terminal's /abort); anything
// else quotes the relay's message, or its code when it sent none.
func RelayErrorText(e *protocol.Error) string {
	if e.Code == protocol.CodeConversationBusy && e.Type == protocol.TypeSend {
		return "Not sent: the agent is still working on the last prompt. Wait for it to finish, or stop it."
	}
	return "The relay refused the request: " + cmp.Or(e.Message, e.Code)
}

// EntryTitle is a conversation's title where a list, a header or a
// notification names it: its title, or "New conversation" while it has
// none (no prompt yet), in every front end (the terminal said
// "(untitled)", the web client's restore caveat "Untitled").
func EntryTitle(title string) string {
	if strings.TrimSpace(title) == "" {
		return untitled // a title of spaces names nothing either
	}
	return title
}

// untitled is the title of a conversation that has none yet.
const untitled = "New conversation"

// QuestionNotification is the title and body of the notification of a
// question opened in conversation title, while the user is away: the
// question itself, or, without it, that the agent waits. The window and
// the web page notify with it; the relay's pushes (docs/push.md) say the
// same.
func QuestionNotification(title, question string) (head, body string) {
	return "Question: " + EntryTitle(title), cmp.Or(question, "The agent is waiting for your answer.")
}

// TurnNotification is the title and body of the notification of a turn of
// conversation title that ended with status (and, for an error, the
// agent's message), as the relay's pushes word it.
func TurnNotification(title, status, message string) (head, body string) {
	switch {
	case status == protocol.StatusCompleted:
		body = "The agent finished its turn."
	case status == protocol.StatusError && message != "":
		body = "The turn ended with an error: " + OneLine(message, 200)
	case status == protocol.StatusError:
		body = "The turn ended with an error."
	default:
		body = "The turn was stopped."
	}
	return EntryTitle(title), body
}

// ThinkingText is what the line above the composer says while a turn has
// shown nothing yet (the window's and the web client's indicator).
const ThinkingText = "Thinking…"

// WaitingText is what the line above the composer says while a question
// is open: "Waiting for your answer", with the time left when the relay
// set a deadline ("Waiting for your answer · 1:05 left") and "· time is
// up" once it passed (the agent goes on; a 0:00 that stays reads as a
// stuck clock).
func WaitingText(deadline, now time.Time) string {
	return "Waiting for your answer" + timeLeft(deadline, now)
}

// timeLeft is what WaitingText and EntryStatus add for a deadline: "" for
// none, " · 1:05 left", or " · time is up".
func timeLeft(deadline, now time.Time) string {
	switch left := deadline.Sub(now); {
	case deadline.IsZero():
		return ""
	case left.Round(time.Second) <= 0:
		return " · time is up"
	default:
		return " · " + Clock(left) + " left"
	}
}

// QueuedText says how many questions wait behind the open one ("" for none).
func QueuedText(n int) string {
	switch {
	case n == 1:
		return "1 more question waits after this one."
	case n > 1:
		return fmt.Sprintf("%d more questions wait after this one.", n)
	}
	return ""
}

// UnsentWhy says why a prompt comes back to the user: the connection
// dropped before the relay read it (docs/protocol.md, Lost sends). Each
// front end goes on to say where it put the prompt.
const UnsentWhy = "The relay did not get your message (the connection dropped before it arrived)"

// ArrivedLate says that a prompt given back as lost reached the relay
// after all: its echo came late (a relay of a cluster was setting it up).
const ArrivedLate = "Your message reached the relay after all: it was sent."
