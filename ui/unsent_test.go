package ui

import (
	"strings"
	"testing"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// loseNext makes the proxy swallow what the window sends, sends prompt,
// waits until its frame went into the proxy (and nowhere else), then
// runs between (the user typing meanwhile) and cuts the connection: the
// relay never read the prompt.
func (h *harness) loseNext(prompt string, between func()) {
	h.t.Helper()
	before := h.proxy.Swallowed()
	h.proxy.SetSwallow(true)
	h.send(prompt)
	// A copilot:send of a prompt is well over 100 bytes; a ping, the only
	// other frame the client might write now, is a few.
	h.waitFor("the prompt on its way", func() bool { return h.proxy.Swallowed() >= before+100 })
	between()
	h.proxy.SetSwallow(false)
	h.proxy.DropAll()
}

func (h *harness) users() []string {
	var out []string
	for _, r := range h.rows() {
		if r.Kind == conversation.RowUser {
			out = append(out, r.Text)
		}
	}
	return out
}

// TestUnsentPromptComesBack: a prompt whose connection dropped before the
// relay read it is given back once the window reconnected: into the empty
// composer with a note, or, when the user typed something else meanwhile,
// whole in the note. It is never sent again by itself; sent by the user,
// it runs once.
func TestUnsentPromptComesBack(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	h.send("hello")
	h.waitFor("the first turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })

	h.loseNext("deploy the fix", func() {})
	h.waitFor("the prompt back in the composer", func() bool { return h.w.composer.Text == "deploy the fix" })
	h.frame()
	if note := h.lastRow(conversation.RowNote); !strings.Contains(note.Text, conversation.UnsentWhy+": it is back in the box below") || note.State != conversation.NoteWarn {
		t.Fatalf("the note: %+v\n%s", note, h.dump())
	}
	if got := h.users(); len(got) != 1 {
		t.Fatalf("prompts shown: %q, want hello alone", got)
	}
	h.send(h.w.composer.Text)
	// Its turn's end, not the first turn's status still last: a prompt
	// typed while it runs stays in the box.
	h.waitFor("the prompt sent again by the user, its turn done", func() bool { return len(h.users()) == 2 && completedTurns(h) == 2 })

	// The user typed something else meanwhile: the prompt goes after it.
	h.loseNext("second prompt", func() { h.w.composer.SetText("a draft") })
	h.waitFor("the prompt after the draft", func() bool { return h.w.composer.Text == "a draft\n\nsecond prompt" })
	h.frame()
	if note := h.lastRow(conversation.RowNote).Text; note != conversation.UnsentWhy+": it is back in the box below, after what you typed." {
		t.Fatalf("the note: %q", note)
	}
	if got := h.users(); len(got) != 2 || got[1] != "deploy the fix" {
		t.Fatalf("prompts shown: %q", got)
	}

	// The user went to another conversation meanwhile: the prompt waits
	// there, in a note that holds it, and goes into the composer when the
	// user comes back.
	first := h.w.current
	h.w.composer.SetText("")
	h.loseNext("third prompt", func() { h.w.newConversation() })
	h.waitFor("the note in the conversation left", func() bool {
		rows := h.w.store.Transcript(first)
		return len(rows) > 0 && rows[len(rows)-1].Text == conversation.UnsentWhy+": it goes back in the box when you open this conversation.\n\nthird prompt"
	})
	if h.w.composer.Text != "" {
		t.Fatalf("the other conversation's composer holds %q", h.w.composer.Text)
	}
	h.w.switchTo(first)
	if h.w.composer.Text != "third prompt" {
		t.Fatalf("back in the conversation, the composer holds %q", h.w.composer.Text)
	}
	h.w.composer.SetText("")

	// What the client says when the echo of a prompt given back comes
	// after all (client/unsent_test.go makes it): the composer is
	// emptied of it if it holds it as given back, and a note says so.
	h.w.composer.SetText("deploy the fix")
	h.w.unsent(&client.Unsent{ConversationID: h.w.current, ClientID: "k", Prompt: "deploy the fix", Arrived: true})
	h.frame()
	if h.w.composer.Text != "" || h.lastRow(conversation.RowNote).Text != conversation.ArrivedLate {
		t.Fatalf("after the late echo: composer %q, note %q", h.w.composer.Text, h.lastRow(conversation.RowNote).Text)
	}
}

// TestRefusedPromptComesBack: a prompt the relay refuses (here its folder
// does not exist) goes back into the composer, under the relay's reason,
// and is not shown as sent; one refused in a conversation left meanwhile
// goes into the composer when the user comes back.
func TestRefusedPromptComesBack(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	missing := t.TempDir() + "/no-such-folder"
	h.w.store.WantWorkspace(h.w.current, protocol.WorkspaceRequest{Path: missing})
	h.send("build it")
	h.waitFor("the prompt back in the composer", func() bool { return h.w.composer.Text == "build it" })
	h.frame()
	if note := h.lastRow(conversation.RowNote); !strings.Contains(note.Text, "The relay refused the request") || note.State != conversation.NoteError {
		t.Fatalf("the note: %+v\n%s", note, h.dump())
	}
	if got := h.users(); len(got) != 0 {
		t.Fatalf("prompts shown: %q, want none", got)
	}

	first := h.w.current
	h.w.composer.SetText("")
	h.w.newConversation()
	h.w.refused(&client.Refused{ConversationID: first, ClientID: "k", Prompt: "build it"})
	if h.w.composer.Text != "" {
		t.Fatalf("the other conversation's composer holds %q", h.w.composer.Text)
	}
	h.w.switchTo(first)
	if h.w.composer.Text != "build it" {
		t.Fatalf("back in the conversation, the composer holds %q", h.w.composer.Text)
	}
}
