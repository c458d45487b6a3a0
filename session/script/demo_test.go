package script

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/assets"
	"github.com/pilotdesk/pilotdesk/session"
)

// TestDemoIsGenerated keeps assets/demo.json equal to its source in
// demo_gen_test.go; -update rewrites the file.
func TestDemoIsGenerated(t *testing.T) {
	want := demoJSON()
	if *update {
		if err := os.WriteFile(demoPath, want, 0o644); err != nil {
			t.Fatalf("write %s: %v", demoPath, err)
		}
		t.Logf("wrote %s (%d bytes); rebuild to embed it", demoPath, len(want))
		return
	}
	if !bytes.Equal(assets.DemoScript, want) {
		t.Fatalf("assets/demo.json differs from demo_gen_test.go: edit the source there and run\n\tgo test ./session/script/ -run TestDemoIsGenerated -update")
	}
}

func demoScript(t *testing.T) *Script {
	t.Helper()
	s, err := Demo()
	if err != nil {
		t.Fatalf("the built-in demo does not parse: %v", err)
	}
	return s
}

// answerEverything answers every question of the demo the way an agreeable
// user would, and records what it answered.
func answerEverything(host *fakeHost) {
	host.answer = func(_ context.Context, req session.InputRequest) (session.Answer, error) {
		switch {
		case req.InputType == "approval":
			return session.Answer{Text: "approve", Index: 0}, nil
		case req.InputType == "text":
			return session.Answer{Text: "gopherdesk", WasFreeform: true, Index: -1}, nil
		case req.AllowFreeform != nil && *req.AllowFreeform:
			return session.Answer{Text: "Acme", WasFreeform: true, Index: -1}, nil
		case len(req.Choices) > 1:
			return session.Answer{Text: req.Choices[1], Index: 1}, nil
		}
		return session.Answer{}, session.ErrInvalidRequest
	}
}

// playDemo plays one prompt of the demo with recorded (not waited) pauses.
func playDemo(t *testing.T, host *fakeHost, prompt string) ([]session.Event, time.Duration, error) {
	t.Helper()
	a := New(demoScript(t)).(*Agent)
	rec := &sleepRecorder{}
	a.sleep = rec.sleep
	// The demo's edit turn writes in the conversation's folder.
	sess, err := a.Open(context.Background(), "demo", session.OpenOptions{WorkDir: t.TempDir()}, host)
	if err != nil {
		t.Fatal(err)
	}
	err = run(t, sess, prompt)
	events, _, _ := host.recorded()
	return events, rec.slept(), err
}

func TestDemoTour(t *testing.T) {
	host := newFakeHost("act")
	answerEverything(host)
	events, slept, err := playDemo(t, host, "Hello there")
	if err != nil {
		t.Fatalf("the tour failed: %v", err)
	}
	if slept > 20*time.Second {
		t.Errorf("the tour pauses for %v in all, want under 20s", slept)
	}
	t.Logf("the tour pauses for %v over %d events", slept, len(events))

	var kinds []string
	var text strings.Builder
	for _, e := range events {
		switch e := e.(type) {
		case session.Delta:
			text.WriteString(e.Content)
			if len(kinds) == 0 || kinds[len(kinds)-1] != "delta" {
				kinds = append(kinds, "delta")
			}
		case session.ToolEnd:
			if !e.Success || e.Denied || !strings.Contains(e.Result, "ok") {
				t.Errorf("tool end %+v, want a success in act mode", e)
			}
			kinds = append(kinds, "tool_end")
		case session.Usage:
			if e.Model == "" || e.Cost == nil || e.CacheReadTokens == nil || e.CacheWriteTokens == nil || !strings.Contains(string(e.QuotaSnapshots), `"premium_interactions"`) {
				t.Errorf("usage %+v lacks a field the usage bar shows", e)
			}
			kinds = append(kinds, "usage")
		case session.Shutdown:
			if e.TotalPremiumRequests == 0 || !json.Valid(e.ModelMetrics) {
				t.Errorf("shutdown %+v", e)
			}
			kinds = append(kinds, "shutdown")
		case session.ToolStart:
			kinds = append(kinds, "tool_start")
		case session.Message:
			kinds = append(kinds, "message")
			if e.Content != text.String() {
				t.Errorf("the message is not the whole of the deltas")
			}
		}
	}
	want := []string{"delta", "tool_start", "tool_end", "delta", "usage", "delta", "shutdown", "delta", "message"}
	if !reflect.DeepEqual(kinds, want) {
		t.Errorf("event order %v, want %v", kinds, want)
	}
	_, _, asks := host.recorded()
	var types []string
	for _, a := range asks {
		types = append(types, a.InputType)
	}
	if !reflect.DeepEqual(types, []string{"approval", "choice", "text", ""}) {
		t.Errorf("questions of types %q, want approval, choice, text and an ask", types)
	}
	got := text.String()
	for _, s := range []string{
		"“Hello there”", "**act** mode", "was **approved**", "answer: **approve**",
		"picked **Integration**", "(index 1", "**gopherdesk**", "**Acme**", "```go\n", "{{" /* must not appear */} {
		if s == "{{" {
			if strings.Contains(got, s) {
				t.Errorf("a placeholder was left unfilled in %q", got)
			}
			continue
		}
		if !strings.Contains(got, s) {
			t.Errorf("the tour does not say %q", s)
		}
	}
}

