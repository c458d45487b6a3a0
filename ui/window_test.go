package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/ui/uitest"
)

func TestMarkdownTurnAndUsage(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	if got := h.w.Window().Title(); got != "pilotdesk — embedded relay" {
		t.Fatalf("title %q", got)
	}
	h.send("show me markdown")
	h.waitFor("the turn to complete", func() bool { return h.hasStatus(protocol.StatusCompleted) })

	var kinds []string
	names := []string{"user", "text", "code", "tool", "status", "mode", "note", "plan"}
	for _, r := range h.rows() {
		kinds = append(kinds, names[r.Kind])
	}
	if strings.Join(kinds, ",") != "user,text,text,text,code,text,status" {
		t.Fatalf("rows %v\n%s", kinds, h.dump())
	}
	rows := h.rows()
	if rows[0].Text != "show me markdown" || rows[1].Text != "# Release plan" || rows[4].Lang != "go" || !strings.Contains(rows[4].Text, "ship it") {
		t.Fatalf("rows:\n%s", h.dump())
	}
	// The markdown renders as rich text: a heading, a list, a link.
	segs := parseMarkdown(rows[3].Text)
	if p, ok := segs[0].(*widget.ParagraphSegment); !ok || !strings.HasPrefix(describe(segs), "1. Run the *tests*") {
		t.Fatalf("the list block parsed as %T: %s", segs[0], describe(segs))
	} else if len(p.Texts) < 2 {
		t.Fatalf("a list item with no text: %s", describe(segs))
	}
	if h.w.title.Text != "show me markdown" {
		t.Fatalf("conversation title %q", h.w.title.Text)
	}
	if got := h.w.status.usage.text(); !strings.Contains(got, "Model gpt-5") || !strings.Contains(got, "12 of 300 premium requests used, 96% left") ||
		!strings.Contains(got, "chat unlimited") || !strings.Contains(got, "×1 premium per request") || !strings.Contains(got, "cache 300 read / 40 written") {
		t.Fatalf("usage bar %q", got)
	}
	if got := h.w.status.totals.text(); got != "Session total: 1 premium request  ·  gpt-5: 1 request, 1200 tokens in / 80 out" {
		t.Fatalf("totals %q", got)
	}
	if h.w.status.conn.Text != "live" {
		t.Fatalf("badge %q", h.w.status.conn.Text)
	}
	// Copy reply puts the whole markdown on the clipboard.
	h.w.copyReplyBefore(len(rows) - 1)
	if got := h.app.Clipboard().Content(); !strings.HasPrefix(got, "# Release plan\n\n") || !strings.HasSuffix(got, "That is all.") {
		t.Fatalf("clipboard %q", got)
	}
	// The button says, for a moment, that it copied.
	h.frame()
	btn := h.shownRowOf(len(rows) - 1).line.copy
	test.Tap(btn)
	if btn.Text != "Copied" {
		t.Fatalf("Copy reply pressed reads %q", btn.Text)
	}
	h.waitFor("Copy reply to read as before", func() bool { return btn.Text == "Copy reply" })
}

func TestToolRowsAndComposer(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	// Shift+Enter adds a line instead of sending.
	test.Type(h.w.composer, "run the tool")
	h.w.composer.KeyDown(&fyne.KeyEvent{Name: "LeftShift"})
	h.w.composer.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	h.w.composer.KeyUp(&fyne.KeyEvent{Name: "LeftShift"})
	if h.w.composer.Text != "run the tool\n" {
		t.Fatalf("shift+enter: composer %q", h.w.composer.Text)
	}
	h.w.composer.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	if h.w.composer.Text != "" {
		t.Fatalf("enter did not send: %q", h.w.composer.Text)
	}
	h.waitFor("the turn to complete", func() bool { return h.hasStatus(protocol.StatusCompleted) })
	tool := h.lastRow(conversation.RowTool)
	if tool.Title != "bash" || tool.State != conversation.ToolApproved || tool.Text != "make deploy" {
		t.Fatalf("tool row %+v", tool)
	}
	if !strings.Contains(h.text(), "The tool was approved.") {
		t.Fatalf("text %q", h.text())
	}
	if h.rows()[0].Text != "run the tool" {
		t.Fatalf("prompt sent as %q", h.rows()[0].Text)
	}
}

