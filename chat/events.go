package chat

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/coder/websocket"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// listNews shows a page of the list that /list or /more asked for. Any
// other page is the first that comes with the list's notices (watcher),
// at start and after each reconnect, and a notice (copilot:conversation)
// one entry: only the entry of this conversation is kept, quietly.
func (r *repl) listNews(data any) {
	switch d := data.(type) {
	case *protocol.Conversations:
		if r.listAsked > 0 {
			r.listAsked--
			r.showList(d)
			return
		}
		for _, info := range d.Conversations {
			r.listed(info)
		}
	case *protocol.ConversationChanged:
		if !d.Deleted {
			r.listed(d.ConversationInfo)
		}
	}
}

// listed folds the relay's list entry info into the conversation's fold
// when it is this one's: its folder as of the last turn, which /delete
// names.
func (r *repl) listed(info protocol.ConversationInfo) {
	if info.ConversationID == r.conv && r.fold != nil && r.fold.ID == r.conv {
		r.fold.Listed(info)
	}
}

// event handles one message from the relay.
func (r *repl) event(ctx context.Context, ev client.Event) {
	switch d := ev.Data.(type) {
	case *client.StateChange:
		r.connection(d)
		return
	case *protocol.Budget:
		r.budgetChanged(d)
		return
	case *protocol.Conversations, *protocol.ConversationChanged:
		r.listNews(d)
		return
	case *protocol.DiffReply:
		r.diffAsked = max(r.diffAsked-1, 0)
		if d.ConversationID == r.conv {
			r.showDiff(d)
		}
		return
	case *protocol.Error:
		if d.ConversationID == "" || d.ConversationID == r.conv {
			r.relayError(d)
		}
		return
	case *client.Unsent:
		r.unsent(d)
		return
	case *client.Refused:
		r.refused(d)
		return
	}
	if id := ev.ConversationID(); id == "" || id != r.conv {
		// Events of a conversation left behind by /new or /switch.
		return
	}
	if _, reset := ev.Data.(*client.Reset); reset || r.fold == nil || r.fold.ID != r.conv {
		r.fold = conversation.New(r.conv, conversation.Options{Self: terminalSelf, Identity: r.id, Now: r.cfg.Now})
		r.agent = agentRows{}
		r.scr.resetMarkdown()
	}
	u := r.fold.Apply(ev)
	if r.markdown() {
		// Before anything this event prints: a user's message or the end
		// of a turn finishes the block under way, which comes first.
		r.markdownRows(u)
	}
	if _, ok := ev.Data.(*protocol.Reasoning); !ok {
		r.flushThought() // a run of reasoning ends when anything else comes
	}
	switch d := ev.Data.(type) {
	case *protocol.Reasoning:
		r.reasoning(u)
	case *protocol.Plan:
		r.agentPlan(d, u)
	case *protocol.Subscribed:
		r.subscribed(d)
	case *client.Reset:
		r.scr.endLine()
		r.note(styleWarn, "The relay lost this conversation's history; showing it again from the start.")
		conv := r.conv
		r.resetConversation()
		r.conv, r.syncing = conv, true
	case *protocol.UserMessage:
		r.agentChanged(u)
		r.userMessage(d)
	case *protocol.Delta, *protocol.Message:
		// The fold says what text is new: a delta's, or what a whole
		// message adds to its deltas (all of it for an agent that sends
		// whole messages only).
		if u.Text != "" {
			r.text(u.MessageID, u.Text)
		}
	case *protocol.ToolStart:
		r.waiting = false
	case *protocol.ToolEnd:
		r.toolEnd(u)
	case *protocol.UserInputRequest:
		if r.syncing {
			r.scr.endLine()
			r.ask.replayed[d.RequestID] = d
			return
		}
		switch {
		case r.ask.open != nil && r.ask.open.req.RequestID == d.RequestID:
		case r.ask.answeredHere(d.RequestID):
			// Already shown (say, as the pendingInput of a resync).
		case r.ask.open != nil:
			r.ask.queued = append(r.ask.queued, d)
		default:
			r.openPrompt(d)
		}
	case *protocol.UserInputTimeout:
		why := "No answer in time." // the fold adds no note for a question it never saw open
		if row, ok := r.changedRow(u, conversation.RowNote); ok {
			why = sanitize(row.Text)
		}
		r.questionEnded(d.RequestID, why)
	case *protocol.UserInputClosed:
		r.inputClosed(d)
	case *protocol.ModeChanged:
		r.modeChanged(u, d)
	case *protocol.AgentError:
		r.waiting = false
		r.errorShown = true
		if row, ok := r.changedRow(u, conversation.RowNote); ok {
			r.note(styleError, oneLine(row.Text))
		}
	case *protocol.Changes:
		r.showChanges(d)
	case *protocol.Restored:
		r.showRestored(d)
	case *protocol.Idle:
		r.idle(d, u)
	case *protocol.Deleted:
		r.scr.endLine()
		r.note(styleWarn, "This conversation was deleted on the relay. Starting a new one.")
		if err := r.subscribe(ctx, ""); err != nil {
			r.note(styleError, err.Error())
		}
	}
}