func TestDemoTourInPlanMode(t *testing.T) {
	host := newFakeHost("plan")
	answerEverything(host)
	events, _, err := playDemo(t, host, "hi")
	if err != nil {
		t.Fatalf("the tour failed: %v", err)
	}
	text := strings.Join(deltasOf(events), "")
	if !strings.Contains(text, "was **denied**") || !strings.Contains(text, "**plan** mode") {
		t.Errorf("the tour in plan mode does not narrate the denial: %q", text)
	}
}

// TestDemoTourRejected: rejecting the approval ends the tour.
func TestDemoTourRejected(t *testing.T) {
	host := newFakeHost("act")
	host.answer = func(context.Context, session.InputRequest) (session.Answer, error) {
		return session.Answer{}, session.ErrRejected
	}
	events, _, err := playDemo(t, host, "hi")
	if err == nil || !strings.Contains(err.Error(), session.ErrRejected.Error()) {
		t.Fatalf("Run = %v, want the rejection", err)
	}
	if len(messagesOf(events)) != 0 {
		t.Error("a rejected tour sent its message")
	}
}

// TestDemoKeywords: each feature has its own turn, found by the keyword the
// help turn lists, and each plays to its end.
func TestDemoKeywords(t *testing.T) {
	s := demoScript(t)
	help := s.match("help")
	if help == nil || help.Match != "help" {
		t.Fatal("no help turn")
	}
	var helpText strings.Builder
	for _, st := range help.Steps {
		if d, ok := st.(DeltaStep); ok {
			helpText.WriteString(d.Text)
		}
	}
	for _, tc := range []struct {
		keyword string
		wantErr bool
		check   func(t *testing.T, events []session.Event)
	}{
		{"markdown", false, func(t *testing.T, events []session.Event) {
			text := strings.Join(deltasOf(events), "")
			for _, md := range []string{"## ", "\n- ", "`inline code`", "```go\n", "](https://", "**bold**"} {
				if !strings.Contains(text, md) {
					t.Errorf("no %q in the markdown demo", md)
				}
			}
		}},
		{"tool", false, countOf[session.ToolEnd](2)},
		{"plan", false, countOf[session.ToolEnd](1)},
		{"approve", false, countOf[session.Message](1)},
		{"choose", false, countOf[session.Message](1)},
		{"text", false, countOf[session.Message](1)},
		{"ask", false, countOf[session.Message](1)},
		{"edit a file", false, func(t *testing.T, events []session.Event) {
			var ends []session.ToolEnd
			for _, e := range events {
				if end, ok := e.(session.ToolEnd); ok {
					ends = append(ends, end)
				}
			}
			if len(ends) != 2 || !ends[0].Success || !ends[1].Success || !strings.Contains(ends[1].Result, "A note from the pilotdesk demo") {
				t.Errorf("the edit demo's tools: %+v", ends)
			}
		}},
		{"usage", false, func(t *testing.T, events []session.Event) {
			countOf[session.Usage](1)(t, events)
			countOf[session.Shutdown](1)(t, events)
		}},
		{"slow", false, countOf[session.Message](1)},
		{"error", true, countOf[session.Message](0)},
	} {
		t.Run(tc.keyword, func(t *testing.T) {
			if turn := s.match("Please show me " + strings.ToUpper(tc.keyword)); turn == nil || turn.Match != tc.keyword {
				t.Fatalf("%q does not reach its own turn", tc.keyword)
			}
			if !strings.Contains(helpText.String(), "`"+tc.keyword+"`") {
				t.Errorf("the help turn does not list %q", tc.keyword)
			}
			host := newFakeHost("act")
			answerEverything(host)
			events, slept, err := playDemo(t, host, tc.keyword)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Run = %v, want error %v", err, tc.wantErr)
			}
			if slept > 20*time.Second {
				t.Errorf("pauses for %v", slept)
			}
			if text := strings.Join(deltasOf(events), ""); strings.Contains(text, "{{") {
				t.Errorf("an unfilled placeholder in %q", text)
			}
			tc.check(t, events)
		})
	}
}