func TestStopReplacesSend(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	if h.w.sendBtn.Text != "Send" {
		t.Fatal("idle button is not Send")
	}
	h.send("wait for it")
	h.waitFor("streaming", func() bool { return h.w.view.Streaming })
	if h.w.sendBtn.Text != "Stop" || h.w.sendBtn.Importance != widget.DangerImportance {
		t.Fatalf("streaming button %q", h.w.sendBtn.Text)
	}
	if !h.w.wait.box.Visible() || h.w.wait.label.Text != "Thinking…" {
		t.Fatalf("thinking indicator: visible %v %q", h.w.wait.box.Visible(), h.w.wait.label.Text)
	}
	// A prompt typed while streaming stays in the box.
	h.send("second")
	if h.w.composer.Text != "second" {
		t.Fatal("a prompt sent while streaming was lost")
	}
	// And the window says why it was not sent.
	h.frame()
	if note := h.lastRow(conversation.RowNote); !strings.Contains(note.Text, "A turn is running: Stop or wait") {
		t.Fatalf("Enter while streaming said %q", note.Text)
	}
	test.Tap(h.w.sendBtn.Button)
	h.waitFor("the abort", func() bool { return h.hasStatus(protocol.StatusAborted) })
	if h.w.sendBtn.Text != "Send" || h.w.wait.box.Visible() {
		t.Fatal("after stop: button or indicator not reset")
	}
}

func TestPlanToggleBannerAndDeniedTool(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	if h.w.mode.toggle.Mode() != protocol.ModeAct || h.w.mode.banner.Visible() {
		t.Fatal("a new conversation must start in Act without the banner")
	}
	test.Tap(h.w.mode.toggle.plan)
	if !h.w.mode.banner.Visible() || h.w.mode.bannerText.String() != PlanBannerText {
		t.Fatal("plan banner not shown")
	}
	h.send("use the tool")
	h.waitFor("the turn to complete", func() bool { return h.hasStatus(protocol.StatusCompleted) })
	if r := h.lastRow(conversation.RowTool); r.State != conversation.ToolDenied {
		t.Fatalf("tool in plan mode: %+v", r)
	}
	if r := h.rows()[0]; r.Mode != protocol.ModePlan {
		t.Fatalf("the prompt went in mode %q", r.Mode)
	}
	test.Tap(h.w.mode.toggle.act)
	h.waitFor("act confirmed", func() bool { return h.w.view.Mode == protocol.ModeAct })
	if h.w.mode.banner.Visible() {
		t.Fatal("banner still shown in act")
	}
	if r := h.lastRow(conversation.RowMode); r.Mode != protocol.ModeAct {
		t.Fatalf("no mode marker: %s", h.dump())
	}
}

// TestMidStreamModeSwitch switches to Plan while a turn runs: the relay
// applies it to the next tool request, and the transcript marks the switch.
func TestMidStreamModeSwitch(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	h.send("switch modes")
	h.waitFor("the first text", func() bool { return strings.Contains(h.text(), "Working in act mode.") })
	test.Tap(h.w.mode.toggle.plan)
	h.waitFor("the mode marker", func() bool { return h.lastRow(conversation.RowMode).Mode == protocol.ModePlan })
	m := h.waitModal(kindApproval)
	m.typedRune('a')
	h.waitFor("the turn to complete", func() bool { return h.hasStatus(protocol.StatusCompleted) })
	if r := h.lastRow(conversation.RowTool); r.State != conversation.ToolDenied {
		t.Fatalf("tool after the switch: %+v\n%s", r, h.dump())
	}
	if !strings.Contains(h.text(), "The deploy tool was denied.") {
		t.Fatalf("text %q", h.text())
	}
	// The marker sits between the text before and the tool call after.
	text, marker, tool := -1, -1, -1
	for i, r := range h.rows() {
		switch {
		case r.Kind == conversation.RowText && text < 0 && strings.Contains(r.Text, "Working in act mode."):
			text = i
		case r.Kind == conversation.RowMode && r.Mode == protocol.ModePlan:
			marker = i
		case r.Kind == conversation.RowTool:
			tool = i
		}
	}
	if !(text >= 0 && text < marker && marker < tool) {
		t.Fatalf("text at row %d, the marker at %d, the tool call at %d: the marker is not between them\n%s", text, marker, tool, h.dump())
	}
	if !strings.Contains(h.dump(), "mode: Switched to Plan: every tool call is denied from the next tool call.") {
		t.Fatalf("marker text:\n%s", h.dump())
	}
}

