package chat

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// The raw-mode tests play the REPL's output on a small terminal emulator
// and check the screen a person would see.

var rawTerm = Terminal{Raw: true, Live: true}

const (
	keyDownSeq = "\x1b[B"
	keyUpSeq   = "\x1b[A"
	ctrlC      = "\x03"
	ctrlD      = "\x04"
	// keyCtrlUSeq clears the line.
	keyCtrlUSeq = "\x15"
)

func lastLine(screen string) string {
	lines := strings.Split(screen, "\n")
	return lines[len(lines)-1]
}

func TestRawPromptShowsModeAndEditing(t *testing.T) {
	h := startREPL(t, rawTerm, nil)
	h.subscribed(nil)
	h.waitScreen("the act prompt", func(s string) bool { return lastLine(s) == "act>" })
	h.typeIn("helo\x7flo wor\x17there")
	h.waitScreen("the edited line", func(s string) bool { return lastLine(s) == "act> hello there" })
	h.typeIn("\r")
	if s := h.nextCall("send"); s.prompt != "hello there" {
		t.Fatalf("send = %+v", s)
	}
	// While the turn streams, the prompt line is hidden until the user types.
	h.emit(protocol.TypeUserMessage, map[string]any{"messageId": "u1", "content": "hello there", "mode": "act"})
	h.delta("Hi.")
	screen := h.waitScreen("the reply", func(s string) bool { return lastLine(s) == "Hi." })
	if strings.Count(screen, "hello there") != 1 {
		t.Errorf("the prompt shows more than once:\n%s", screen)
	}
	h.idle(protocol.StatusCompleted)
	h.waitScreen("the prompt after the turn", func(s string) bool {
		return strings.HasSuffix(s, "Hi.\nusage: none reported for this turn\n\nact>")
	})
	// Ctrl+C at the prompt clears the line; Up recalls the last prompt.
	h.typeIn("draft")
	h.waitScreen("the draft", func(s string) bool { return lastLine(s) == "act> draft" })
	h.typeIn(ctrlC)
	h.waitScreen("a cleared line", func(s string) bool { return lastLine(s) == "act>" })
	h.typeIn(keyUpSeq)
	h.waitScreen("the recalled line", func(s string) bool { return lastLine(s) == "act> hello there" })
	h.typeIn("\x15" + ctrlD)
	if err := h.exit(); err != nil {
		t.Fatal(err)
	}
}

// TestRawMidStreamPlan: the user types /plan while text streams; the
// prompt line sits under the streaming text without breaking it, and the
// command goes out at once.
func TestRawMidStreamPlan(t *testing.T) {
	h := startREPL(t, rawTerm, nil)
	h.subscribed(map[string]any{"streaming": true})
	h.delta("Step one is to read the code")
	h.waitScreen("the text", func(s string) bool { return lastLine(s) == "Step one is to read the code" })
	h.typeIn("/pl")
	h.waitScreen("the prompt under the text", func(s string) bool {
		return strings.HasSuffix(s, "Step one is to read the code\nact> /pl")
	})
	h.delta(", then to run the tests and to look at every result they give back.")
	h.waitScreen("the text going on above the prompt", func(s string) bool {
		// 60 columns: the text wraps; the prompt stays below it.
		return strings.HasSuffix(s, "Step one is to read the code, then to run the tests and to l\nook at every result they give back.\nact> /pl")
	})
	h.typeIn("an\r")
	if c := h.nextCall("set_mode"); c.mode != protocol.ModePlan {
		t.Fatalf("set_mode = %+v", c)
	}
	h.emit(protocol.TypeModeChanged, map[string]any{"mode": "plan"})
	h.delta("Next step.")
	screen := h.waitScreen("the mode change", func(s string) bool { return lastLine(s) == "Next step." })
	want := "Step one is to read the code, then to run the tests and to l\nook at every result they give back.\nact> /plan\nSwitched to Plan: every tool call is denied from the next to\nol call.\nNext step."
	if !strings.HasSuffix(screen, want) {
		t.Errorf("screen:\n%s\nwant it to end with:\n%s", screen, want)
	}
	h.idle(protocol.StatusCompleted)
	h.waitScreen("the plan prompt", func(s string) bool { return lastLine(s) == "plan>" })
	// Ctrl+C while streaming aborts the turn.
	h.typeIn("go\r")
	h.nextCall("send")
	h.emit(protocol.TypeUserMessage, map[string]any{"messageId": "u1", "content": "go", "mode": "plan"})
	h.typeIn(ctrlC)
	h.nextCall("abort")
	h.idle(protocol.StatusAborted)
	h.waitScreen("the abort", func(s string) bool {
		return strings.Contains(s, conversation.StatusText(protocol.StatusAborted)) && lastLine(s) == "plan>"
	})
}

