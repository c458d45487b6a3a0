package acp

import (
	"context"
	"strings"

	sdk "github.com/coder/acp-go-sdk"
)

// planModeID is the session mode of an agent's own plan mode (Claude Code:
// modes default, acceptEdits, plan, dontAsk).
const planModeID sdk.SessionModeId = "plan"

// ownPlanMode: the agents whose plan mode still asks permission for every
// tool it would run, so that the relay sees and denies each one. Claude
// Code's does. The Gemini CLI also has a mode "plan", but in it the shell
// tool is neither asked about nor shown (and the mode change is streamed
// as reply text): the relay would no longer see what Plan stops.
func ownPlanMode(p *process) bool {
	info := p.info.AgentInfo
	return info != nil && strings.Contains(info.Name, "claude-agent-acp")
}

// agentModes is what the session knows of the agent's session modes.
type agentModes struct {
	plan    bool              // the agent has a mode "plan"
	act     sdk.SessionModeId // the mode Act runs in: the session's first
	current sdk.SessionModeId
}

// setModes records the modes the agent announced for the session.
func (s *Session) setModes(m *sdk.SessionModeState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.modes = agentModes{}
	if m == nil {
		return
	}
	s.modes.current = m.CurrentModeId
	for _, mode := range m.AvailableModes {
		if mode.Id == planModeID {
			s.modes.plan = true
		}
	}
	s.modes.act = m.CurrentModeId
	if s.modes.act == planModeID {
		for _, mode := range m.AvailableModes {
			if mode.Id != planModeID {
				s.modes.act = mode.Id
				break
			}
		}
	}
}

// followMode puts an agent that has a plan mode of its own (ownPlanMode)
// in it for a
// turn in Plan, and back in its first mode for a turn in Act. The relay
// still denies every permission request in Plan: the agent's mode only
// tells its model to plan, whatever the agent does with it.
func (s *Session) followMode(ctx context.Context, p *process, id sdk.SessionId) {
	s.mu.Lock()
	m := s.modes
	s.mu.Unlock()
	if !m.plan || m.act == "" || !ownPlanMode(p) {
		return
	}
	want := m.act
	if s.host.Mode() == "plan" {
		want = planModeID
	}
	if want == m.current {
		return
	}
	if _, err := p.conn.SetSessionMode(ctx, sdk.SetSessionModeRequest{SessionId: id, ModeId: want}); err != nil {
		s.log.Warn("acp: the agent's mode could not be set", "mode", want, "err", rpcMessage(err))
		return
	}
	s.log.Info("acp: the agent's own mode follows the conversation's", "mode", want)
	s.mu.Lock()
	s.modes.current = want
	s.mu.Unlock()
}
