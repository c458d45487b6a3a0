package ui

import (
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
)

func TestApprovalModalKeys(t *testing.T) {
	for _, tc := range []struct {
		keys   string
		status string
		text   string
	}{
		{"a", protocol.StatusCompleted, "You said approve."},
		{"1", protocol.StatusCompleted, "You said approve."},
		{"r", protocol.StatusRejected, ""},
		{"2", protocol.StatusRejected, ""},
	} {
		t.Run(tc.keys, func(t *testing.T) {
			h := newHarness(t, harnessConfig{})
			h.send("approve the migration")
			m := h.waitModal(kindApproval)
			// The streamed text stays behind the modal.
			if !strings.Contains(h.text(), "I am about to run the migration.") {
				t.Fatalf("text behind the modal: %q", h.text())
			}
			// 5:00 as the question opens; a busy machine may take a
			// second to draw it.
			if l := h.w.wait.label.Text; !strings.HasPrefix(l, "Waiting for your answer · 5:00 left") && !strings.HasPrefix(l, "Waiting for your answer · 4:59 left") {
				t.Fatalf("waiting indicator %q", h.w.wait.label.Text)
			}
			// Any other key, Enter and Escape only show a hint.
			h.typeRunes("x")
			h.key(fyne.KeyReturn)
			h.key(fyne.KeyEscape)
			if !h.modalOpen() || m.hint.Text != "Press a or 1 to approve, r or 2 to reject." {
				t.Fatalf("after stray keys: open %v hint %q", h.modalOpen(), m.hint.Text)
			}
			h.typeRunes(tc.keys)
			if h.modalOpen() {
				t.Fatal("the modal stayed open after an answer")
			}
			h.waitFor("the turn to end", func() bool { return h.hasStatus(tc.status) })
			if tc.text != "" && !strings.Contains(h.text(), tc.text) {
				t.Fatalf("text %q", h.text())
			}
			if tc.status == protocol.StatusRejected {
				if r := h.lastRow(conversation.RowStatus); r.Text != conversation.RejectedText {
					t.Fatalf("status %q", r.Text)
				}
				// The partial text is kept above the status line.
				rows := h.rows()
				if rows[1].Text != "I am about to run the migration. " {
					t.Fatalf("partial text lost:\n%s", h.dump())
				}
			}
		})
	}
}

func TestApprovalModalButtons(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	h.send("approve it")
	h.waitModal(kindApproval)
	// The modal holds the question, Approve (primary) and Reject (danger).
	var approve, reject *widget.Button
	for _, o := range test.LaidOutObjects(h.w.modal.popup) {
		if b, ok := o.(*widget.Button); ok {
			switch b.Text {
			case "a) Run it":
				approve = b
			case "r) Skip":
				reject = b
			}
		}
	}
	if approve == nil || reject == nil || approve.Importance != widget.HighImportance || reject.Importance != widget.DangerImportance {
		t.Fatalf("buttons: approve %v reject %v", approve, reject)
	}
	test.Tap(approve)
	h.waitFor("the turn to complete", func() bool { return h.hasStatus(protocol.StatusCompleted) })
	if !strings.Contains(h.dump(), `You answered "approve" to "Run the migration?".`) {
		t.Fatalf("no answer note:\n%s", h.dump())
	}
}