// TestRawChoiceArrows covers the choice list's arrow keys: no item
// highlighted at first, Down highlights the first, Up the last, Enter picks;
// Enter with nothing highlighted or typed re-prompts.
func TestRawChoiceArrows(t *testing.T) {
	h := startREPL(t, rawTerm, nil)
	h.subscribed(map[string]any{"streaming": true})
	h.delta("Let me ask.")
	id := h.request(protocol.InputChoice, "Which environment?", []string{"staging", "prod", "qa"}, false)
	screen := h.waitScreen("the list", func(s string) bool { return strings.HasSuffix(s, "  r) Reject\n›") })
	want := "Let me ask.\nWhich environment?\n  1) staging\n  2) prod\n  3) qa\n  r) Reject\n›"
	if !strings.HasSuffix(screen, want) {
		t.Fatalf("screen:\n%s\nwant the end:\n%s", screen, want)
	}
	h.typeIn("\r")
	h.waitScreen("the hint", func(s string) bool { return strings.HasSuffix(s, "  r) Reject\nPlease choose: 1-3 or r.\n›") })
	h.typeIn(keyDownSeq)
	h.waitScreen("the pointer on the first", func(s string) bool {
		return strings.Contains(s, "❯ 1) staging\n  2) prod\n  3) qa\n")
	})
	h.typeIn(keyUpSeq)
	h.waitScreen("the pointer on the last (wrapped)", func(s string) bool {
		return strings.Contains(s, "  1) staging\n  2) prod\n❯ 3) qa\n")
	})
	h.typeIn(keyUpSeq + "\r")
	a := h.nextCall("answer")
	if a.reqID != id || a.answer != "prod" || a.index == nil || *a.index != 1 {
		t.Fatalf("answer = %+v", a)
	}
	screen = h.waitScreen("the answer", func(s string) bool { return strings.HasSuffix(s, "› prod") })
	if strings.Count(screen, "1) staging") != 1 || strings.Contains(screen, "Please choose") {
		t.Errorf("the list or hint was left behind twice:\n%s", screen)
	}
	// Up from nothing highlights the last.
	id = h.request(protocol.InputChoice, "Again?", []string{"one", "two"}, false)
	h.waitScreen("the second list", func(s string) bool { return strings.HasSuffix(s, "  r) Reject\n›") })
	h.typeIn(keyUpSeq)
	h.waitScreen("the pointer on the last", func(s string) bool { return strings.Contains(s, "❯ 2) two") })
	// Typing replaces the pointer; a bad number re-prompts with the range.
	h.typeIn("7\r")
	h.waitScreen("the range hint", func(s string) bool {
		return strings.HasSuffix(s, "  1) one\n  2) two\n  r) Reject\n7 is not on the list. Please choose 1-2 or r.\n›")
	})
	h.typeIn("1\r")
	if a := h.nextCall("answer"); a.reqID != id || a.answer != "one" {
		t.Fatalf("answer = %+v", a)
	}
}

// TestRawCtrlCRejects: Ctrl+C during an input request rejects it (docs/cli.md,
// Answering questions); the partial text stays.
func TestRawCtrlCRejects(t *testing.T) {
	for _, tc := range []struct {
		name, inputType string
		choices         []string
	}{
		{"approval", protocol.InputApproval, []string{"Run it", "Skip"}},
		{"choice", protocol.InputChoice, []string{"a", "b"}},
		{"text", protocol.InputText, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := startREPL(t, rawTerm, nil)
			h.subscribed(map[string]any{"streaming": true})
			h.delta("Half a thou")
			id := h.request(tc.inputType, "Question?", tc.choices, tc.inputType == protocol.InputText)
			h.waitScreen("the question", func(s string) bool { return strings.Contains(s, "Question?") })
			h.typeIn("some" + ctrlC)
			if r := h.nextCall("reject"); r.reqID != id {
				t.Fatalf("reject = %+v", r)
			}
			h.emit(protocol.TypeUserInputClosed, map[string]any{"requestId": id, "reason": "rejected"})
			h.idle(protocol.StatusRejected)
			screen := h.waitScreen("the prompt", func(s string) bool { return lastLine(s) == "act>" })
			for _, want := range []string{"Half a thou\nQuestion?", "Reject (Ctrl+C)", "Rejected. Agent response cancelled."} {
				if !strings.Contains(screen, want) {
					t.Errorf("the screen lacks %q:\n%s", want, screen)
				}
			}
		})
	}
}

