package ui

import (
	"bufio"
	"context"
	"os"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/session"
	"github.com/pilotdesk/pilotdesk/ui/uitest"
)

// replayAgent plays a recorded turn of an agent (relay frames, one a line)
// back through the relay as the backend that produced it did: each turn
// emits the recording's events. testdata/acp-turn.jsonl was recorded from
// the ACP backend: reasoning, a plan updated as it goes, a read and an
// edit whose result is the backend's unified diff, the reply, usage.
type replayAgent struct {
	t      testing.TB
	events []session.Event
}

func newReplayAgent(t testing.TB, file string) *replayAgent {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a := &replayAgent{t: t}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		ev, err := client.Decode(sc.Bytes())
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		switch d := ev.Data.(type) {
		case *protocol.Reasoning:
			a.events = append(a.events, session.Reasoning{MessageID: d.MessageID, Content: d.Content})
		case *protocol.Plan:
			p := session.Plan{}
			for _, e := range d.Entries {
				p.Entries = append(p.Entries, session.PlanEntry{Content: e.Content, Priority: e.Priority, Status: e.Status})
			}
			a.events = append(a.events, p)
		case *protocol.ToolStart:
			a.events = append(a.events, session.ToolStart{ToolCallID: d.ToolCallID, ToolName: d.ToolName, Arguments: d.Arguments})
		case *protocol.ToolEnd:
			a.events = append(a.events, session.ToolEnd{ToolCallID: d.ToolCallID, Success: d.Success, Denied: d.Denied, Result: d.Result})
		case *protocol.Delta:
			a.events = append(a.events, session.Delta{MessageID: d.MessageID, Content: d.Content})
		case *protocol.Message:
			a.events = append(a.events, session.Message{MessageID: d.MessageID, Content: d.Content})
		case *protocol.Quota:
			a.events = append(a.events, session.Usage{InputTokens: d.InputTokens, OutputTokens: d.OutputTokens, CacheReadTokens: d.CacheReadTokens})
		default:
			t.Fatalf("%s: the replay agent does not play %s", file, ev.Type)
		}
	}
	return a
}

func (a *replayAgent) Name() string { return "acp" }

// Label is what the ACP backend says of an opencode it runs.
func (a *replayAgent) Label() string { return "OpenCode (ACP)" }
func (a *replayAgent) Close() error  { return nil }
func (a *replayAgent) Open(_ context.Context, _ string, _ session.OpenOptions, h session.Host) (session.Session, error) {
	return &replaySession{a: a, h: h}, nil
}

type replaySession struct {
	a *replayAgent
	h session.Host
}

func (s *replaySession) Run(ctx context.Context, _ session.Turn) error {
	for _, e := range s.a.events {
		if err := ctx.Err(); err != nil {
			return err
		}
		s.h.Emit(e)
	}
	return nil
}

func (s *replaySession) Close(context.Context) error { return nil }

func newACPHarness(t testing.TB, th fyne.Theme) *harness {
	return newHarness(t, harnessConfig{theme: th, fakeClock: true, size: fyne.NewSize(1100, 720),
		relay: relay.Config{Agent: newReplayAgent(t, "testdata/acp-turn.jsonl")}})
}

// shownRowOf returns the row view showing row i: one the window draws.
// A row view the list has let go of keeps its key until the list binds
// it again, so the key alone may name two views, one of them not drawn.
func (h *harness) shownRowOf(i int) *rowState {
	h.t.Helper()
	for _, s := range h.w.transcript.views {
		if s.key.id == i && s.key.gen == h.w.transcript.gen && s.cur != nil && s.cur.Visible() && h.drawn(s.cur) {
			return s
		}
	}
	h.t.Fatalf("row %d is not on screen", i)
	return nil
}

// drawn reports whether o is in the window's tree of visible objects.
func (h *harness) drawn(o fyne.CanvasObject) bool {
	found := false
	uitest.Walk(h.w.Window().Content(), func(c fyne.CanvasObject) bool {
		found = found || c == o
		return !found && c.Visible()
	})
	return found
}

func rowOf(h *harness, kind conversation.RowKind) int {
	for i, r := range h.rows() {
		if r.Kind == kind {
			return i
		}
	}
	h.t.Fatalf("no row of kind %d:\n%s", kind, h.dump())
	return -1
}