func TestChoiceModalKeys(t *testing.T) {
	t.Run("number", func(t *testing.T) {
		h := newHarness(t, harnessConfig{})
		h.send("choose an environment")
		m := h.waitModal(kindChoice)
		if len(m.choices) != 3 || m.choices[0].Text != "1) staging" || m.choices[2].Text != "3) local" || m.highlight != -1 {
			t.Fatalf("choices %d highlight %d", len(m.choices), m.highlight)
		}
		h.typeRunes("7")
		if !strings.Contains(m.hint.Text, "1 to 3") || !h.modalOpen() {
			t.Fatalf("out of range: hint %q", m.hint.Text)
		}
		h.key(fyne.KeyReturn) // nothing highlighted: a hint, no default
		if !strings.HasPrefix(m.hint.Text, "Nothing is selected.") || !h.modalOpen() {
			t.Fatalf("enter with no highlight: %q", m.hint.Text)
		}
		h.typeRunes("2")
		h.waitFor("the turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
		if !strings.Contains(h.text(), "You picked production (index 1).") {
			t.Fatalf("text %q", h.text())
		}
	})
	t.Run("arrows", func(t *testing.T) {
		h := newHarness(t, harnessConfig{})
		h.send("choose an environment")
		m := h.waitModal(kindChoice)
		h.key(fyne.KeyUp) // none highlighted: Up goes to the last
		if m.highlight != 2 || m.choices[2].Importance != widget.HighImportance {
			t.Fatalf("up from none: %d", m.highlight)
		}
		h.key(fyne.KeyDown) // wraps to the first
		h.key(fyne.KeyDown)
		if m.highlight != 1 || m.choices[1].Importance != widget.HighImportance || m.choices[2].Importance == widget.HighImportance {
			t.Fatalf("down twice: %d", m.highlight)
		}
		h.key(fyne.KeyReturn)
		h.waitFor("the turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
		if !strings.Contains(h.text(), "You picked production (index 1).") {
			t.Fatalf("text %q", h.text())
		}
	})
	t.Run("down-first", func(t *testing.T) {
		h := newHarness(t, harnessConfig{})
		h.send("choose an environment")
		m := h.waitModal(kindChoice)
		h.key(fyne.KeyDown) // none highlighted: Down goes to the first
		if m.highlight != 0 {
			t.Fatalf("down from none: %d", m.highlight)
		}
		h.typeRunes("r")
		h.waitFor("the rejection", func() bool { return h.hasStatus(protocol.StatusRejected) })
	})
}

func TestSingleChoiceIsStillAList(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	h.send("single")
	m := h.waitModal(kindChoice)
	if len(m.choices) != 1 || m.choices[0].Text != "1) continue" {
		t.Fatalf("choices %v", m.choices)
	}
	h.key(fyne.KeyDown)
	h.key(fyne.KeyReturn)
	h.waitFor("the turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
	if !strings.Contains(h.text(), "You picked continue.") {
		t.Fatalf("text %q", h.text())
	}
}

// TestRefusedAnswerReopens: an answer the relay does not accept (here a
// choice that is none of the options) opens the question again, with the
// relay's reason as its hint, in the words the web client says it with.
func TestRefusedAnswerReopens(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	h.send("choose an environment")
	m := h.waitModal(kindChoice)
	h.w.answer(m.convID, m.req.RequestID, "nowhere", false, nil)
	want := conversation.AnswerRefusedText(`the answer must be one of the choices ("staging", "production", "local")`)
	h.waitFor("the relay's reason", func() bool { return h.w.modal != nil && h.w.modal.hint.Text == want })
	if !h.modalOpen() || !h.w.modal.hint.Visible() {
		t.Fatalf("after the refusal: open %v, hint shown %v", h.modalOpen(), h.w.modal.hint.Visible())
	}
	h.typeRunes("2")
	h.waitFor("the turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
	if !strings.Contains(h.text(), "You picked production (index 1).") {
		t.Fatalf("text %q", h.text())
	}
}

func TestTextModal(t *testing.T) {
	t.Run("answer", func(t *testing.T) {
		h := newHarness(t, harnessConfig{})
		h.send("text please")
		m := h.waitModal(kindText)
		if h.w.Window().Canvas().Focused() != m.entry {
			t.Fatal("the entry does not have the keyboard")
		}
		h.key(fyne.KeyReturn) // empty: re-asked with a hint
		if !h.modalOpen() || !strings.HasPrefix(m.hint.Text, "An answer is required.") {
			t.Fatalf("empty answer: %q", m.hint.Text)
		}
		test.Type(m.entry, "Aurora")
		h.key(fyne.KeyReturn)
		h.waitFor("the turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
		if !strings.Contains(h.text(), "You wrote Aurora.") {
			t.Fatalf("text %q", h.text())
		}
	})
	for _, rej := range []string{"r", "/reject"} {
		t.Run(rej, func(t *testing.T) {
			h := newHarness(t, harnessConfig{})
			h.send("text please")
			m := h.waitModal(kindText)
			test.Type(m.entry, rej)
			h.key(fyne.KeyReturn)
			h.waitFor("the rejection", func() bool { return h.hasStatus(protocol.StatusRejected) })
			if strings.Contains(h.text(), "You wrote") {
				t.Fatal("a rejection was sent as an answer")
			}
		})
	}
	t.Run("one-focus", func(t *testing.T) {
		// Only the answer field has the keyboard: the composer under the
		// modal no longer shows a focus border.
		h := newHarness(t, harnessConfig{})
		h.send("text please")
		m := h.waitModal(kindText)
		m.popup.Hide() // look under the modal without the window's own hiding
		if f := h.w.Window().Canvas().Focused(); f != nil {
			t.Fatalf("under the modal %T still has the focus", f)
		}
	})
	t.Run("reject-button", func(t *testing.T) {
		h := newHarness(t, harnessConfig{})
		h.send("text please")
		m := h.waitModal(kindText)
		tapButton(t, m.popup.Content, "Reject")
		h.waitFor("the rejection", func() bool { return h.hasStatus(protocol.StatusRejected) })
		if h.modalOpen() || strings.Contains(h.text(), "You wrote") {
			t.Fatal("the Reject button did not reject")
		}
	})
}

func TestAskUserModal(t *testing.T) {
	t.Run("choice-button", func(t *testing.T) {
		h := newHarness(t, harnessConfig{})
		h.send("ask me")
		m := h.waitModal(kindAsk)
		if len(m.choices) != 2 || m.entry == nil {
			t.Fatalf("ask_user with choices and allowFreeform: %d choices, entry %v", len(m.choices), m.entry != nil)
		}
		test.Tap(m.choices[1])
		h.waitFor("the turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
		if !strings.Contains(h.text(), "Using develop.") {
			t.Fatalf("text %q", h.text())
		}
	})
	t.Run("freeform", func(t *testing.T) {
		h := newHarness(t, harnessConfig{})
		h.send("ask me")
		m := h.waitModal(kindAsk)
		test.Type(m.entry, "release/2.0")
		m.entry.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
		h.waitFor("the turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
		if !strings.Contains(h.text(), "Using release/2.0.") {
			t.Fatalf("text %q", h.text())
		}
	})
	t.Run("open-question", func(t *testing.T) {
		h := newHarness(t, harnessConfig{})
		h.send("open question")
		m := h.waitModal(kindAsk)
		if len(m.choices) != 0 || m.entry == nil {
			t.Fatal("a question without choices shows only the text field")
		}
		test.Type(m.entry, "it is Friday")
		m.submitText()
		h.waitFor("the turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
		if !strings.Contains(h.text(), "Noted: it is Friday.") {
			t.Fatalf("text %q", h.text())
		}
	})
}

// TestSecondClientAnswers: another window answers; this window's modal
// closes by itself and the transcript says so.
func TestSecondClientAnswers(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	h.send("choose an environment")
	m := h.waitModal(kindChoice)
	other := relaytest.Dial(t, h.srv.URL+"?client=window", h.srv.Token)
	since := int64(0)
	other.Send(protocol.TypeSubscribe, protocol.Subscribe{ConversationID: h.w.current, SinceSeq: &since})
	other.WaitFor(protocol.TypeSubscribed, nil)
	idx := 2
	other.Send(protocol.TypeUserInputResponse, protocol.UserInputResponse{ConversationID: h.w.current, RequestID: m.req.RequestID, Answer: "local", Index: &idx})
	h.waitFor("the modal to close", func() bool { return !h.modalOpen() })
	h.waitFor("the turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
	if !strings.Contains(h.dump(), `"Which environment?" was answered from a window on this device.`) || !strings.Contains(h.text(), "You picked local (index 2).") {
		t.Fatalf("transcript:\n%s", h.dump())
	}
}

// TestAbortClosesModal: a Stop from another window withdraws the question.
func TestAbortClosesModal(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	h.send("text please")
	h.waitModal(kindText)
	other := h.srv.Dial(t)
	other.Send(protocol.TypeAbort, protocol.Abort{ConversationID: h.w.current})
	h.waitFor("the modal to close", func() bool { return !h.modalOpen() })
	h.waitFor("the abort", func() bool { return h.hasStatus(protocol.StatusAborted) })
	if !strings.Contains(h.dump(), "was withdrawn: the turn was stopped.") {
		t.Fatalf("transcript:\n%s", h.dump())
	}
}

// TestTimeoutClosesModal: the relay's timeout closes the open modal. The
// question times out when the test has seen its modal (a real 300 ms timer
// fired before a busy machine drew it, and the test waited for a modal
// that had come and gone).
func TestTimeoutClosesModal(t *testing.T) {
	timers := relaytest.NewInputTimers()
	h := newHarness(t, harnessConfig{relay: relay.Config{InputTimeout: time.Minute, InputTimer: timers.Start}})
	h.send("approve the migration")
	h.waitModal(kindApproval)
	timers.Expire(t)
	h.waitFor("the timeout", func() bool { return !h.modalOpen() })
	h.waitFor("the turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
	if !strings.Contains(h.dump(), `No answer in time: the question "Run the migration?" timed out`) {
		t.Fatalf("transcript:\n%s", h.dump())
	}
}

// TestWaitingMarkerAndNotification: a question in a conversation that is not
// shown marks its list entry; one arriving while the window is in the
// background sends an OS notification.
func TestWaitingMarkerAndNotification(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	// In the foreground: no notification.
	h.loop.AssertNotificationSent(t, nil, func() {
		h.send("ask me")
		h.waitModal(kindAsk)
		h.typeRunes("1")
		h.waitFor("the turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
	})
	h.w.notifier.focused = false
	h.loop.AssertNotificationSent(t, fyne.NewNotification("Question: ask me", "Run the migration?"), func() {
		h.send("approve the migration")
		h.waitModal(kindApproval)
	})
	first := h.w.current
	// Switch away: the entry shows the wait with the time left.
	h.w.newConversation()
	h.frame()
	if h.modalOpen() {
		t.Fatal("the modal of another conversation is shown")
	}
	found := false
	for _, e := range h.w.sidebar.entries {
		if e.ID == first {
			text, _ := entryStatus(e, h.w.now())
			found = strings.HasPrefix(text, "waiting for your answer · ")
		}
	}
	if !found {
		t.Fatalf("no waiting marker: %+v", h.w.sidebar.entries)
	}
	h.w.switchTo(first)
	h.waitModal(kindApproval)
	h.typeRunes("a")
	h.waitFor("the turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
}

// A relay that waits forever sends no expiresAt: no countdown.
func TestNoInputTimeout(t *testing.T) {
	h := newHarness(t, harnessConfig{relay: relay.Config{InputTimeout: -1}, options: Options{RelayName: "relay.example.com:7420"}})
	if got := h.w.Window().Title(); got != "pilotdesk — relay.example.com:7420" {
		t.Fatalf("title %q", got)
	}
	h.send("approve the migration")
	m := h.waitModal(kindApproval)
	if m.countdown.Text != "No time limit: the agent waits for your answer." || h.w.wait.label.Text != "Waiting for your answer" {
		t.Fatalf("countdown %q, indicator %q", m.countdown.Text, h.w.wait.label.Text)
	}
	h.typeRunes("a")
	h.waitFor("the turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
}

func TestRemoteTitle(t *testing.T) {
	if got := windowTitle(Options{Remote: true}, "wss://relay.example.com:7420/ws"); got != "pilotdesk — remote relay wss://relay.example.com:7420" {
		t.Fatalf("title %q", got)
	}
}

// TestUnsentAnswerReopens: an answer the window could not send (the relay
// is gone) opens the question again saying so, not that the relay refused
// it (it never saw it).
func TestUnsentAnswerReopens(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	h.send("choose an environment")
	m := h.waitModal(kindChoice)
	h.proxy.SetRefuse(true)
	h.proxy.DropAll()
	h.waitFor("the window offline", func() bool { return h.w.client.State() != client.StateLive })
	h.w.answer(m.convID, m.req.RequestID, "staging", false, nil)
	h.waitFor("the question again", func() bool {
		return h.w.modal != nil && strings.HasPrefix(h.w.modal.hint.Text, "Your answer was not sent (")
	})
	if hint := h.w.modal.hint.Text; strings.Contains(hint, "did not accept") || !strings.HasSuffix(hint, "give it again once the window is connected.") {
		t.Fatalf("hint %q", hint)
	}
}