// changedRow is the last row of kind among those an Update changed.
func (r *repl) changedRow(u conversation.Update, kind conversation.RowKind) (conversation.Row, bool) {
	for i := len(u.Rows) - 1; i >= 0; i-- {
		if row := r.fold.Rows[u.Rows[i]]; row.Kind == kind {
			return row, true
		}
	}
	return conversation.Row{}, false
}

// terminalSelf is who the terminal client is on the relay when its Conn
// does not say (no client.Identity): the relay's own device in a terminal.
var terminalSelf = protocol.By{Device: protocol.OwnDevice, Client: protocol.ClientTerminal}

// self is who this terminal is on the relay, to name others relative to
// it: zero while a device token's device is not known yet.
func (r *repl) self() protocol.By {
	if r.id == nil {
		return terminalSelf
	}
	by, _ := r.id.Self()
	return by
}

// isSelf reports whether by names this terminal: its device and its kind.
func (r *repl) isSelf(by protocol.By) bool {
	if r.id == nil {
		return by == terminalSelf
	}
	return r.id.Is(by)
}

// connection reports a change of the connection's state. The client
// resumes every conversation by itself; the REPL only says what happens.
func (r *repl) connection(sc *client.StateChange) {
	if (sc.State == client.StateReconnecting || sc.State == client.StateOffline) && !r.ready {
		r.dropped = true
	}
	if sc.State == client.StateReconnecting || sc.State == client.StateOffline {
		// What was asked may never be answered: piped lines must not
		// wait for it (awaitingReply).
		r.listAsked, r.diffAsked = 0, 0
	}
	switch sc.State {
	case client.StateReconnecting:
		if !r.connDown {
			r.connDown = true
			msg := "The connection to the relay dropped; reconnecting…"
			var closed websocket.CloseError
			switch {
			case errors.As(sc.Err, &closed) && closed.Reason != "":
				// The relay said why ("relay shutting down": the window
				// quit or restarts it): its words, not the WebSocket
				// library's "failed to get reader: received close
				// frame: status = StatusGoingAway and reason = …".
				msg = fmt.Sprintf("The relay closed the connection (%s); reconnecting…", oneLine(closed.Reason))
			case sc.Err != nil:
				msg = fmt.Sprintf("The connection to the relay dropped (%s); reconnecting…", oneLine(sc.Err.Error()))
			}
			r.note(styleWarn, msg)
		}
	case client.StateOffline:
		if sc.Attempt > 0 && sc.Attempt%10 == 0 || !r.connDown {
			r.note(styleWarn, "The relay is still unreachable; retrying.")
		}
		r.connDown = true
	case client.StateClosed:
		if errors.Is(sc.Err, client.ErrRevoked) {
			// The client does not retry: say so plainly, once.
			r.closedBy = sc.Err
			r.note(styleError, "The relay closed this connection: this device's token was revoked or expired; ask for a new one (pilotdesk token create, or the window's Connect a device…).")
		}
	case client.StateLive:
		if r.connDown {
			r.connDown = false
			r.note(styleOK, "Reconnected.")
		}
	}
}

