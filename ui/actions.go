package ui

import (
	"context"
	"strings"
	"unicode"

	"github.com/google/uuid"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// What the user does in the window: open or switch conversations, send a
// prompt, stop a turn, switch the mode, answer a question. Each runs on
// the UI goroutine, changes what shows at once, and queues its request
// to the relay (enqueue), so that a slow network never freezes the
// window; a request that fails says so in the conversation.

func (w *Window) newConversation() {
	id := uuid.NewString()
	w.store.Create(id)
	w.switchTo(id)
	w.focusComposer()
}

// switchTo shows another conversation, subscribing to it the first time.
func (w *Window) switchTo(id string) {
	// A click in the list leaves the keyboard where the user types.
	defer w.focusComposer()
	if id == w.current && w.view.ID == id {
		return
	}
	prev := w.current
	w.current = id
	w.dropUnused(prev)
	w.mode.forget()
	if w.opts.OnShown != nil {
		w.opts.OnShown(id)
	}
	if w.modal != nil {
		w.modal.hide()
		w.modal = nil
	}
	if !w.subscribed[id] && w.store.OnRelay(id) {
		w.subscribe(id)
	}
	if p, ok := w.givenBack[id]; ok {
		delete(w.givenBack, id)
		w.putBack(p)
	}
	w.sync(true)
}

// dropUnused forgets conversation id, just left, when it was never used:
// made by New (or at start) and left before anything was sent in it, it
// is on no relay and holds nothing. Without this each New conversation
// (Ctrl+N, Start) left the one before it in the list, an empty "New
// conversation" entry more each time. A prompt on its way (subscribed),
// a note the window wrote in it, or the relay's knowing it keeps it.
func (w *Window) dropUnused(id string) {
	if id == "" || w.subscribed[id] || !w.store.Has(id) || w.store.OnRelay(id) || len(w.store.Transcript(id)) > 0 {
		return
	}
	w.store.Remove(id)
}

func (w *Window) subscribe(id string) {
	w.subscribed[id] = true
	w.store.Replaying(id)
	w.enqueue(func(ctx context.Context) {
		if err := w.client.Subscribe(ctx, id, 0); err != nil {
			w.log.Warn("subscribe failed", "conversation", id, "err", err)
		}
	})
}

func (w *Window) sendOrStop() {
	if w.view.Streaming {
		w.stop()
		return
	}
	w.submit()
}

// submit sends the composer's text as a prompt.
func (w *Window) submit() {
	prompt := strings.TrimSpace(w.composer.Text)
	if prompt == "" || w.client == nil {
		return // without a relay yet, Enter keeps the draft
	}
	if w.view.Streaming {
		// Enter while streaming keeps the draft, and says why it waits.
		w.store.AddNote(w.current, conversation.NoteWarn, "A turn is running: Stop or wait. Your prompt stays in the box.")
		return
	}
	if w.budget.spent() {
		// The relay would refuse it: say why here and keep the draft.
		w.store.AddNote(w.current, conversation.NoteError, w.budget.refusal(w.now()))
		return
	}
	id, mode, modelName := w.current, w.shownMode(), w.opts.Model
	w.composer.setText("")
	// What is sent comes into view, and the reply after it, wherever
	// the user had scrolled.
	w.transcript.scrollToBottom()
	w.store.ClearNotice()
	if w.notice != nil && w.notice.id == firstRunNoticeID && w.notice.shrink() {
		relayout(w.chat) // the transcript takes the room the notice gave up
	}
	first := !w.subscribed[id]
	w.subscribed[id] = true
	ws := w.store.Wanted(id)
	if ws == nil && !w.store.OnRelay(id) {
		// A new conversation with no folder chosen works in the default
		// folder as it is now; kept as its choice, so that a second
		// prompt sent before the relay answered names the same one.
		if ws = w.defaultWorkspace(); ws != nil {
			w.store.WantWorkspace(id, *ws)
		}
	}
	w.enqueue(func(ctx context.Context) {
		if first {
			if err := w.client.Subscribe(ctx, id, 0); err != nil {
				w.log.Warn("subscribe failed", "conversation", id, "err", err)
			}
		}
		if err := w.client.SendIn(ctx, id, prompt, mode, modelName, ws); err != nil {
			w.store.AddNote(id, conversation.NoteError, "Not sent: "+err.Error()+". Your prompt is back in the box below.")
			w.onUI(func() {
				if w.composer.Text == "" {
					w.composer.setText(prompt)
				}
			})
		}
	})
}

// unsent gives back a prompt the relay did not get (the client found, once
// it reconnected, that the relay has neither echoed nor kept it): into the
// composer when it shows that conversation (after what the user typed
// meanwhile, so that nothing is lost), else into it once the user opens
// that conversation; a note says so and holds the prompt. It is never
// sent again by itself: the user decides.
func (w *Window) unsent(u *client.Unsent) {
	id := u.ConversationID
	if u.Arrived {
		// Given back before, and its echo came after all: the box is
		// emptied of it if it holds it as it was given back.
		if id == w.current && w.composer.Text == u.Prompt {
			w.composer.setText("")
		}
		if w.givenBack[id] == u.Prompt {
			delete(w.givenBack, id)
		}
		w.store.AddNote(id, conversation.NoteInfo, conversation.ArrivedLate)
		return
	}
	if conversation.IsPlanPrompt(u.Prompt) {
		w.transcript.planGivenBack()
	}
	switch {
	case id != w.current:
		w.givenBack[id] = u.Prompt
		w.store.AddNote(id, conversation.NoteWarn, conversation.UnsentWhy+": it goes back in the box when you open this conversation.\n\n"+u.Prompt)
	case strings.TrimSpace(w.composer.Text) == "":
		w.putBack(u.Prompt)
		w.store.AddNote(id, conversation.NoteWarn, conversation.UnsentWhy+": it is back in the box below. Send it again when you are ready.")
	default:
		w.putBack(u.Prompt)
		w.store.AddNote(id, conversation.NoteWarn, conversation.UnsentWhy+": it is back in the box below, after what you typed.")
	}
}

// refused gives back a prompt the relay refused (its error is in the
// conversation already, in the relay's words): into the composer when it
// shows that conversation, after what the user typed meanwhile, else into
// it once the user opens that conversation. The user reads why, and sends
// it again, changed or not, when they choose.
func (w *Window) refused(r *client.Refused) {
	if conversation.IsPlanPrompt(r.Prompt) {
		w.transcript.planGivenBack()
	}
	id := r.ConversationID
	if id != w.current {
		if p := w.givenBack[id]; p != "" {
			r.Prompt = p + "\n\n" + r.Prompt
		}
		w.givenBack[id] = r.Prompt
		return
	}
	w.putBack(r.Prompt)
}

// putBack puts a prompt given back into the composer: after what it
// holds, if anything.
func (w *Window) putBack(prompt string) {
	if text := strings.TrimRightFunc(w.composer.Text, unicode.IsSpace); text != "" {
		prompt = text + "\n\n" + prompt
	}
	w.composer.setText(prompt)
}

// stop aborts the current conversation's turn.
func (w *Window) stop() {
	if !w.view.Streaming {
		return
	}
	id := w.current
	w.enqueue(func(ctx context.Context) {
		if err := w.client.Abort(ctx, id); err != nil {
			w.store.AddNote(id, conversation.NoteError, "Could not stop the agent: "+err.Error())
		}
	})
}

// modeToggled sends the new mode: it applies to the next tool request, also
// in the middle of a turn.
func (w *Window) modeToggled(mode protocol.Mode) {
	id := w.current
	w.mode.picked(id, mode)
	if w.modal == nil {
		w.focusComposer() // keep typing after a click on the toggle
	}
	if !w.subscribed[id] {
		// Nothing on the relay yet: the mode goes with the first prompt.
		return
	}
	w.enqueue(func(ctx context.Context) {
		if err := w.client.SetMode(ctx, id, mode); err != nil {
			w.store.AddNote(id, conversation.NoteError, "Could not switch mode: "+err.Error())
			w.onUI(func() { w.mode.refused(id) })
		}
	})
}

// answer sends an answer to an input request and closes the modal.
func (w *Window) answer(convID, requestID, answer string, freeform bool, index *int) {
	w.store.MarkAnswering(convID, requestID, answer, false)
	w.enqueue(func(ctx context.Context) {
		if err := w.client.Answer(ctx, convID, requestID, answer, freeform, index); err != nil {
			w.store.AnswerFailed(convID, requestID, conversation.AnswerNotSentText(false, err))
		}
	})
	w.closeModalNow()
}

// reject declines an input request, which stops the agent's turn.
func (w *Window) reject(convID, requestID string) {
	w.store.MarkAnswering(convID, requestID, "", true)
	w.enqueue(func(ctx context.Context) {
		if err := w.client.Reject(ctx, convID, requestID); err != nil {
			w.store.AnswerFailed(convID, requestID, conversation.AnswerNotSentText(true, err))
		}
	})
	w.closeModalNow()
}

func (w *Window) closeModalNow() {
	// The answer, and what the agent does with it, come into view.
	w.transcript.scrollToBottom()
	if w.modal != nil {
		w.modal.hide()
		w.modal = nil
		w.focusComposer()
	}
}
