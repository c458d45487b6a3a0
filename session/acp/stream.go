package acp

import (
	"encoding/json"
	"log/slog"
	"strings"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/google/uuid"

	"github.com/pilotdesk/pilotdesk/session"
)

// stream maps one ACP session's updates onto the Host's events. It belongs
// to the session's pump goroutine: nothing else touches it.
type stream struct {
	host session.Host
	log  *slog.Logger

	// The assistant message being streamed: ACP chunks carry no message id
	// (or an unstable one), so each run of text between other events is a
	// message of its own, with an id made here.
	msgID      string
	agentMsgID string // the agent's id for it, when it gives one
	text       strings.Builder
	// thinkID names the run of reasoning being streamed (thought chunks
	// carry no id either); "" when the last thing was not reasoning.
	thinkID string

	// deniedTool: the relay denied a tool call in this turn (Plan), so an
	// agent that ends its turn there (stopReason cancelled) ended it as
	// the mode intends.
	deniedTool bool

	tools   map[sdk.ToolCallId]*toolCall
	open    []sdk.ToolCallId // started and not ended, in start order
	warned  map[string]bool  // notes given, once per conversation
	unknown map[string]bool  // unknown update kinds logged
}

// toolCall is what the stream knows of one tool call.
type toolCall struct {
	name      string
	kind      sdk.ToolKind
	args      json.RawMessage
	content   []sdk.ToolCallContent
	rawOutput any
	asked     bool   // the agent asked permission for it
	denied    bool   // and the relay (or pilotdesk's policy) said no
	reason    string // why, for the tool's row
	ended     bool
	// held: announced pending with no arguments yet (opencode fills them
	// in with its next update), so its ToolStart waits for them: the
	// window's row shows what a call does from its start event alone.
	held bool
}

func newStream(host session.Host, log *slog.Logger) *stream {
	return &stream{
		host:    host,
		log:     log,
		tools:   map[sdk.ToolCallId]*toolCall{},
		warned:  map[string]bool{},
		unknown: map[string]bool{},
	}
}

// update handles one session/update.
func (st *stream) update(u sdk.SessionUpdate) {
	got, want := updateKind(u)
	if got != want || want == "" {
		// The SDK decodes a kind it does not know as the first variant
		// whose fields fit (an empty session_info_update, often), keeping
		// the real name in the variant's discriminator field.
		if !st.unknown[got] {
			st.unknown[got] = true
			st.log.Info("acp: ignoring a session update of a kind pilotdesk does not know", "kind", got)
		}
		return
	}
	switch {
	case u.AgentMessageChunk != nil:
		st.chunk(u.AgentMessageChunk.MessageId, u.AgentMessageChunk.Content)
	case u.ToolCall != nil:
		tc := u.ToolCall
		hold := (tc.Status == "" || tc.Status == sdk.ToolCallStatusPending) && noArgs(rawJSON(tc.RawInput)) && len(tc.Content) == 0
		c := st.startHeld(tc.ToolCallId, tc.Title, tc.Kind, tc.RawInput, true, hold)
		st.apply(c, tc.Content, tc.RawOutput)
		st.settle(tc.ToolCallId, tc.Status)
	case u.ToolCallUpdate != nil:
		tu := u.ToolCallUpdate
		title, kind := titleKind(tu.Title, tu.Kind)
		c := st.start(tu.ToolCallId, title, kind, tu.RawInput, false)
		if c.held && strings.TrimSpace(title) != "" {
			// Claude's tool_call is titled "Terminal"; the update that
			// fills the command in names it.
			c.name = toolName(title, c.kind)
		}
		if tu.RawInput != nil && !c.ended {
			c.args = rawJSON(tu.RawInput) // opencode fills the command in later
		}
		if c.held && (!noArgs(c.args) || tu.Content != nil || (tu.Status != nil && *tu.Status != sdk.ToolCallStatusPending)) {
			st.show(tu.ToolCallId, c)
		}
		st.apply(c, tu.Content, tu.RawOutput)
		if tu.Status != nil {
			st.settle(tu.ToolCallId, *tu.Status)
		}
	case u.AgentThoughtChunk != nil:
		st.thought(blockText(u.AgentThoughtChunk.Content))
	case u.Plan != nil:
		entries := make([]session.PlanEntry, len(u.Plan.Entries))
		for i, e := range u.Plan.Entries {
			entries[i] = session.PlanEntry{Content: e.Content, Priority: string(e.Priority), Status: string(e.Status)}
		}
		st.host.Emit(session.Plan{Entries: entries})
	case u.UsageUpdate != nil:
		// Context-window fill and session cost: no relay event carries
		// them (copilot:quota's cost is a premium-request multiplier).
		st.log.Debug("acp: context usage", "used", u.UsageUpdate.Used, "size", u.UsageUpdate.Size)
	}
	// The rest (user_message_chunk, available_commands_update,
	// current_mode_update, config_option_update, session_info_update,
	// plan_update, plan_removed) says nothing the transcript shows.
}

