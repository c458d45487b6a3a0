package chat

import (
	"reflect"
	"testing"

	"github.com/pilotdesk/pilotdesk/protocol"
)

func TestKeyDecoder(t *testing.T) {
	tests := []struct {
		name  string
		feeds []string
		want  []key
	}{
		{"letters and enter", []string{"ab\r"}, []key{{keyRune, 'a'}, {keyRune, 'b'}, {kind: keyEnter}}},
		{"CRLF is one enter", []string{"a\r\n"}, []key{{keyRune, 'a'}, {kind: keyEnter}}},
		{"CRLF split across reads", []string{"a\r", "\nb"}, []key{{keyRune, 'a'}, {kind: keyEnter}, {keyRune, 'b'}}},
		{"LF alone", []string{"\n"}, []key{{kind: keyEnter}}},
		{"arrows", []string{"\x1b[A\x1b[B\x1b[C\x1b[D"}, []key{{kind: keyUp}, {kind: keyDown}, {kind: keyRight}, {kind: keyLeft}}},
		{"application mode arrows", []string{"\x1bOA\x1bOB"}, []key{{kind: keyUp}, {kind: keyDown}}},
		{"arrow split across reads", []string{"\x1b", "[", "B"}, []key{{kind: keyDown}}},
		{"home end delete", []string{"\x1b[1~\x1b[4~\x1b[3~\x1b[H\x1b[F"}, []key{{kind: keyHome}, {kind: keyEnd}, {kind: keyDelete}, {kind: keyHome}, {kind: keyEnd}}},
		{"modified arrow is still an arrow", []string{"\x1b[1;5A"}, []key{{kind: keyUp}}},
		{"controls", []string{"\x03\x04\x7f\x08\x15\x17\x09"}, []key{{kind: keyCtrlC}, {kind: keyCtrlD}, {kind: keyBackspace}, {kind: keyBackspace}, {kind: keyCtrlU}, {kind: keyCtrlW}, {kind: keyTab}}},
		{"utf-8 split across reads", []string{"\xc3", "\xa9"}, []key{{keyRune, 'é'}}},
		{"invalid utf-8", []string{"\xff"}, []key{{kind: keyUnknown}}},
		{"alt+x is esc then x", []string{"\x1bx"}, []key{{kind: keyEsc}, {keyRune, 'x'}}},
		{"unknown CSI", []string{"\x1b[200~x"}, []key{{kind: keyUnknown}, {keyRune, 'x'}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d keyDecoder
			var got []key
			for _, f := range tt.feeds {
				got = append(got, d.feed([]byte(f))...)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("keys = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPromptInterpret(t *testing.T) {
	approval := &protocol.UserInputRequest{InputType: protocol.InputApproval, Question: "Run?", Choices: []string{"Run it", "Skip"}}
	choice := &protocol.UserInputRequest{InputType: protocol.InputChoice, Question: "Env?", Choices: []string{"staging", "prod", "qa"}}
	single := &protocol.UserInputRequest{InputType: protocol.InputChoice, Question: "Only?", Choices: []string{"only"}}
	freeform := &protocol.UserInputRequest{Question: "Color?", Choices: []string{"red", "blue"}, AllowFreeform: true}
	text := &protocol.UserInputRequest{InputType: protocol.InputText, Question: "Name?", AllowFreeform: true}
	askText := &protocol.UserInputRequest{Question: "Why?", AllowFreeform: true}

	idx := func(i int) *int { return &i }
	tests := []struct {
		name   string
		req    *protocol.UserInputRequest
		in     string
		want   outcome
		hint   string
		kind   requestKind
		inputs string
	}{
		{"approval a", approval, "a", outcome{valid: true, answer: "approve", shown: "Run it"}, "", kindApproval, "a/1 or r/2"},
		{"approval 1", approval, "1", outcome{valid: true, answer: "approve", shown: "Run it"}, "", kindApproval, ""},
		{"approval r", approval, "r", outcome{valid: true, reject: true, shown: "Skip"}, "", kindApproval, ""},
		{"approval 2", approval, " 2 ", outcome{valid: true, reject: true, shown: "Skip"}, "", kindApproval, ""},
		{"approval other", approval, "yes", outcome{}, "Please answer a/1 or r/2.", kindApproval, ""},
		{"approval empty", approval, "", outcome{}, "Please answer a/1 or r/2.", kindApproval, ""},
		{"approval 3", approval, "3", outcome{}, "Please answer a/1 or r/2.", kindApproval, ""},
		{"choice number", choice, "2", outcome{valid: true, answer: "prod", index: idx(1), shown: "prod"}, "", kindChoice, "1-3 or r"},
		{"choice last", choice, "3", outcome{valid: true, answer: "qa", index: idx(2), shown: "qa"}, "", kindChoice, ""},
		{"choice zero", choice, "0", outcome{}, "0 is not on the list. Please choose 1-3 or r.", kindChoice, ""},
		{"choice out of range", choice, "4", outcome{}, "4 is not on the list. Please choose 1-3 or r.", kindChoice, ""},
		{"choice words", choice, "prod", outcome{}, "Please choose 1-3 or r.", kindChoice, ""},
		{"choice empty", choice, "", outcome{}, "Please choose: 1-3 or r.", kindChoice, ""},
		{"choice reject", choice, "r", outcome{valid: true, reject: true, shown: "Reject"}, "", kindChoice, ""},
		{"choice /reject", choice, "/reject", outcome{valid: true, reject: true, shown: "Reject"}, "", kindChoice, ""},
		{"single choice", single, "1", outcome{valid: true, answer: "only", index: idx(0), shown: "only"}, "", kindChoice, "1 or r"},
		{"single choice 2", single, "2", outcome{}, "2 is not on the list. Please choose 1 or r.", kindChoice, ""},
		{"freeform words", freeform, "green", outcome{valid: true, answer: "green", freeform: true, shown: "green"}, "", kindChoice, "1-2, r, or type your own answer"},
		{"freeform number", freeform, "2", outcome{valid: true, answer: "blue", index: idx(1), shown: "blue"}, "", kindChoice, ""},
		{"freeform out of range", freeform, "7", outcome{}, "7 is not on the list. Please choose 1-2, r, or type your own answer.", kindChoice, ""},
		{"freeform empty", freeform, "  ", outcome{}, "Please choose: 1-2, r, or type your own answer.", kindChoice, ""},
		{"text", text, " v2.0 ", outcome{valid: true, answer: "v2.0", freeform: true, shown: "v2.0"}, "", kindText, ""},
		{"text empty", text, "", outcome{}, "An answer is required: type it, or r or /reject to reject.", kindText, ""},
		{"text r", text, "r", outcome{valid: true, reject: true, shown: "r"}, "", kindText, ""},
		{"text /reject", text, "/reject", outcome{valid: true, reject: true, shown: "/reject"}, "", kindText, ""},
		{"text r inside", text, "run it", outcome{valid: true, answer: "run it", freeform: true, shown: "run it"}, "", kindText, ""},
		{"ask without choices is text", askText, "because", outcome{valid: true, answer: "because", freeform: true, shown: "because"}, "", kindText, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPrompt(tt.req)
			if p.kind != tt.kind {
				t.Fatalf("kind = %v, want %v", p.kind, tt.kind)
			}
			if tt.inputs != "" && p.validInputs() != tt.inputs {
				t.Errorf("valid inputs = %q, want %q", p.validInputs(), tt.inputs)
			}
			got := p.interpret(tt.in)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("interpret(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
			if p.hint != tt.hint {
				t.Errorf("hint = %q, want %q", p.hint, tt.hint)
			}
		})
	}
}

func TestPromptPointer(t *testing.T) {
	req := &protocol.UserInputRequest{InputType: protocol.InputChoice, Choices: []string{"a", "b", "c"}}
	p := newPrompt(req)
	if p.highlight != -1 {
		t.Fatalf("a new list has item %d highlighted; nothing should be at first", p.highlight)
	}
	if o := p.enter(); o.valid || p.hint == "" {
		t.Fatalf("Enter with nothing highlighted or typed = %+v, hint %q; want a re-prompt", o, p.hint)
	}
	p.move(true)
	if p.highlight != 0 {
		t.Errorf("Down from nothing highlights %d, want the first", p.highlight)
	}
	p = newPrompt(req)
	p.move(false)
	if p.highlight != 2 {
		t.Errorf("Up from nothing highlights %d, want the last", p.highlight)
	}
	p.move(true)
	if p.highlight != 0 {
		t.Errorf("Down from the last highlights %d, want the first (wrap)", p.highlight)
	}
	p.move(false)
	p.move(false)
	if p.highlight != 1 {
		t.Errorf("Up, Up from the first highlights %d, want 1", p.highlight)
	}
	o := p.enter()
	if !o.valid || o.answer != "b" || o.index == nil || *o.index != 1 {
		t.Errorf("Enter on the pointer = %+v, want b at 1", o)
	}
	// Typing wins over the pointer: the typed line is what Enter submits.
	p = newPrompt(req)
	p.move(true)
	p.input.insert('3')
	if o := p.enter(); o.answer != "c" {
		t.Errorf("Enter with 3 typed = %+v, want c", o)
	}
}

func TestApprovalWithMissingLabels(t *testing.T) {
	p := newPrompt(&protocol.UserInputRequest{InputType: protocol.InputApproval})
	if len(p.choices) != 2 {
		t.Fatalf("choices = %v", p.choices)
	}
	if o := p.interpret("a"); !o.valid || o.answer != "approve" {
		t.Errorf("a = %+v", o)
	}
	// A choice with no choices is the agent's error; the user can still
	// answer in words or reject.
	p = newPrompt(&protocol.UserInputRequest{InputType: protocol.InputChoice})
	if p.kind != kindText {
		t.Errorf("kind = %v, want text", p.kind)
	}
}

func TestVisibleWidth(t *testing.T) {
	for s, w := range map[string]int{
		"abc":                  3,
		"\x1b[36mabc\x1b[0m":   3,
		"日本":                   4,
		"e\u0301":              1,
		"\x1b[1m❯ \x1b[0m1) x": 6,
	} {
		if got := visibleWidth(s); got != w {
			t.Errorf("visibleWidth(%q) = %d, want %d", s, got, w)
		}
	}
}

func TestSanitize(t *testing.T) {
	if got := sanitize("a\x1b[31mb\x07"); got != "a⟨U+001B⟩[31mb⟨U+0007⟩" {
		t.Errorf("sanitize = %q", got)
	}
	if got := oneLine(" a\nb\r\nc "); got != "a ⏎ b ⏎ c" {
		t.Errorf("oneLine = %q", got)
	}
}

// TestRunHint: the line under a plan offers /run with steps the plan has;
// under a plan of one step it offered "/run 2 or /run 1,3".
func TestRunHint(t *testing.T) {
	for n, want := range map[int]string{
		1: "/run carries it out in Act.",
		2: "/run carries it out in Act; /run 1 or /run 2 only that step.",
		3: "/run carries it out in Act; /run 2 or /run 1,3 only those steps.",
		7: "/run carries it out in Act; /run 2 or /run 1,3 only those steps.",
	} {
		if got := runHint(n); got != want {
			t.Errorf("a plan of %d steps: %q, want %q", n, got, want)
		}
	}
}
