package relay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/session"
)

var emptyObject = json.RawMessage(`{}`)

// host is the relay's side of one agent session (session.Host).
type host struct {
	conv       *conversation
	dead       atomic.Bool  // the session was closed: later events are dropped
	shutdowns  atomic.Int64 // Shutdown events emitted
	cancelOpen context.CancelFunc
}

var _ session.Host = (*host)(nil)

// Emit turns a session event into a conversation event. Backends pass
// events by value (session.Event); anything else is logged and dropped.
func (h *host) Emit(ev session.Event) {
	if h.dead.Load() {
		h.conv.r.log.Debug("relay: event of a closed agent session dropped", "conversationId", h.conv.id)
		return
	}
	h.conv.r.commit.waitSpace()
	c := h.conv
	c.mu.Lock()
	defer c.mu.Unlock()
	switch e := ev.(type) {
	case session.Delta:
		c.emitDeltaLocked(e)
	case session.Message:
		c.emitMessageLocked(e)
	case session.ToolStart:
		c.emitToolStartLocked(e)
	case session.ToolEnd:
		c.emitToolEndLocked(e)
	case session.Usage:
		c.emitUsageLocked(e)
	case session.Shutdown:
		h.shutdowns.Add(1)
		c.emitShutdownLocked(e)
	case session.Reasoning:
		c.emitReasoningLocked(e)
	case session.Plan:
		c.emitPlanLocked(e)
	default:
		c.r.log.Warn("relay: unknown session event dropped", "conversationId", c.id, "event", fmt.Sprintf("%T", ev))
	}
}

// emitDeltaLocked emits a delta, as several when its text would not fit in
// one frame (frames.go): the clients join a message's deltas.
func (c *conversation) emitDeltaLocked(e session.Delta) {
	if c.turn != nil {
		c.turn.addDeltaLocked(e.MessageID, e.Content)
	}
	if surelyFits(len(e.Content), c.id, e.MessageID) {
		// The common case, without the slice splitDelta would make.
		d := protocol.Delta{MessageID: e.MessageID, Content: e.Content}
		c.emitLocked(protocol.TypeDelta, &d.Header, &d)
		return
	}
	for _, part := range splitDelta(c.id, e.MessageID, e.Content) {
		d := protocol.Delta{MessageID: e.MessageID, Content: part}
		c.emitLocked(protocol.TypeDelta, &d.Header, &d)
	}
}

// emitMessageLocked emits a whole message. One too long for a frame goes
// out truncated, with no content: the clients keep the text its deltas
// carried, so the deltas must carry all of it. What the agent did not
// stream (all of it, for an agent that sends whole messages only) is sent
// as deltas first.
func (c *conversation) emitMessageLocked(e session.Message) {
	d := protocol.Message{MessageID: e.MessageID, Content: e.Content}
	if !messageFits(c.id, e.MessageID, e.Content) {
		streamed := ""
		if c.turn != nil {
			if b := c.turn.partial[e.MessageID]; b != nil {
				streamed = b.String()
			}
		}
		if rest, ok := strings.CutPrefix(e.Content, streamed); !ok {
			// The clients keep the streamed text too (conversation.State).
			c.r.log.Warn("relay: a message over the frame limit differs from its deltas; the deltas stand", "conversationId", c.id, "messageId", e.MessageID)
		} else if rest != "" {
			c.emitDeltaLocked(session.Delta{MessageID: e.MessageID, Content: rest})
		}
		d.Content, d.Truncated = "", true
	}
	if c.turn != nil {
		c.turn.messageSentLocked(e.MessageID)
	}
	c.emitLocked(protocol.TypeMessage, &d.Header, &d)
}

// emitReasoningLocked emits reasoning text, as several events when it
// would not fit in one frame (as emitDeltaLocked does).
func (c *conversation) emitReasoningLocked(e session.Reasoning) {
	parts := []string{e.Content}
	if !surelyFits(len(e.Content), c.id, e.MessageID) {
		empty := protocol.Reasoning{Header: protocol.Header{ConversationID: c.id, Seq: maxSeq}, MessageID: e.MessageID}
		if budget := protocol.MaxFrameBytes - overhead(protocol.TypeReasoning, &empty); jsonLen(e.Content) > budget {
			parts = splitJSON(e.Content, budget)
		}
	}
	for _, part := range parts {
		d := protocol.Reasoning{MessageID: e.MessageID, Content: part}
		c.emitLocked(protocol.TypeReasoning, &d.Header, &d)
	}
}

// Bounds of a plan, so that it fits in a frame: an agent's plan is a
// handful of one-line steps.
const (
	maxPlanEntries    = 200
	maxPlanEntryBytes = 2000
)