func countOf[E session.Event](want int) func(t *testing.T, events []session.Event) {
	return func(t *testing.T, events []session.Event) {
		t.Helper()
		n := 0
		for _, e := range events {
			if _, ok := e.(E); ok {
				n++
			}
		}
		if n != want {
			var zero E
			t.Errorf("%d %T events, want %d", n, zero, want)
		}
	}
}

// TestDemoShowsEveryFeature: the demo uses every step, input type and
// substitution of the format.
func TestDemoShowsEveryFeature(t *testing.T) {
	s := demoScript(t)
	seen := map[string]bool{}
	for _, turn := range s.Turns {
		for _, st := range turn.Steps {
			seen[st.stepKey()] = true
			switch st := st.(type) {
			case InputStep:
				seen["input:"+st.Type] = true
			case AskStep:
				if len(st.Choices) > 0 && st.AllowFreeform != nil && *st.AllowFreeform {
					seen["ask:freeform with choices"] = true
				}
			case DeltaStep:
				for _, p := range []string{"prompt", "mode", "tool", "answer", "index", "error", "workspace"} {
					if strings.Contains(st.Text, "{{"+p+"}}") {
						seen["{{"+p+"}}"] = true
					}
				}
			}
		}
	}
	for _, f := range append(slicesClone(stepKeys),
		"input:approval", "input:choice", "input:text", "ask:freeform with choices",
		"{{prompt}}", "{{mode}}", "{{tool}}", "{{answer}}", "{{index}}", "{{error}}", "{{workspace}}") {
		if !seen[f] {
			t.Errorf("the demo never shows %s", f)
		}
	}
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

// demoText is the assistant text a played demo turn wrote.
func demoText(events []session.Event) string {
	var b strings.Builder
	for _, e := range events {
		if d, ok := e.(session.Delta); ok {
			b.WriteString(d.Content)
		}
	}
	return b.String()
}

// TestDemoWordsFitWhatHappened: the demo's sentences stay true whatever
// the user did: a mode switch between two tool calls, a question left to
// time out; and its help speaks of the window's buttons.
func TestDemoWordsFitWhatHappened(t *testing.T) {
	host := newFakeHost("plan")
	host.onEmit = func(e session.Event) {
		if _, ok := e.(session.ToolEnd); ok {
			host.setMode("act") // the user switches after the first call
		}
	}
	events, _, err := playDemo(t, host, "tool")
	if err != nil {
		t.Fatal(err)
	}
	if text := demoText(events); !strings.Contains(text, "was **denied**") || !strings.Contains(text, "That call was **approved**.") || strings.Contains(text, "too.") {
		t.Errorf("tool turn after a switch says:\n%s", text)
	}

	host = newFakeHost("act")
	host.answer = func(context.Context, session.InputRequest) (session.Answer, error) {
		return session.Answer{}, session.ErrTimeout
	}
	events, _, err = playDemo(t, host, "text")
	if err != nil {
		t.Fatal(err)
	}
	if text := demoText(events); strings.Contains(text, "Creating") || !strings.Contains(text, "ended with `timeout`") {
		t.Errorf("text turn after a timeout says:\n%s", text)
	}

	events, _, err = playDemo(t, newFakeHost("act"), "help")
	if err != nil {
		t.Fatal(err)
	}
	if text := demoText(events); !strings.Contains(text, "**Plan** and **Act** buttons") {
		t.Errorf("help does not name the window's buttons:\n%s", text)
	}
}

// TestLabelNamesTheScenario: the built-in demo is labelled the demo, any
// other scenario by its file's name, which the list and the window show.
func TestLabelNamesTheScenario(t *testing.T) {
	demo, err := Demo()
	if err != nil {
		t.Fatal(err)
	}
	file, err := Parse("/home/me/scenarios/deploy.json", []byte(`{"turns": [{"steps": [{"delta": "hi"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		agent session.Agent
		want  string
	}{
		{NewDemo(demo, DemoOptions{}), "demo (scripted)"},
		{New(demo), "demo (scripted)"},
		{New(file), "deploy.json (scripted)"},
	} {
		if got := tc.agent.(session.Labeler).Label(); got != tc.want {
			t.Errorf("Label() = %q, want %q", got, tc.want)
		}
	}
}