// updateKind returns the discriminator the agent sent (got) and the one of
// the variant the SDK decoded it as (want).
func updateKind(u sdk.SessionUpdate) (got, want string) {
	switch {
	case u.UserMessageChunk != nil:
		return u.UserMessageChunk.SessionUpdate, "user_message_chunk"
	case u.AgentMessageChunk != nil:
		return u.AgentMessageChunk.SessionUpdate, "agent_message_chunk"
	case u.AgentThoughtChunk != nil:
		return u.AgentThoughtChunk.SessionUpdate, "agent_thought_chunk"
	case u.ToolCall != nil:
		return u.ToolCall.SessionUpdate, "tool_call"
	case u.ToolCallUpdate != nil:
		return u.ToolCallUpdate.SessionUpdate, "tool_call_update"
	case u.Plan != nil:
		return u.Plan.SessionUpdate, "plan"
	case u.PlanUpdate != nil:
		return u.PlanUpdate.SessionUpdate, "plan_update"
	case u.PlanRemoved != nil:
		return u.PlanRemoved.SessionUpdate, "plan_removed"
	case u.AvailableCommandsUpdate != nil:
		return u.AvailableCommandsUpdate.SessionUpdate, "available_commands_update"
	case u.CurrentModeUpdate != nil:
		return u.CurrentModeUpdate.SessionUpdate, "current_mode_update"
	case u.ConfigOptionUpdate != nil:
		return u.ConfigOptionUpdate.SessionUpdate, "config_option_update"
	case u.SessionInfoUpdate != nil:
		return u.SessionInfoUpdate.SessionUpdate, "session_info_update"
	case u.UsageUpdate != nil:
		return u.UsageUpdate.SessionUpdate, "usage_update"
	}
	return "(none)", ""
}

// chunk streams agent text as a delta of the current message.
func (st *stream) chunk(agentMsgID *string, content sdk.ContentBlock) {
	text := blockText(content)
	if text == "" {
		return
	}
	if agentMsgID != nil && *agentMsgID != st.agentMsgID {
		st.endMessage() // the agent started another message
		st.agentMsgID = *agentMsgID
	}
	st.thinkID = "" // reply text ends a run of reasoning
	if st.msgID == "" {
		st.msgID = uuid.NewString()
	}
	st.text.WriteString(text)
	st.host.Emit(session.Delta{MessageID: st.msgID, Content: text})
}

// thought streams the agent's reasoning, apart from its reply: a run of
// thought chunks is one reasoning message, shown after the text before it.
func (st *stream) thought(text string) {
	if text == "" {
		return
	}
	if st.thinkID == "" {
		st.endMessage()
		st.thinkID = uuid.NewString()
	}
	st.host.Emit(session.Reasoning{MessageID: st.thinkID, Content: text})
}

// endMessage sends the message streamed so far whole, and starts the next.
// A run of reasoning ends there too: what the agent thinks next is another.
func (st *stream) endMessage() {
	st.thinkID = ""
	if st.msgID != "" && st.text.Len() > 0 {
		st.host.Emit(session.Message{MessageID: st.msgID, Content: st.text.String()})
	}
	st.msgID = ""
	st.text.Reset()
}

// start reports a tool call the first time it is seen, from a tool_call, a
// tool_call_update or a permission request, whichever comes first (the SDK
// runs a request's handler concurrently with the notifications before it).
// fresh is true for a tool_call or a request: they announce a call, so an
// agent that reuses the id of an ended call starts another one.
func (st *stream) start(id sdk.ToolCallId, title string, kind sdk.ToolKind, rawInput any, fresh bool) *toolCall {
	return st.startHeld(id, title, kind, rawInput, fresh, false)
}

// startHeld is start, but with hold a new call's ToolStart waits (held)
// until an update brings its arguments, content or progress, a permission
// request asks for it, or it ends.
func (st *stream) startHeld(id sdk.ToolCallId, title string, kind sdk.ToolKind, rawInput any, fresh, hold bool) *toolCall {
	if c, ok := st.tools[id]; ok && !(fresh && c.ended) {
		if kind != "" && c.kind == "" {
			c.kind = kind
		}
		if c.held && fresh && !hold {
			// A permission request: it names the call with its arguments.
			if a := rawJSON(rawInput); !noArgs(a) {
				c.args = a
			}
			if strings.TrimSpace(title) != "" {
				c.name = toolName(title, c.kind)
			}
			st.show(id, c)
		}
		return c
	}
	c := &toolCall{name: toolName(title, kind), kind: kind, args: rawJSON(rawInput), held: true}
	st.tools[id] = c
	st.open = append(st.open, id)
	if !hold {
		st.show(id, c)
	}
	return c
}