func TestRawApprovalAndText(t *testing.T) {
	h := startREPL(t, rawTerm, nil)
	h.subscribed(map[string]any{"streaming": true})
	id := h.request(protocol.InputApproval, "Run the migration?", []string{"Run it", "Skip"}, false)
	h.waitScreen("the approval", func(s string) bool {
		return strings.HasSuffix(s, "Run the migration?\n  a/1) Run it\n  r/2) Skip\n›")
	})
	h.typeIn("x\r")
	h.waitScreen("the hint", func(s string) bool { return strings.HasSuffix(s, "  r/2) Skip\nPlease answer a/1 or r/2.\n›") })
	h.typeIn("\r")
	h.waitScreen("the hint again", func(s string) bool { return strings.HasSuffix(s, "Please answer a/1 or r/2.\n›") })
	h.typeIn("a\r")
	if a := h.nextCall("answer"); a.reqID != id || a.answer != "approve" {
		t.Fatalf("answer = %+v", a)
	}
	h.waitScreen("the answer", func(s string) bool { return strings.HasSuffix(s, "  r/2) Skip\n› Run it") })

	id = h.request(protocol.InputText, "Release name?", nil, true)
	h.waitScreen("the text prompt", func(s string) bool {
		return strings.HasSuffix(s, "Release name?\n  Type your answer, or r or /reject to reject.\n?")
	})
	h.typeIn("\r")
	h.waitScreen("the required hint", func(s string) bool {
		return strings.HasSuffix(s, "An answer is required: type it, or r or /reject to reject.\n?")
	})
	h.typeIn("Aurora\r")
	if a := h.nextCall("answer"); a.reqID != id || a.answer != "Aurora" {
		t.Fatalf("answer = %+v", a)
	}
	h.waitScreen("the text answer", func(s string) bool { return strings.HasSuffix(s, "reject.\n? Aurora") })
	// Ctrl+D with an open question quits, leaving it to other windows.
	h.request(protocol.InputText, "Still there?", nil, true)
	h.waitScreen("the question", func(s string) bool { return strings.Contains(s, "Still there?") })
	h.typeIn(ctrlD)
	if err := h.exit(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(h.out.screen(), "Leaving the question unanswered") {
		t.Errorf("no note:\n%s", h.out.screen())
	}
}

// TestRawClosedElsewhere: a question answered in another window closes the
// prompt here.
func TestRawClosedElsewhere(t *testing.T) {
	h := startREPL(t, rawTerm, nil)
	h.subscribed(map[string]any{"streaming": true})
	id := h.request(protocol.InputChoice, "Pick", []string{"x", "y"}, false)
	h.waitScreen("the list", func(s string) bool { return strings.HasSuffix(s, "r) Reject\n›") })
	h.typeIn(keyDownSeq + "2")
	// The keys are read on their own goroutine: the close must find them
	// in the list, not overtake them and leave them to the next prompt.
	h.waitScreen("the keys in the list", func(s string) bool {
		return strings.HasSuffix(s, "r) Reject\n› 2")
	})
	h.emit(protocol.TypeUserInputClosed, map[string]any{"requestId": id, "reason": "answered"})
	screen := h.waitScreen("the note", func(s string) bool { return strings.HasSuffix(s, "Pick\n\"Pick\" was answered from another window.") })
	if strings.Contains(screen, "1) x") {
		t.Errorf("the closed list is still on the screen:\n%s", screen)
	}
	h.idle(protocol.StatusCompleted)
	h.waitScreen("the prompt", func(s string) bool { return lastLine(s) == "act>" })
	h.noCall()
}

// TestRawKeysGoToTheQuestionTheyWereTypedAt: keys the loop has not taken
// yet when another window answers the open question, and the agent asks
// the next, were typed at the first: they go with it, never to the next
// question (a "2" and Enter there would answer one the user has not seen)
// or to the prompt. The loop is held in a call to the relay while the keys
// and the events come, so both are ready when it looks again; twenty
// times, as select would pick between them at random.
func TestRawKeysGoToTheQuestionTheyWereTypedAt(t *testing.T) {
	h, keys := startLoop(t, rawTerm)
	h.subscribed(map[string]any{"streaming": true})
	id := h.request(protocol.InputChoice, "Question 0?", []string{"x", "y"}, false)
	for i := range 20 {
		h.waitScreen("the question", func(s string) bool {
			return strings.Contains(s, fmt.Sprintf("Question %d?", i)) && strings.HasSuffix(s, "r) Reject\n›")
		})
		release := h.conn.holdNext("abort")
		keys <- inputChunk{data: []byte("/abort\r")}
		h.nextCall("abort") // the loop waits in the call
		keys <- inputChunk{data: []byte("2")}
		h.emit(protocol.TypeUserInputClosed, map[string]any{"requestId": id, "reason": "answered"})
		id = h.request(protocol.InputChoice, fmt.Sprintf("Question %d?", i+1), []string{"x", "y"}, false)
		release()
		// A key typed at the next question once it shows, after the keys
		// before it.
		h.waitScreen("the next question", func(s string) bool {
			return strings.Contains(s, fmt.Sprintf("Question %d?", i+1))
		})
		keys <- inputChunk{data: []byte("z")}
		screen := h.waitScreen("the key at the next question", func(s string) bool { return strings.HasSuffix(s, "z") })
		if got := lastLine(screen); got != "› z" {
			t.Fatalf("round %d: the next question's answer line is %q, want \"› z\" (the 2 typed at the one before landed in it):\n%s", i, got, screen)
		}
		keys <- inputChunk{data: []byte(keyCtrlUSeq)}
	}
	h.emit(protocol.TypeUserInputClosed, map[string]any{"requestId": id, "reason": "answered"})
	h.idle(protocol.StatusCompleted)
	if screen := h.waitScreen("the prompt", func(s string) bool { return strings.HasPrefix(lastLine(s), "act>") }); lastLine(screen) != "act>" {
		t.Fatalf("keys typed at a question landed in the prompt: %q", lastLine(screen))
	}
}

// TestColours checks the colours of docs/cli.md, Answering questions: the
// approve label in the info colour, the reject label in the error colour,
// choice numbers and the text glyph in the info colour.
func TestColours(t *testing.T) {
	h := startREPL(t, Terminal{Raw: true, Live: true, Color: true, Spinner: true}, nil)
	h.subscribed(nil)
	h.typeIn("hi\r")
	h.nextCall("send")
	h.waitScreen("the spinner", func(s string) bool { return strings.HasSuffix(s, "⠋ thinking…") })
	id := h.request(protocol.InputApproval, "Run?", []string{"Run it", "Skip"}, false)
	h.waitFor("Skip")
	if s := h.out.screen(); strings.Contains(s, "thinking") {
		t.Errorf("the spinner still shows with a question open:\n%s", s)
	}
	raw := h.out.bytes()
	for _, want := range []string{"\x1b[36mRun it\x1b[0m", "\x1b[31mSkip\x1b[0m"} {
		if !strings.Contains(raw, want) {
			t.Errorf("the output lacks %q", want)
		}
	}
	h.typeIn("1\r")
	h.nextCall("answer")
	h.emit(protocol.TypeUserInputClosed, map[string]any{"requestId": id, "reason": "answered"})
	h.request(protocol.InputChoice, "Which?", []string{"a", "b"}, false)
	h.waitFor("Reject")
	h.request(protocol.InputText, "Name?", nil, true)
	h.typeIn("2\r")
	h.nextCall("answer")
	h.waitFor("Name?")
	raw = h.out.bytes()
	for _, want := range []string{"\x1b[36m1)\x1b[0m a", "\x1b[36m2)\x1b[0m b", "\x1b[36m?\x1b[0m "} {
		if !strings.Contains(raw, want) {
			t.Errorf("the output lacks %q:\n%q", want, raw)
		}
	}
}

func TestNoColorStillEdits(t *testing.T) {
	h := startREPL(t, Terminal{Raw: true, Live: true}, nil)
	h.subscribed(nil)
	h.typeIn("hi\r")
	h.nextCall("send")
	h.request(protocol.InputApproval, "Run?", []string{"Run it", "Skip"}, false)
	h.waitFor("Skip")
	h.typeIn(keyDownSeq + "x\r")
	h.waitFor("Please answer")
	raw := h.out.bytes()
	if ansi.FindString(strings.NewReplacer("\x1b[J", "", "\x1b[A", "", "\x1b[1A", "").Replace(raw)) != "" {
		t.Errorf("NO_COLOR output has styles:\n%q", raw)
	}
	if strings.Contains(h.out.screen(), "thinking") {
		t.Errorf("NO_COLOR output has a spinner")
	}
}

// TestRawTypeAheadNeverAnswersAnUnseenQuestion: keys that arrive in one
// read with the Enter that answers a question were typed before the next
// queued question was drawn; they must not answer it.
func TestRawTypeAheadNeverAnswersAnUnseenQuestion(t *testing.T) {
	h, keys := startLoop(t, rawTerm)
	h.subscribed(map[string]any{"streaming": true})
	first := h.request(protocol.InputChoice, "First?", []string{"x", "y"}, false)
	second := h.request(protocol.InputChoice, "Second?", []string{"p", "q"}, false)
	h.waitScreen("the first question", func(s string) bool {
		return strings.Contains(s, "First?") && strings.HasSuffix(s, "r) Reject\n›")
	})
	keys <- inputChunk{data: []byte("1\r2\r")}
	if a := h.nextCall("answer"); a.reqID != first || a.answer != "x" {
		t.Fatalf("answer = %+v, want %s answered x", a, first)
	}
	screen := h.waitScreen("the second question", func(s string) bool {
		return strings.Contains(s, "Second?") && strings.HasSuffix(s, "\n›")
	})
	if !strings.Contains(strings.ReplaceAll(screen, "\n", ""), typedAheadNote) {
		t.Errorf("no word that the keys typed ahead were not used:\n%s", screen)
	}
	// What the user types once the question shows answers it.
	keys <- inputChunk{data: []byte("2\r")}
	if a := h.nextCall("answer"); a.reqID != second || a.answer != "q" {
		t.Fatalf("answer = %+v, want %s answered q (the 2 typed ahead answered it)", a, second)
	}
}

// TestRawConfirmations: in a terminal, the line typed under "Restore?
// [y/N]" and "Delete? [y/N]" answers it: y restores or deletes, Enter
// alone does not. It went to the agent as a prompt ("You wrote “y”"),
// and the files were never restored.
func TestRawConfirmations(t *testing.T) {
	h := startREPL(t, rawTerm, nil)
	h.subscribed(nil)
	h.emit(protocol.TypeUserMessage, map[string]any{"messageId": "u1", "content": "edit it", "mode": "act"})
	h.emit(protocol.TypeChanges, map[string]any{"checkpoint": "815da21a0000000000000000000000000000aaaa",
		"files": []map[string]any{{"path": "notes.md", "status": "added", "additions": 4, "deletions": 0}}})
	h.idle(protocol.StatusCompleted)
	h.waitScreen("the changes", func(s string) bool { return strings.Contains(s, "1 file changed +4 −0") })

	h.typeIn("/restore 1\r")
	h.waitScreen("the question, answered on a y/N line", func(s string) bool {
		return strings.Contains(s, "Restore? [y/N]") && lastLine(s) == "y/N>"
	})
	h.typeIn("\r")
	h.waitScreen("no restore", func(s string) bool { return strings.Contains(s, "Not restored.") })
	h.typeIn("/restore 1\r")
	h.typeIn("y\r")
	if c := h.nextCall("restore"); c.answer != "815da21a0000000000000000000000000000aaaa" {
		t.Fatalf("y restored %+v", c)
	}

	h.typeIn("/delete\r")
	h.waitScreen("the delete's question", func(s string) bool { return strings.Contains(s, "Delete? [y/N]") })
	h.typeIn("y\r")
	if c := h.nextCall("delete"); c.conv != testConv {
		t.Fatalf("y deleted %+v", c)
	}
}