// subscribed ends a replay (or a reconnect's resync): the conversation's
// mode, whether a turn runs, and the question it waits on are now known.
func (r *repl) subscribed(d *protocol.Subscribed) {
	replay := r.syncing
	r.syncing = false
	r.ready = true
	if d.Mode.Valid() {
		r.mode = d.Mode
	}
	r.running = d.Streaming
	if !d.Streaming {
		r.sendPending = false
		r.waiting = false
		r.scr.endLine()
	}
	if replay && d.Seq > 0 {
		r.scr.endLine()
		state := "idle"
		if d.Streaming {
			state = "a turn is running"
		}
		r.note(styleDim, fmt.Sprintf("── end of history: %s mode, %s ──", d.Mode, state))
	}
	pending := d.PendingInput
	if replay {
		// The open question is shown as the prompt below; any other one
		// the history left without an end is shown as it stands.
		for id := range r.ask.replayed {
			if pending == nil || id != pending.RequestID {
				r.replayedQuestion(id, "closed")
			}
		}
		r.ask.replayed = map[string]*protocol.UserInputRequest{}
	}
	switch {
	case pending != nil && r.ask.open != nil && r.ask.open.req.RequestID == pending.RequestID:
	case pending != nil && r.ask.answeredHere(pending.RequestID):
		// Answered here; the relay's close is on its way.
	case pending != nil:
		r.closePrompt("")
		r.ask.queued = nil
		pending.ConversationID = r.conv
		r.openPrompt(pending)
	case r.ask.open != nil:
		r.closePrompt("The question was closed while the connection was down.")
	}
}

// userMessage is the prompt of a turn: ours, echoed by the relay (already
// printed), or typed in another window, or replayed.
// agentChanged prints the fold's note that the conversation's agent changed
// (the relay restarted with another): the one note a prompt adds before
// its own row. It is printed even for this terminal's own prompt, whose
// echo prints nothing else.
func (r *repl) agentChanged(u conversation.Update) {
	for _, i := range u.Rows {
		row := r.fold.Rows[i]
		if row.Kind == conversation.RowUser {
			return
		}
		if row.Kind == conversation.RowNote {
			r.scr.endLine()
			r.note(styleDim, sanitize(row.Text))
		}
	}
}

func (r *repl) userMessage(d *protocol.UserMessage) {
	r.running = true
	r.folderTaken()
	if !r.syncing && len(r.echoed) > 0 && r.echoed[0] == d.Content {
		r.echoed = r.echoed[1:]
		r.sendPending = false
		return
	}
	r.scr.endLine()
	mode := d.Mode
	if !mode.Valid() {
		mode = r.mode
	}
	r.echo(r.promptLabel(mode), oneLine(d.Content))
	if by := d.SentBy; by != nil && !r.isSelf(*by) {
		r.note(styleDim, "  (sent from "+sanitize(conversation.Who(*by, r.self()))+")")
	}
	r.startTurn()
}

// markdown reports whether agents' text is rendered (mdview.go): on a
// colour terminal. Piped, or with NO_COLOR, it is printed as the agent
// wrote it, markdown being meant to read as plain text.
func (r *repl) markdown() bool { return r.cfg.Term.Color }

// markdownRows shows the message blocks the fold changed.
func (r *repl) markdownRows(u conversation.Update) {
	for _, i := range u.Rows {
		row := r.fold.Rows[i]
		switch row.Kind {
		case conversation.RowText, conversation.RowCode:
			r.scr.markdown(mdBlock{row: i, text: row.Text, code: row.Kind == conversation.RowCode, lang: row.Lang}, row.Done)
		}
	}
}

// text streams assistant text.
func (r *repl) text(messageID, content string) {
	r.waiting = false
	if r.markdown() {
		return // markdownRows printed what is done
	}
	if messageID != r.lastMsgID && r.lastMsgID != "" {
		// A new assistant message (the agent spoke again after a tool,
		// say) starts on a line of its own.
		r.scr.endLine()
	}
	r.lastMsgID = messageID
	r.scr.text(content)
}