// TestAgentReasoningAndPlanRows: an ACP agent's reasoning shows collapsed
// under "Thought" with the start of its text, and expands to the whole
// text when its button is tapped; its plan is one card whose lines carry
// each step's state, the last one the agent sent; the reply stays apart.
func TestAgentReasoningAndPlanRows(t *testing.T) {
	h := newACPHarness(t, theme.DefaultTheme())
	h.send("retry three times")
	h.waitFor("the turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
	h.frame()

	if got := h.text(); got != "The client now retries **three** times, waiting 1 s, 2 s and 4 s.|" {
		t.Errorf("the reply rows hold %q: reasoning leaked into them, or the reply is missing", got)
	}
	ri := rowOf(h, conversation.RowReasoning)
	v := h.shownRowOf(ri).reasoning
	if v == nil || v.text.Visible() || !v.preview.Visible() || v.toggle.Text != "Thought" ||
		!strings.HasPrefix(v.preview.text(), "The retry loop gives up after one try; the config says three.") {
		t.Fatalf("collapsed reasoning: toggle %q, preview %q (shown %v), text shown %v", v.toggle.Text, v.preview.text(), v.preview.Visible(), v.text.Visible())
	}
	collapsed := h.w.transcript.heights[ri]
	test.Tap(v.toggle)
	h.frame()
	v = h.shownRowOf(ri).reasoning
	if !v.text.Visible() || v.preview.Visible() || !strings.HasSuffix(v.text.Text, "fix the constant and the backoff.") {
		t.Fatalf("expanded reasoning: text %q (shown %v)", v.text.Text, v.text.Visible())
	}
	if h.w.transcript.heights[ri] <= collapsed {
		t.Errorf("expanded, the row is %v high, collapsed %v", h.w.transcript.heights[ri], collapsed)
	}
	test.Tap(v.toggle)
	h.frame()
	if v = h.shownRowOf(ri).reasoning; v.text.Visible() {
		t.Errorf("tapped again, the reasoning is still expanded")
	}

	pi := rowOf(h, conversation.RowAgentPlan)
	if n := strings.Count(h.dump(), "agent plan:"); n != 1 {
		t.Errorf("%d plan rows, want one updated in place", n)
	}
	p := h.shownRowOf(pi).agentPlan
	got := shownText(p.obj)
	for _, want := range []string{"The agent's plan · 2 of 3 steps done", "✓  Read client.go  high priority",
		"✓  Raise maxRetries to 3 and back off exponentially  high priority", "○  Run the tests"} {
		if !strings.Contains(got, want) {
			t.Errorf("the plan card shows %q, without %q", got, want)
		}
	}
}

// TestScreenshotsACP pictures a turn of an ACP agent (the recording
// above): its reasoning expanded, its plan card, a read and an edit whose
// diff the backend made from the agent's ACP diff content, expanded.
// Written with -update, as TestScreenshots' pictures are.
func TestScreenshotsACP(t *testing.T) {
	for _, v := range []struct {
		name    string
		variant fyne.ThemeVariant
	}{{"light", theme.VariantLight}, {"dark", theme.VariantDark}} {
		t.Run(v.name, func(t *testing.T) {
			s := &shooter{t: t, variant: v.name}
			h := newACPHarness(t, FixedVariant(theme.DefaultTheme(), v.variant))
			h.send("retry three times")
			h.waitFor("the turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
			h.frame()
			test.Tap(h.shownRowOf(rowOf(h, conversation.RowReasoning)).reasoning.toggle)
			h.frame()
			tools := rowsOf(h, conversation.RowTool)
			if len(tools) != 2 {
				t.Fatalf("%d tool rows, want 2", len(tools))
			}
			edit := tools[1]
			if w := conversation.DescribeTool(h.rows()[edit].Title, []byte(h.rows()[edit].Args), h.rows()[edit].Detail); w.Kind != conversation.ToolEdit || len(w.Diff) == 0 {
				t.Fatalf("the edit row is not shown as a diff: %+v", w)
			}
			h.w.transcript.scrollToBottom()
			h.frame()
			test.Tap(h.shownTool(edit).expand)
			h.frame()
			h.w.transcript.scrollToBottom()
			s.shot(h, "acp-tool-diff")
			// The rows above were estimates until shown: scroll again once
			// they are measured.
			h.w.transcript.list.ScrollToTop()
			h.frame()
			h.w.transcript.list.ScrollToTop()
			// As a user's scroll up would be noticed: unless the window
			// knows it no longer follows the bottom, its next layout
			// (resized) scrolled back down before the picture, or not,
			// as the frames fell.
			if h.w.transcript.following() {
				t.Fatal("scrolled to the top, the transcript still follows the bottom")
			}
			s.shot(h, "acp-reasoning-plan")
		})
	}
}

func TestReasoningHeadAndShown(t *testing.T) {
	if got := head("héllo", 2); got != "h" {
		t.Errorf("head cut inside é: %q", got)
	}
	if got := head("abc", 10); got != "abc" {
		t.Errorf("head of a short text %q", got)
	}
	long := strings.Repeat("x", maxReasoningRunes) + "END"
	if got := reasoningShown(long); !strings.HasPrefix(got, "[… 3 earlier characters not shown]\n") || !strings.HasSuffix(got, "END") {
		t.Errorf("shown %q…", got[:60])
	}
}