func (c *conversation) emitPlanLocked(e session.Plan) {
	d := protocol.Plan{Entries: make([]protocol.PlanEntry, 0, min(len(e.Entries), maxPlanEntries))}
	for i, en := range e.Entries {
		if i == maxPlanEntries {
			c.r.log.Warn("relay: an agent's plan is cut to its first entries", "conversationId", c.id, "entries", len(e.Entries), "kept", maxPlanEntries)
			break
		}
		content := en.Content
		if len(content) > maxPlanEntryBytes {
			content = strings.ToValidUTF8(content[:maxPlanEntryBytes], "") + "…"
		}
		d.Entries = append(d.Entries, protocol.PlanEntry{Content: content, Priority: en.Priority, Status: en.Status})
	}
	c.emitLocked(protocol.TypePlan, &d.Header, &d)
}

func (c *conversation) emitToolStartLocked(e session.ToolStart) {
	d := protocol.ToolStart{ToolCallID: e.ToolCallID, ToolName: e.ToolName, Arguments: c.rawJSON(e.Arguments, "arguments", false)}
	c.emitLocked(protocol.TypeToolStart, &d.Header, &d)
}

func (c *conversation) emitToolEndLocked(e session.ToolEnd) {
	d := protocol.ToolEnd{ToolCallID: e.ToolCallID, Success: e.Success, Denied: e.Denied, Result: e.Result}
	c.emitLocked(protocol.TypeToolEnd, &d.Header, &d)
}

func (c *conversation) emitUsageLocked(e session.Usage) {
	if e.NanoAIU != nil {
		// Before the event goes to the committer: the batch that stores
		// it, or one before, stores the spend (budget.go).
		c.r.budget.spend(c.r.budgetClock(), *e.NanoAIU)
	}
	d := protocol.Quota{
		QuotaSnapshots:   c.rawJSON(e.QuotaSnapshots, "quotaSnapshots", true),
		Model:            e.Model,
		Cost:             e.Cost,
		InputTokens:      e.InputTokens,
		OutputTokens:     e.OutputTokens,
		CacheReadTokens:  e.CacheReadTokens,
		CacheWriteTokens: e.CacheWriteTokens,
		AICredits:        protocol.Credits(e.NanoAIU),
		AICreditsStatus:  e.AICreditsStatus,
		Unreported:       e.Unreported,
	}
	if e.NanoAIU != nil {
		d.CreditsPerDay = c.r.budget.perDay(c.r.budgetClock())
	}
	c.emitLocked(protocol.TypeQuota, &d.Header, &d)
}

func (c *conversation) emitShutdownLocked(e session.Shutdown) {
	d := protocol.Shutdown{TotalPremiumRequests: e.TotalPremiumRequests, ModelMetrics: c.rawJSON(e.ModelMetrics, "modelMetrics", true), AICredits: protocol.Credits(e.NanoAIU)}
	c.emitLocked(protocol.TypeShutdown, &d.Header, &d)
}

// rawJSON checks JSON an agent handed over. With object, the result is
// always an object ({} when raw is nil or not an object); otherwise nil
// stays nil and invalid JSON becomes a JSON string of the text, so that one
// bad field never loses the event.
func (c *conversation) rawJSON(raw json.RawMessage, field string, object bool) json.RawMessage {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		if object {
			return emptyObject
		}
		return nil
	}
	if !json.Valid(trimmed) {
		c.r.log.Warn("relay: the agent sent invalid JSON", "conversationId", c.id, "field", field)
		if object {
			return emptyObject
		}
		s, _ := json.Marshal(string(raw))
		return s
	}
	if object && trimmed[0] != '{' {
		c.r.log.Warn("relay: the agent sent a non-object where an object is expected", "conversationId", c.id, "field", field)
		return emptyObject
	}
	return trimmed
}

// Mode is the conversation's mode now.
func (h *host) Mode() string {
	h.conv.mu.Lock()
	defer h.conv.mu.Unlock()
	return string(h.conv.mode)
}

// Permission decides from the mode at the moment of the call: plan denies,
// act approves.
func (h *host) Permission(ctx context.Context, req session.PermissionRequest) session.Decision {
	if protocol.Mode(h.Mode()) == protocol.ModePlan {
		return session.Decision{Allow: false, Reason: session.PlanDenialReason}
	}
	return session.Decision{Allow: true}
}

// Ask goes through the conversation's input bridge (input.go).
func (h *host) Ask(ctx context.Context, req session.InputRequest) (session.Answer, error) {
	return h.conv.ask(ctx, req)
}