// toolEnd prints the tool call the fold just ended.
func (r *repl) toolEnd(u conversation.Update) {
	for _, i := range u.Rows {
		if row := r.fold.Rows[i]; row.Kind == conversation.RowTool {
			r.toolLine(row)
		}
	}
	r.waiting = !r.syncing && r.streaming()
}

// toolLine prints a tool call as one line: approved, denied by plan,
// failed, or stopped with its turn, in the words of every front end
// (conversation.ToolStateText).
func (r *repl) toolLine(tool conversation.Row) {
	head := "⚙ " + r.scr.style(styleBold, oneLine(tool.Title))
	if tool.Text != "" {
		head += " " + sanitize(tool.Text)
	}
	result := firstLine(tool.Detail)
	var tail string
	switch tool.State {
	case conversation.ToolDenied:
		tail = r.scr.style(styleWarn, conversation.ToolStateText(tool.State))
	case conversation.ToolApproved:
		tail = r.scr.style(styleOK, conversation.ToolStateText(tool.State))
		if result != "" {
			tail += r.scr.style(styleDim, " → "+result)
		}
	case conversation.ToolStopped:
		tail = r.scr.style(styleDim, conversation.ToolStateText(tool.State))
	default:
		tail = r.scr.style(styleError, conversation.ToolStateText(conversation.ToolFailed))
		if result != "" {
			tail += r.scr.style(styleError, ": "+result)
		}
	}
	r.scr.endLine()
	r.note("", head+" — "+tail)
	r.commandLines(tool)
	r.lastMsgID = ""
}

// runningTool is the last tool call of the conversation still running.
func (r *repl) runningTool() (conversation.Row, bool) {
	if r.fold == nil {
		return conversation.Row{}, false
	}
	for i := len(r.fold.Rows) - 1; i >= 0; i-- {
		if row := r.fold.Rows[i]; row.Kind == conversation.RowTool {
			return row, !row.Done
		}
	}
	return conversation.Row{}, false
}

// questionEnded closes a question the relay closed without our answer.
func (r *repl) questionEnded(id, why string) {
	switch {
	case r.syncing:
		r.replayedQuestion(id, why)
	case r.ask.open != nil && r.ask.open.req.RequestID == id:
		r.closePrompt(why)
	case r.ask.answeredHere(id):
		r.ask.answered = nil
	default:
		r.ask.dropQueued(id)
	}
}

// replayedQuestion prints a question of the history, now that the replay
// says how it ended.
func (r *repl) replayedQuestion(id, outcome string) {
	q, ok := r.ask.replayed[id]
	if !ok {
		return
	}
	delete(r.ask.replayed, id)
	p := newPrompt(q)
	r.questionLines(p)
	if p.kind == kindChoice {
		for _, l := range r.choiceLines(p, -1) {
			r.scr.line(l)
		}
	}
	r.note(styleDim, "  ("+strings.TrimSuffix(outcome, ".")+")")
}

func (r *repl) inputClosed(d *protocol.UserInputClosed) {
	if r.syncing {
		r.replayedQuestion(d.RequestID, d.Reason)
		return
	}
	if r.ask.answeredHere(d.RequestID) {
		r.ask.answered = nil // our own answer, confirmed
		return
	}
	// Said as the window and the web client say it (the fold's note); only
	// the open prompt's ending is printed, so its question is the one.
	question := ""
	if r.ask.open != nil && r.ask.open.req.RequestID == d.RequestID {
		question = r.ask.open.req.Question
	}
	why := sanitize(r.fold.ClosedText(question, d))
	r.questionEnded(d.RequestID, why)
}