// TestReconnectReplaysWithoutDuplicates cuts the network mid-stream: the
// badge says reconnecting, and once back the turn's text is complete and
// shown once.
func TestReconnectReplaysWithoutDuplicates(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	h.send("slow count")
	h.waitFor("the first words", func() bool { return strings.Contains(h.text(), "two") })
	h.proxy.SetRefuse(true)
	h.proxy.DropAll()
	h.waitFor("the reconnecting badge", func() bool { return strings.HasPrefix(h.w.status.conn.Text, "reconnecting") })
	h.proxy.SetRefuse(false)
	h.waitFor("the turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
	if h.w.status.conn.Text != "live" {
		t.Fatalf("badge %q", h.w.status.conn.Text)
	}
	var kinds []string
	names := []string{"user", "text", "code", "tool", "status", "mode", "note", "plan"}
	for _, r := range h.rows() {
		kinds = append(kinds, names[r.Kind])
	}
	if strings.Join(kinds, ",") != "user,text,status" || h.rows()[1].Text != "zero one two three four five six seven eight nine" {
		t.Fatalf("after the reconnect:\n%s", h.dump())
	}
}

// TestOtherConversationsAndReplay: a conversation started by another client
// is listed; opening it replays its history.
func TestOtherConversationsAndReplay(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	other := h.srv.Dial(t)
	const id = "0b7e3a40-0000-4000-8000-00000000beef"
	other.Send(protocol.TypeSend, protocol.Send{ConversationID: id, Prompt: "use the tool please"})
	other.WaitFor(protocol.TypeIdle, nil)
	h.w.refreshList()
	h.waitFor("the listed conversation", func() bool {
		for _, e := range h.w.sidebar.entries {
			if e.ID == id {
				return e.Title == "use the tool please"
			}
		}
		return false
	})
	for i, e := range h.w.sidebar.entries {
		if e.ID == id {
			h.w.sidebar.list.Select(i)
		}
	}
	h.waitFor("the replay", func() bool { return h.hasStatus(protocol.StatusCompleted) })
	if h.w.current != id || h.rows()[0].Text != "use the tool please" || h.lastRow(conversation.RowTool).State != conversation.ToolApproved {
		t.Fatalf("replayed:\n%s", h.dump())
	}
}

func TestFailedTurn(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	h.send("fail now")
	h.waitFor("the error", func() bool { return h.hasStatus(protocol.StatusError) })
	if r := h.lastRow(conversation.RowStatus); r.Detail != "the model is overloaded" {
		t.Fatalf("status %+v\n%s", r, h.dump())
	}
}

func TestShortcuts(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	first := h.w.current
	h.w.shortcut(shortcutNew)
	h.w.newConv.submit() // the new-conversation dialog's Start, in the default folder
	if h.w.current == first {
		t.Fatal("Ctrl+N did not open a new conversation")
	}
	h.w.shortcut(shortcutMode)
	if h.w.mode.toggle.Mode() != protocol.ModePlan || !h.w.mode.banner.Visible() {
		t.Fatal("Ctrl+M did not switch to plan")
	}
	h.w.shortcut(shortcutMode)
	if h.w.mode.toggle.Mode() != protocol.ModeAct {
		t.Fatal("Ctrl+M did not switch back")
	}
	h.w.Window().Canvas().Unfocus()
	h.w.shortcut(shortcutFocus)
	if h.w.Window().Canvas().Focused() != h.w.composer {
		t.Fatal("Ctrl+L did not focus the composer")
	}
	h.send("wait for it")
	h.waitFor("streaming", func() bool { return h.w.view.Streaming })
	// The composer forwards the window's shortcuts.
	h.w.composer.TypedShortcut(shortcutStop)
	h.waitFor("the abort", func() bool { return h.hasStatus(protocol.StatusAborted) })
	h.send("wait for it")
	h.waitFor("streaming", func() bool { return h.w.view.Streaming && len(h.rows()) == 3 })
	h.w.composer.TypedKey(&fyne.KeyEvent{Name: fyne.KeyEscape})
	h.waitFor("the second abort", func() bool { return h.hasStatus(protocol.StatusAborted) && !h.w.view.Streaming })
}

func TestOfflineSendKeepsPrompt(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	h.proxy.SetRefuse(true)
	h.proxy.DropAll()
	h.waitFor("the reconnecting badge", func() bool { return strings.HasPrefix(h.w.status.conn.Text, "reconnecting") })
	h.send("hello while offline")
	h.waitFor("the prompt back in the box", func() bool { return h.w.composer.Text == "hello while offline" })
	if r := h.lastRow(conversation.RowNote); !strings.HasPrefix(r.Text, "Not sent:") {
		t.Fatalf("note %+v", r)
	}
}

// TestFollowBottom: new rows scroll into view while the user is at the
// bottom, also when the banner makes the list shorter; not after the user
// scrolled up; again once they scroll back down.
func TestFollowBottom(t *testing.T) {
	h := newHarness(t, harnessConfig{size: fyne.NewSize(900, 500)})
	relayout := func() { h.w.Window().Content().Refresh() }
	for i := 0; i < 3; i++ {
		h.send("show me markdown")
		h.waitFor("the turn", func() bool { return h.w.view.NumRows == 7*(i+1) && h.hasStatus(protocol.StatusCompleted) })
	}
	tr := h.w.transcript
	if !tr.atBottom() {
		t.Fatal("not at the bottom after three turns")
	}
	test.Tap(h.w.mode.toggle.plan) // the banner takes room below the list
	relayout()
	if !tr.atBottom() {
		t.Fatal("the banner pushed the last row out of view")
	}
	tr.list.ScrollToTop()
	// A turn another device starts (a prompt sent here would bring the
	// newest into view: TestNewMessagesBelow).
	h.srv.Dial(t).Send(protocol.TypeSend, protocol.Send{ConversationID: h.w.current, Prompt: "show me markdown", Mode: protocol.ModePlan})
	h.waitFor("the turn", func() bool { return completedTurns(h) == 4 })
	if tr.list.GetScrollOffset() != 0 {
		t.Fatal("the list scrolled although the user was reading above")
	}
	rows := h.w.view.NumRows
	tr.list.ScrollToBottom()
	h.send("use the tool")
	h.waitFor("the turn", func() bool { return h.w.view.NumRows > rows && completedTurns(h) == 5 })
	if !tr.atBottom() {
		t.Fatal("following did not resume at the bottom")
	}
}

// TestHeightsAfterResize: after the window gets narrower every row is as
// tall as its content needs at the new width.
func TestHeightsAfterResize(t *testing.T) {
	h := newHarness(t, harnessConfig{size: fyne.NewSize(1100, 720)})
	h.send("approve the migration")
	h.waitModal(kindApproval)
	h.typeRunes("a")
	h.waitFor("the turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
	h.send("choose an environment")
	h.waitModal(kindChoice)
	h.typeRunes("2")
	h.waitFor("the turn", func() bool { return h.w.view.NumRows > 8 && h.hasStatus(protocol.StatusCompleted) })
	h.w.Window().Resize(fyne.NewSize(760, 640))
	h.w.Window().Content().Refresh()
	h.frame()
	tr := h.w.transcript
	for i, r := range tr.rows {
		fresh := tr.newRowState()
		fresh.show(i, r, parseMarkdown(r.Text))
		if want := fresh.measureAt(tr.width); tr.heights[i] != want {
			t.Errorf("row %d (%s) is %v tall, needs %v", i, r.Text, tr.heights[i], want)
		}
	}
}

// TestRecycledRowMeasuresItsNewContent: a row view that showed a status
// line (with its copy button) and is reused for a note measures the note.
func TestRecycledRowMeasuresItsNewContent(t *testing.T) {
	h := newHarness(t, harnessConfig{size: fyne.NewSize(620, 600)})
	h.send("approve the migration")
	h.waitModal(kindApproval)
	h.typeRunes("a")
	h.waitFor("the turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
	tr := h.w.transcript
	note, status := -1, -1
	for i, r := range tr.rows {
		switch r.Kind {
		case conversation.RowNote:
			note = i
		case conversation.RowStatus:
			status = i
		}
	}
	obj := tr.createItem()
	obj.Resize(fyne.NewSize(tr.width, 40))
	tr.cache[status].exact = false
	tr.updateItem(status, obj)
	tr.cache[note].exact = false
	clear(tr.fixes)
	tr.heights[note] = -1 // force a fix to be recorded
	tr.updateItem(note, obj)
	fresh := tr.newRowState()
	fresh.show(note, tr.rows[note], nil)
	if got, want := tr.fixes[note], fresh.measureAt(tr.width); got != want {
		t.Fatalf("the reused row measured the note as %v, it needs %v", got, want)
	}
}

// TestEmptyHintNamesTheDemo: with the built-in demo agent the empty
// conversation says to type help; with another agent it does not.
func TestEmptyHintNamesTheDemo(t *testing.T) {
	h := newHarness(t, harnessConfig{options: Options{Agent: "script"}})
	if got := h.w.transcript.hint.Text; !strings.HasPrefix(got, "This is the built-in demo agent: type help") {
		t.Fatalf("hint with the demo: %q", got)
	}
	h = newHarness(t, harnessConfig{options: Options{Agent: "copilot"}})
	if got := h.w.transcript.hint.Text; strings.Contains(got, "help") {
		t.Fatalf("hint with copilot: %q", got)
	}
}

// TestWindowSize: the window cannot shrink below its minimum, and reopens
// at the size it was closed with.
func TestWindowSize(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	if m := h.w.Window().Content().MinSize(); m.Width < minWindowSize.Width || m.Height < minWindowSize.Height {
		t.Fatalf("content min size %v, want at least %v", m, minWindowSize)
	}
	prefs := h.app.Preferences()
	// The size of an earlier version, in two keys, is read.
	prefs.SetFloat(prefWindowWidth, 1000)
	prefs.SetFloat(prefWindowHeight, 700)
	if got := h.w.savedSize(); got != fyne.NewSize(1000, 700) {
		t.Fatalf("saved size from the earlier keys %v", got)
	}
	// Closing changes the preferences once, and not at all when the size
	// is the one saved.
	changes := 0
	prefs.AddChangeListener(func() { changes++ })
	h.w.Window().Resize(fyne.NewSize(900, 650))
	h.frame()
	h.w.saveSize()
	if got := h.w.savedSize(); got != fyne.NewSize(900, 650) {
		t.Fatalf("saved size %v", got)
	}
	h.w.saveSize()
	if changes != 1 {
		t.Fatalf("saving the size twice changed the preferences %d times, want 1", changes)
	}
	prefs.SetFloatList(prefWindowSize, []float64{200, 650}) // a size from a smaller screen
	if got := h.w.savedSize(); got.Width != minWindowSize.Width {
		t.Fatalf("a saved size under the minimum gives %v", got)
	}
}

// TestListClickKeepsTheKeyboard: choosing a conversation in the list gives
// the keyboard back to the composer.
func TestListClickKeepsTheKeyboard(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	h.send("show me markdown")
	h.waitFor("the turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
	first := h.w.current
	h.w.newConversation()
	h.frame()
	h.w.Window().Canvas().Unfocus()
	for i, e := range h.w.sidebar.entries {
		if e.ID == first {
			h.w.sidebar.list.Select(i)
		}
	}
	h.frame()
	if h.w.current != first || h.w.Window().Canvas().Focused() != h.w.composer {
		t.Fatalf("after a click in the list: current %q, focused %T", h.w.current, h.w.Window().Canvas().Focused())
	}
}

// TestUsageBarCredits: the bar shows this turn's and this conversation's
// credits and when the quota runs out at this pace.
func TestUsageBarCredits(t *testing.T) {
	h := newHarness(t, harnessConfig{fakeClock: true}) // 23 Nov 2026
	h.send("credits")
	h.waitFor("the turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
	h.send("credits again")
	h.waitFor("the second turn", func() bool {
		return strings.Contains(h.w.status.usage.text(), "conversation 4 credits")
	})
	want := "Model gpt-5  ·  this turn 2 credits · conversation 4 credits  ·  250 of 300 premium requests used, 16.67% left, resets 1 Dec · at this pace it runs out on 27 Nov  ·  ×1 premium per request"
	if got := h.w.status.usage.text(); got != want {
		t.Fatalf("usage bar\n got %q\nwant %q", got, want)
	}
}

// TestListPagesAndWatch: the window lists the relay's first page, asks for
// the next one when the list is scrolled to its end, and learns of a
// conversation another client starts without asking (it watches the list).
func TestListPagesAndWatch(t *testing.T) {
	h := newHarness(t, harnessConfig{relay: relay.Config{MaxNewConversations: 1000}})
	other := h.srv.Dial(t)
	for i := range 230 {
		other.Send(protocol.TypeSetMode, protocol.SetMode{ConversationID: fmt.Sprintf("0b7e3a40-0000-4000-8000-%012d", i), Mode: protocol.ModePlan})
	}
	// The relay lists a conversation once its event is stored and sent,
	// after set_mode is answered (a pong proves only the answer): with
	// the last one's mode_changed, which the committer sends after every
	// one before it, all 230 are listed, and the first page is a full one
	// with a cursor, not what was stored by then with the rest coming as
	// notices.
	last := fmt.Sprintf("0b7e3a40-0000-4000-8000-%012d", 229)
	since := int64(0)
	other.Send(protocol.TypeSubscribe, protocol.Subscribe{ConversationID: last, SinceSeq: &since})
	other.WaitFor(protocol.TypeModeChanged, func(f relaytest.Frame) bool { return f.Field("conversationId") == last })
	h.w.refreshList()
	h.waitFor("the first page", func() bool { return len(h.w.sidebar.entries) >= 200 })
	h.w.sidebar.list.ScrollToBottom()
	h.waitFor("the second page, after scrolling to the end", func() bool { return len(h.w.sidebar.entries) == 231 })

	// Started elsewhere: the relay says so; nothing polls.
	const id = "0b7e3a40-0000-4000-8000-00000000beef"
	other.Send(protocol.TypeSend, protocol.Send{ConversationID: id, Prompt: "show me markdown"})
	h.waitFor("the new conversation in the list", func() bool {
		for _, e := range h.w.sidebar.entries {
			if e.ID == id && e.Title == "show me markdown" {
				return true
			}
		}
		return false
	})
}

// TestBudget: the usage bar shows the relay's credit budget; at 80% the
// window warns once; once spent, Send is disabled, the bar says why and how
// to raise it, and Enter keeps the draft with the same words.
func TestBudget(t *testing.T) {
	h := newHarness(t, harnessConfig{relay: relay.Config{BudgetCredits: 10}})
	h.waitFor("the budget", func() bool {
		return strings.Contains(h.w.status.totals.text(), "budget: 0 of 10 credits spent in 30 days, 10 left")
	})
	h.send("expensive")
	h.waitFor("the warning", func() bool {
		r := h.lastRow(conversation.RowNote)
		return strings.HasPrefix(r.Text, "80% of the credit budget is spent: 8.5 of 10 credits")
	})
	h.waitFor("the turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
	h.frame()
	if h.w.sendBtn.Disabled() {
		t.Fatal("Send is disabled below the budget")
	}
	h.send("expensive again")
	h.waitFor("the budget spent", func() bool { return h.w.budget.spent() && h.w.sendBtn.Disabled() })
	h.frame() // the note it added
	if got := h.w.status.totals.text(); !strings.Contains(got, "budget spent: 17 of 10 credits in 30 days, new turns from ") {
		t.Fatalf("totals line %q", got)
	}
	if r := h.lastRow(conversation.RowNote); !strings.HasPrefix(r.Text, "The credit budget is spent (17 of 10 credits in the last 30 days)") || !strings.Contains(r.Text, "--budget-credits") {
		t.Fatalf("the note that says why: %q\n%s", r.Text, h.dump())
	}
	notes := 0
	for _, r := range h.rows() {
		if strings.HasPrefix(r.Text, "80% of the credit budget") {
			notes++
		}
	}
	if notes > 1 {
		t.Fatalf("the 80%% warning was given %d times", notes)
	}
	h.w.composer.SetText("one more")
	h.w.submit()
	h.frame()
	if h.w.composer.Text != "one more" || !strings.HasPrefix(h.lastRow(conversation.RowNote).Text, "The credit budget is spent") {
		t.Fatalf("a refused prompt: draft %q, note %q", h.w.composer.Text, h.lastRow(conversation.RowNote).Text)
	}
}

// TestListHoldsStillUnderThePointer: while the pointer is over the list, a
// conversation that starts streaming elsewhere does not move the rows; the
// order catches up once the pointer leaves.
func TestListHoldsStillUnderThePointer(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	other := h.srv.Dial(t)
	const a, b = "0b7e3a40-0000-4000-8000-00000000000a", "0b7e3a40-0000-4000-8000-00000000000b"
	for _, id := range []string{a, b} {
		other.Send(protocol.TypeSend, protocol.Send{ConversationID: id, Prompt: "use the tool " + id[len(id)-1:]})
		other.WaitFor(protocol.TypeIdle, nil)
	}
	h.waitFor("both listed", func() bool { return len(h.w.sidebar.entries) == 3 })
	order := func() string {
		var ids []string
		for _, e := range h.w.sidebar.entries {
			ids = append(ids, e.ID[len(e.ID)-1:])
		}
		return strings.Join(ids, "")
	}
	before := order()
	// The one further down starts streaming, a second later (the list's
	// times are whole seconds): it belongs at the top.
	mover := a
	if before[0] == 'a' {
		mover = b
	}
	time.Sleep(1100 * time.Millisecond)
	h.shownRow(0).MouseIn(nil)
	// A turn that streams until the test ends ("wait": 30 s): a short one
	// (slow count streamed for 360 ms) could start and end between two
	// looks of a test a busy machine held, and it never saw it stream.
	other.Send(protocol.TypeSend, protocol.Send{ConversationID: mover, Prompt: "wait for it"})
	h.waitFor("it streams", func() bool {
		for _, e := range h.w.sidebar.entries {
			if e.ID == mover {
				return e.Streaming
			}
		}
		return false
	})
	if got := order(); got != before {
		t.Fatalf("under the pointer the list went from %s to %s", before, got)
	}
	h.shownRow(0).MouseOut()
	h.waitFor("the order to catch up", func() bool { return h.w.sidebar.entries[0].ID == mover })
}

// shownRow returns the list row drawn for entry i of the sidebar.
func (h *harness) shownRow(i int) *hoverBox {
	h.t.Helper()
	var found *hoverBox
	uitest.Walk(h.w.sidebar.list, func(o fyne.CanvasObject) bool {
		if b, ok := o.(*hoverBox); ok && found == nil {
			found = b
		}
		return true
	})
	if found == nil {
		h.t.Fatal("no row of the list is drawn")
	}
	return found
}

// The window starts with the composer focused (NewWindow focuses it once
// its widgets are the window's content; before, the GL driver logged an
// error for each attempt, which scripts/check-window.sh checks on the real
// window).
func TestWindowStartsWithTheComposerFocused(t *testing.T) {
	a, loop := uitest.NewApp(t)
	w := NewWindow(a, nil, Options{})
	t.Cleanup(func() {
		w.Close()
		w.Wait()
		w.Window().Close()
	})
	loop.Drain()
	if f := w.Window().Canvas().Focused(); f != w.composer {
		t.Errorf("focused at start: %T, want the composer", f)
	}
}
