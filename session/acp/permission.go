package acp

import (
	"context"
	"fmt"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/pilotdesk/pilotdesk/session"
)

// permission decides a session/request_permission from the conversation's
// mode now (Host.Permission): act answers the agent's allow-once option,
// plan its reject-once option. It runs on the pump.
//
// Never allow-always (or reject-always): after it the agent stops asking
// for that command, so a later switch to plan could no longer deny it (nor
// act allow it). With no once-option to pick, the request is cancelled,
// which agents take as a denial, and the transcript says why.
func (st *stream) permission(turnCtx context.Context, req sdk.RequestPermissionRequest) sdk.RequestPermissionResponse {
	tc := req.ToolCall
	title, kind := titleKind(tc.Title, tc.Kind)
	c := st.start(tc.ToolCallId, title, kind, tc.RawInput, true)
	c.asked = true
	if turnCtx.Err() != nil {
		return cancelledOutcome() // aborted while the request waited
	}
	dec := st.host.Permission(turnCtx, session.PermissionRequest{
		ToolCallID: string(tc.ToolCallId),
		ToolName:   c.name,
		Kind:       string(c.kind),
		Arguments:  c.args,
	})
	want := sdk.PermissionOptionKindAllowOnce
	if !dec.Allow {
		want = sdk.PermissionOptionKindRejectOnce
		c.denied, c.reason = true, dec.Reason
		if c.reason == "" {
			c.reason = "denied"
		}
	}
	if o, ok := pickOption(req.Options, want); ok {
		st.log.Debug("acp: permission", "tool", c.name, "kind", c.kind, "allow", dec.Allow, "option", o.OptionId)
		if !dec.Allow {
			st.deniedTool = true
		}
		return sdk.RequestPermissionResponse{Outcome: sdk.RequestPermissionOutcome{Selected: &sdk.RequestPermissionOutcomeSelected{OptionId: o.OptionId}}}
	}
	offered := optionKinds(req.Options)
	if dec.Allow {
		c.denied, c.reason = true, "pilotdesk never answers allow-always, and the agent offered no allow-once option"
		st.note("no-allow-once", fmt.Sprintf("the agent asked to run “%s” offering no allow-once option (only %s). pilotdesk never answers allow-always (the agent would stop asking, and Plan mode could no longer deny), so the call was refused.", c.name, offered))
	} else {
		st.deniedTool = true
		st.note("no-reject", fmt.Sprintf("the agent offers no reject-once option (only %s), so Plan mode refuses its tool calls by cancelling the request.", offered))
	}
	return cancelledOutcome()
}

// pickOption returns the first option of kind want. Of several rejections
// it prefers one whose id and name do not say it stops the turn (abort,
// cancel, stop): the model then hears of the denial and goes on, where
// Codex, on its only rejection "abort", ends the turn.
func pickOption(opts []sdk.PermissionOption, want sdk.PermissionOptionKind) (sdk.PermissionOption, bool) {
	var first *sdk.PermissionOption
	for i, o := range opts {
		if o.Kind != want {
			continue
		}
		if first == nil {
			first = &opts[i]
		}
		if want == sdk.PermissionOptionKindRejectOnce && stopsTurn(o) {
			continue
		}
		return o, true
	}
	if first != nil {
		return *first, true
	}
	return sdk.PermissionOption{}, false
}

// stopsTurn: the option's id or name says it ends the agent's turn.
func stopsTurn(o sdk.PermissionOption) bool {
	s := strings.ToLower(string(o.OptionId) + " " + o.Name)
	for _, w := range []string{"abort", "cancel", "stop"} {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

func optionKinds(opts []sdk.PermissionOption) string {
	if len(opts) == 0 {
		return "none"
	}
	kinds := make([]string, len(opts))
	for i, o := range opts {
		kinds[i] = string(o.Kind)
	}
	return strings.Join(kinds, ", ")
}

// cancelledOutcome answers a permission request "cancelled": ACP's answer
// for a turn that was aborted, and what agents take as a denial.
func cancelledOutcome() sdk.RequestPermissionResponse {
	return sdk.RequestPermissionResponse{Outcome: sdk.RequestPermissionOutcome{Cancelled: &sdk.RequestPermissionOutcomeCancelled{}}}
}