func (r *repl) modeChanged(u conversation.Update, d *protocol.ModeChanged) {
	if !d.Mode.Valid() {
		return
	}
	r.mode = d.Mode
	style := styleOK
	if d.Mode == protocol.ModePlan {
		style = styleWarn
	}
	// The fold's note, as the window and the web client show it; a switch
	// before the first prompt has none there, and is said alike.
	row, ok := r.changedRow(u, conversation.RowMode)
	text := row.Text
	if !ok {
		text = conversation.ModeChangeText(d.Mode, r.streaming())
		if by := d.ChangedBy; by != nil && !r.isSelf(*by) {
			// Another device switched (the relay names device tokens only).
			text = conversation.ModeByText(text, conversation.Who(*by, r.self()))
		}
	}
	r.note(style, sanitize(text))
}

// idle ends the turn: its outcome, then the usage line (a rejection says
// "Rejected. Agent response cancelled." and keeps the partial text:
// docs/cli.md, Answering questions).
func (r *repl) idle(d *protocol.Idle, u conversation.Update) {
	r.scr.endLine()
	for _, i := range u.Rows {
		if row := r.fold.Rows[i]; row.Kind == conversation.RowTool && row.State == conversation.ToolStopped {
			r.toolLine(row)
		}
	}
	if r.ask.open != nil {
		r.closePrompt("The turn ended; the question is closed.")
	}
	r.ask.queued, r.ask.answered = nil, nil
	// The turn's end in the fold's words (conversation.StatusText); a
	// completed turn says it with its usage line alone.
	if row, ok := r.changedRow(u, conversation.RowStatus); ok {
		switch d.Status {
		case protocol.StatusAborted:
			r.note(styleWarn, row.Text)
		case protocol.StatusRejected:
			r.note(styleInfo, row.Text)
		case protocol.StatusError:
			if !r.errorShown {
				msg := row.Text
				if row.Detail != "" {
					msg = strings.TrimSuffix(row.Text, ".") + ": " + oneLine(row.Detail)
				}
				r.note(styleError, msg)
			}
		case protocol.StatusCompleted:
		default:
			r.note(styleDim, oneLine(row.Text))
		}
	}
	r.note(styleDim, conversation.TurnText(r.fold.Turn, r.fold.Usage, r.cfg.Now()))
	for _, i := range u.Rows {
		if r.fold.Rows[i].Kind == conversation.RowPlan {
			r.showPlan(r.fold.Plan(i))
		}
	}
	r.scr.blank()
	r.running, r.sendPending, r.waiting = false, false, false
	r.lastMsgID = ""
	r.sayBudget(r.budget.turnEnded(r.cfg.Now()))
	r.errorShown = false
}

// unsent gives back a prompt the relay did not get: the REPL stops waiting
// for its turn and says so; on a terminal whose line is empty it puts the
// prompt back on the line, for Enter to send again, and otherwise prints
// it. It never sends it again by itself. A prompt of a conversation left
// since says which.
func (r *repl) unsent(d *client.Unsent) {
	r.scr.endLine()
	if d.Arrived {
		// Given back before, and its echo came after all: the line is
		// emptied of it if it holds it as it was given back.
		if d.ConversationID == r.conv && r.typed.editor.String() == d.Prompt {
			r.typed.editor.clear()
		}
		r.note(styleDim, conversation.ArrivedLate+" ("+oneLine(d.Prompt)+")")
		return
	}
	if d.ConversationID != r.conv {
		r.note(styleWarn, conversation.UnsentWhy+" in a conversation you left. Not sent: "+oneLine(d.Prompt))
		return
	}
	if i := slices.Index(r.echoed, d.Prompt); i >= 0 {
		r.echoed = slices.Delete(r.echoed, i, i+1)
	}
	if len(r.echoed) == 0 {
		r.sendPending = false
		if !r.running {
			r.waiting = false
		}
	}
	if r.cfg.Term.Raw && r.ask.open == nil && r.typed.editor.empty() && !strings.ContainsAny(d.Prompt, "\r\n") {
		r.typed.editor.buf = append(r.typed.editor.buf[:0], []rune(d.Prompt)...)
		r.note(styleWarn, conversation.UnsentWhy+": it is back on the prompt line; press Enter to send it again.")
		return
	}
	r.note(styleWarn, conversation.UnsentWhy+". Not sent: "+oneLine(d.Prompt))
}

