package copilot

import (
	"cmp"
	"context"
	"encoding/json"
	"math"

	"github.com/pilotdesk/pilotdesk/session"
)

// envelope is a session event as the CLI sends it. Unknown types and fields
// are ignored: the CLI adds event types often.
type envelope struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// onEvent maps one CLI session event to what the Host hears. It runs on the
// pump goroutine.
func (s *Session) onEvent(p *process, raw json.RawMessage) {
	var ev envelope
	if err := json.Unmarshal(raw, &ev); err != nil {
		s.log.Warn("copilot: ignored a malformed session event", "err", err)
		return
	}
	switch ev.Type {
	case "assistant.message_delta":
		var d struct {
			MessageID        string `json:"messageId"`
			DeltaContent     string `json:"deltaContent"`
			ParentToolCallID string `json:"parentToolCallId"`
		}
		if !s.decode(ev, &d) || d.DeltaContent == "" || d.ParentToolCallID != "" {
			return // sub-agent text is the sub-agent's business, not the transcript's
		}
		s.host.Emit(session.Delta{MessageID: d.MessageID, Content: d.DeltaContent})

	case "assistant.message":
		var d struct {
			MessageID        string `json:"messageId"`
			Content          string `json:"content"`
			ParentToolCallID string `json:"parentToolCallId"`
		}
		// One per model call; a call that only requests tools has no text.
		if !s.decode(ev, &d) || d.Content == "" || d.ParentToolCallID != "" {
			return
		}
		s.host.Emit(session.Message{MessageID: d.MessageID, Content: d.Content})

	case "tool.execution_start":
		var d struct {
			ToolCallID string          `json:"toolCallId"`
			ToolName   string          `json:"toolName"`
			Arguments  json.RawMessage `json:"arguments"`
		}
		if !s.decode(ev, &d) {
			return
		}
		args := nullToNil(d.Arguments)
		tc := s.tools[d.ToolCallID]
		tc.name, tc.args = d.ToolName, args
		s.tools[d.ToolCallID] = tc
		s.host.Emit(session.ToolStart{ToolCallID: d.ToolCallID, ToolName: d.ToolName, Arguments: args})

	case "tool.execution_complete":
		s.onToolComplete(ev)

	case "permission.requested":
		s.onPermission(p, ev)

	case "assistant.usage":
		s.onUsage(ev)

	case "session.error":
		s.onSessionError(ev)

	case "session.idle":
		// The end of processing: the turn is over. (assistant.idle comes
		// before it and may leave background work running.)
		s.mu.Lock()
		t := s.turn
		s.turn = nil
		s.mu.Unlock()
		if t != nil {
			close(t.idle)
		}
		// Tool calls of an aborted turn never complete; forget them.
		clear(s.tools)

	case "session.shutdown":
		var d struct {
			TotalPremiumRequests float64         `json:"totalPremiumRequests"`
			ModelMetrics         json.RawMessage `json:"modelMetrics"`
			TotalNanoAiu         *float64        `json:"totalNanoAiu"`
		}
		if !s.decode(ev, &d) {
			return
		}
		s.host.Emit(session.Shutdown{TotalPremiumRequests: d.TotalPremiumRequests, ModelMetrics: nullToNil(d.ModelMetrics), NanoAIU: d.TotalNanoAiu})
		s.shutOnce.Do(func() { close(s.shutdown) })
	}
}

// onToolComplete ends a tool call, with its result or its error, and
// whether the user denied it (onPermission noted that).
func (s *Session) onToolComplete(ev envelope) {
	var d struct {
		ToolCallID string `json:"toolCallId"`
		Success    bool   `json:"success"`
		Result     *struct {
			Content string `json:"content"`
		} `json:"result"`
		Error *struct {
			Message string `json:"message"`
			Code    string `json:"code"`
		} `json:"error"`
	}
	if !s.decode(ev, &d) {
		return
	}
	end := session.ToolEnd{ToolCallID: d.ToolCallID, Success: d.Success, Denied: s.tools[d.ToolCallID].denied}
	switch {
	case d.Result != nil && d.Result.Content != "":
		end.Result = d.Result.Content
	case d.Error != nil:
		end.Result = d.Error.Message
	}
	delete(s.tools, d.ToolCallID)
	s.host.Emit(end)
}

// onSessionError keeps the agent's error for the turn it ends: the first
// one counts. An error outside a turn is only logged.
func (s *Session) onSessionError(ev envelope) {
	var d struct {
		ErrorType string `json:"errorType"`
		Message   string `json:"message"`
	}
	if !s.decode(ev, &d) {
		return
	}
	if d.Message == "" {
		d.Message = "the agent reported an error"
	}
	provider := s.providerName() // takes s.mu itself
	s.mu.Lock()
	t := s.turn
	if t != nil && t.err == nil {
		t.err = &TurnError{Type: d.ErrorType, Message: d.Message, Provider: provider}
	}
	s.mu.Unlock()
	if t == nil {
		s.log.Warn("copilot: session error outside a turn", "type", d.ErrorType, "message", d.Message)
	}
}

func (s *Session) decode(ev envelope, v any) bool {
	if err := json.Unmarshal(ev.Data, v); err != nil {
		s.log.Warn("copilot: ignored a malformed event", "type", ev.Type, "err", err)
		return false
	}
	return true
}