// show reports a held tool call's start.
func (st *stream) show(id sdk.ToolCallId, c *toolCall) {
	if !c.held {
		return
	}
	c.held = false
	st.endMessage()
	st.host.Emit(session.ToolStart{ToolCallID: string(id), ToolName: c.name, Arguments: c.args})
}

// noArgs: a tool call's arguments say nothing (none, or {}).
func noArgs(a json.RawMessage) bool {
	s := strings.TrimSpace(string(a))
	return s == "" || s == "{}"
}

func toolName(title string, kind sdk.ToolKind) string {
	// ACP v1 has no tool name: the title says what the call does
	// ("Create notes.txt", or "bash" for opencode), the kind what sort.
	switch {
	case strings.TrimSpace(title) != "":
		return title
	case kind != "":
		return string(kind)
	}
	return "tool"
}

// apply keeps the latest content and raw output (an update replaces them).
func (st *stream) apply(c *toolCall, content []sdk.ToolCallContent, rawOutput any) {
	if c.ended {
		return
	}
	if content != nil {
		c.content = content
	}
	if rawOutput != nil {
		c.rawOutput = rawOutput
	}
}

// settle ends the tool call when status is final.
func (st *stream) settle(id sdk.ToolCallId, status sdk.ToolCallStatus) {
	switch status {
	case sdk.ToolCallStatusCompleted, sdk.ToolCallStatusFailed:
		st.end(id, status == sdk.ToolCallStatusCompleted, "")
	}
}

// end reports a tool call's outcome. fallback is the result when the agent
// gave none.
func (st *stream) end(id sdk.ToolCallId, success bool, fallback string) {
	c := st.tools[id]
	if c == nil || c.ended {
		return
	}
	st.show(id, c) // a call held until now starts and ends at once
	c.ended = true
	for i, o := range st.open {
		if o == id {
			st.open = append(st.open[:i], st.open[i+1:]...)
			break
		}
	}
	result := toolResult(c.content, c.rawOutput)
	if c.denied {
		result = c.reason // what the model was told, not the agent's wording of it
	}
	if result == "" {
		result = fallback
	}
	st.host.Emit(session.ToolEnd{ToolCallID: string(id), Success: success, Denied: c.denied, Result: result})
	if !c.asked && changesThings(c.kind) {
		// Whether it worked or not: it ran, and Plan could not stop it.
		st.note("unasked", "the agent ran “"+c.name+"” ("+string(c.kind)+") without asking permission, so Plan mode cannot stop its tools. Configure the agent to ask before it runs tools (opencode, for one, runs them unasked unless its \"permission\" setting says \"ask\").")
	}
	// Keep the entry (ended) so that a late update does not start it again.
	c.content, c.rawOutput, c.args = nil, nil, nil
}

// changesThings: the tool kinds that write, delete or run commands. Reads
// and searches are not what Plan mode is there to stop.
func changesThings(k sdk.ToolKind) bool {
	switch k {
	case sdk.ToolKindEdit, sdk.ToolKindDelete, sdk.ToolKindMove, sdk.ToolKindExecute:
		return true
	}
	return false
}

// endTurn closes what the turn left open: the message being streamed, and
// tool calls the agent never finished (after session/cancel, copilot sends
// no final update), then reports the turn's usage.
func (st *stream) endTurn(aborted bool, usage *session.Usage) {
	st.endMessage()
	why := "the agent ended the turn without finishing this tool call"
	if aborted {
		why = "the turn was stopped before this tool call finished"
	}
	for _, id := range append([]sdk.ToolCallId(nil), st.open...) {
		st.end(id, false, why)
	}
	st.agentMsgID = ""
	st.deniedTool = false
	if usage != nil {
		st.host.Emit(*usage)
	}
}

// unreported says, once per conversation, that the agent reports no
// usage: a usage event with no figures, which the clients' usage lines
// put in words (a note in the transcript said it while the usage line
// still waited for figures).
func (st *stream) unreported() {
	if st.warned["no-usage"] {
		return
	}
	st.warned["no-usage"] = true
	st.log.Info("acp: the agent reports no usage")
	st.host.Emit(session.Usage{Unreported: true})
}

// note puts a remark of pilotdesk's (not the agent's) in the transcript,
// once per conversation and key. The Host has no event for notes, so it is
// an assistant message of its own, marked as pilotdesk's.
func (st *stream) note(key, text string) {
	if st.warned[key] {
		return
	}
	st.warned[key] = true
	st.log.Warn("acp: "+text, "note", key)
	st.endMessage()
	st.host.Emit(session.Message{MessageID: uuid.NewString(), Content: "⚠ pilotdesk: " + text})
}

// titleKind is a tool call's title and kind, each "" where the agent left
// it out (a permission request or an update may name neither).
func titleKind(title *string, kind *sdk.ToolKind) (string, sdk.ToolKind) {
	var t string
	var k sdk.ToolKind
	if title != nil {
		t = *title
	}
	if kind != nil {
		k = *kind
	}
	return t, k
}