// refused gives back a prompt the relay refused, whose error relayError
// printed: on a terminal whose line is empty it goes back on the line, for
// the user to change or send again; piped, it is in the scrollback.
func (r *repl) refused(d *client.Refused) {
	if d.ConversationID != r.conv || !r.cfg.Term.Raw || r.ask.open != nil || !r.typed.editor.empty() || strings.ContainsAny(d.Prompt, "\r\n") {
		return
	}
	r.scr.endLine()
	r.typed.editor.buf = append(r.typed.editor.buf[:0], []rune(d.Prompt)...)
	r.note(styleDim, "Your prompt is back on the prompt line.")
}

// relayError reports an `error` message in words a person can act on.
func (r *repl) relayError(d *protocol.Error) {
	if d.Type == protocol.TypeList && r.listAsked > 0 {
		r.listAsked-- // refused: no page answers it
	}
	if d.Type == protocol.TypeDiff && r.diffAsked > 0 {
		r.diffAsked--
	}
	switch {
	case d.Type == protocol.TypeSend:
		if len(r.echoed) > 0 {
			r.echoed = r.echoed[1:]
		}
		r.sendPending = false
		if !r.running {
			r.waiting = false
		}
		if d.Code == protocol.CodeConversationBusy {
			r.note(styleWarn, conversation.RelayErrorText(d)+" (/abort stops it.)")
			return
		}
		r.note(styleError, "Not sent: "+oneLine(d.Message))
	case d.Code == protocol.CodeNotStreaming:
		r.note(styleDim, "Nothing to abort: no turn is running.")
	case d.Code == protocol.CodeInvalidAnswer && r.ask.answered != nil:
		// The relay refused the answer and keeps the question open: ask again.
		p := r.ask.answered
		r.ask.answered = nil
		r.note(styleWarn, "The relay refused the answer: "+oneLine(d.Message))
		if r.ask.open == nil {
			r.openPrompt(p.req)
		} else {
			r.ask.queued = append([]*protocol.UserInputRequest{p.req}, r.ask.queued...)
		}
	default:
		r.note(styleError, fmt.Sprintf("Relay error (%s): %s", oneLine(d.Code), oneLine(d.Message)))
	}
}

// firstLine is the first non-blank line of a tool's result, with a count
// of the lines left out.
func firstLine(s string) string {
	lines := strings.Split(strings.TrimSpace(strings.ReplaceAll(s, "\r\n", "\n")), "\n")
	first := truncate(sanitize(strings.TrimSpace(lines[0])), 70)
	if n := len(lines) - 1; n > 0 {
		first += fmt.Sprintf(" (+%d lines)", n)
	}
	return first
}

// truncate shortens s to at most n runes, with an ellipsis.
func truncate(s string, n int) string {
	rs := []rune(s)
	if len(rs) <= n {
		return s
	}
	return string(rs[:n-1]) + "…"
}

// showPlan prints a plan turn's denied calls as a numbered list and keeps
// them for /run.
func (r *repl) showPlan(steps []conversation.PlanStep) {
	r.plan = steps
	if r.syncing {
		return // a replayed plan is history; /run acts on a plan of this session
	}
	r.note(styleBold, fmt.Sprintf("The plan (%d denied in Plan):", len(steps)))
	for i, p := range steps {
		r.note("", fmt.Sprintf("  %d) %s", i+1, sanitize(conversation.StepText(p))))
	}
	r.note(styleDim, runHint(len(steps)))
}

// runHint says how /run carries out a plan of n steps, with examples that
// name steps the plan has: "/run 2 or /run 1,3" under a plan of one step
// offered steps that are not there.
func runHint(n int) string {
	switch {
	case n <= 1:
		return "/run carries it out in Act."
	case n == 2:
		return "/run carries it out in Act; /run 1 or /run 2 only that step."
	}
	return "/run carries it out in Act; /run 2 or /run 1,3 only those steps."
}