// onPermission answers permission.requested from the conversation's mode
// right now: approve-once, or reject with a reason the model reads.
func (s *Session) onPermission(p *process, ev envelope) {
	var d struct {
		RequestID         string          `json:"requestId"`
		ResolvedByHook    bool            `json:"resolvedByHook"`
		PermissionRequest json.RawMessage `json:"permissionRequest"`
	}
	if !s.decode(ev, &d) {
		return
	}
	if d.ResolvedByHook {
		return // answered already; a second answer is not allowed
	}
	if d.RequestID == "" {
		s.log.Warn("copilot: permission request without a requestId")
		return
	}
	var pr struct {
		Kind       string `json:"kind"`
		ToolCallID string `json:"toolCallId"`
		ToolName   string `json:"toolName"`
	}
	_ = json.Unmarshal(d.PermissionRequest, &pr) // a union: take what is there
	req := session.PermissionRequest{
		ToolCallID: pr.ToolCallID,
		ToolName:   pr.ToolName,
		Kind:       pr.Kind,
		Arguments:  nullToNil(d.PermissionRequest),
	}
	if tc, ok := s.tools[pr.ToolCallID]; ok && pr.ToolCallID != "" {
		req.ToolName = tc.name
		if tc.args != nil {
			req.Arguments = tc.args
		}
	}
	if req.ToolName == "" {
		req.ToolName = pr.Kind
	}
	dec := s.host.Permission(s.turnCtx(), req)
	result := map[string]any{"kind": "approve-once"}
	if !dec.Allow {
		reason := cmp.Or(dec.Reason, "denied")
		result = map[string]any{"kind": "reject", "feedback": reason}
		if pr.ToolCallID != "" {
			tc := s.tools[pr.ToolCallID]
			tc.denied = true
			s.tools[pr.ToolCallID] = tc
		}
	}
	s.log.Debug("copilot: permission", "tool", req.ToolName, "kind", req.Kind, "allow", dec.Allow)
	params := map[string]any{"sessionId": s.id, "requestId": d.RequestID, "result": result}
	s.workers.Add(1)
	go func() {
		defer s.workers.Done()
		ctx, cancel := context.WithTimeout(context.Background(), permissionReplyTimeout)
		defer cancel()
		var res struct {
			Success bool `json:"success"`
		}
		if err := p.conn.Call(ctx, "session.permissions.handlePendingPermissionRequest", params, &res); err != nil {
			s.log.Warn("copilot: answering a permission request failed", "err", err)
		} else if !res.Success {
			s.log.Warn("copilot: the CLI no longer waited for this permission answer", "request", d.RequestID)
		}
	}()
}

// onUsage reports one model call's usage and keeps the totals.
func (s *Session) onUsage(ev envelope) {
	var d struct {
		Model            string          `json:"model"`
		Cost             *float64        `json:"cost"`
		InputTokens      *float64        `json:"inputTokens"`
		OutputTokens     *float64        `json:"outputTokens"`
		CacheReadTokens  *float64        `json:"cacheReadTokens"`
		CacheWriteTokens *float64        `json:"cacheWriteTokens"`
		QuotaSnapshots   json.RawMessage `json:"quotaSnapshots"`
		AICreditsStatus  string          `json:"aiCreditsStatus"`
		CopilotUsage     *struct {
			TotalNanoAiu *float64 `json:"totalNanoAiu"`
		} `json:"copilotUsage"`
	}
	if !s.decode(ev, &d) {
		return
	}
	var nano *float64
	if d.CopilotUsage != nil {
		nano = d.CopilotUsage.TotalNanoAiu
	}
	u := session.Usage{
		NanoAIU:          nano,
		AICreditsStatus:  d.AICreditsStatus,
		Model:            d.Model,
		Cost:             d.Cost,
		InputTokens:      tokens(d.InputTokens),
		OutputTokens:     tokens(d.OutputTokens),
		CacheReadTokens:  tokens(d.CacheReadTokens),
		CacheWriteTokens: tokens(d.CacheWriteTokens),
		QuotaSnapshots:   nullToNil(d.QuotaSnapshots),
	}
	s.mu.Lock()
	m := s.usage[d.Model]
	if m == nil {
		m = &modelUsage{}
		s.usage[d.Model] = m
	}
	m.Requests.Count++
	if d.Cost != nil {
		m.Requests.Cost += *d.Cost
		s.premium += *d.Cost
	}
	m.Usage.InputTokens += deref(u.InputTokens)
	m.Usage.OutputTokens += deref(u.OutputTokens)
	m.Usage.CacheReadTokens += deref(u.CacheReadTokens)
	m.Usage.CacheWriteTokens += deref(u.CacheWriteTokens)
	s.mu.Unlock()
	s.host.Emit(u)
}

// tokens turns a JSON number into a token count; the CLI sends integers, but
// a float must not make the whole event unreadable.
func tokens(f *float64) *int64 {
	if f == nil || math.IsNaN(*f) || math.IsInf(*f, 0) {
		return nil
	}
	n := int64(math.Round(*f))
	return &n
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// nullToNil maps an absent or JSON null value to nil.
func nullToNil(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return raw
}
