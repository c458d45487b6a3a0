package acp

import (
	"context"
	"slices"
	"time"

	sdk "github.com/coder/acp-go-sdk"
)

// Defaults of Options.IdleClose and Options.MaxOpen.
const (
	DefaultIdleClose = 10 * time.Minute
	DefaultMaxOpen   = 6
)

// Bounded sessions. Some agents keep much per open session (Claude Code:
// a process of 215–240 MB each), and a relay keeps a conversation's session
// open until copilot:close, which people rarely send. So a session idle for
// Options.IdleClose is put to sleep: its agent session is closed
// (session/close) and the Session keeps its id; the next turn loads it
// again (session/load, or session/resume), as after a restart of the agent.
// With more than Options.MaxOpen sessions awake, the least recently used
// idle ones sleep at once. An agent that cannot both close and load a
// session is left alone: closing would free nothing, or lose the context.

// used marks the end of a turn: the session's idle timer starts again and
// the bound on open sessions is kept.
func (s *Session) used() {
	a := s.a
	s.mu.Lock()
	s.lastUsed = time.Now()
	if !s.turns.Closed() && a.opts.IdleClose > 0 {
		if s.idle == nil {
			s.idle = time.AfterFunc(a.opts.IdleClose, func() { s.sleep("idle") })
		} else {
			s.idle.Reset(a.opts.IdleClose)
		}
	}
	s.mu.Unlock()
	a.keepBound(s)
}

// canSleep: the agent can close the session and load it again.
func canSleep(p *process) bool {
	caps := p.info.AgentCapabilities
	return caps.SessionCapabilities.Close != nil && (caps.LoadSession || caps.SessionCapabilities.Resume != nil)
}

// sleep closes the session's agent session if no turn runs. It reports
// whether it did.
func (s *Session) sleep(why string) bool {
	end, ok := s.turns.TryBegin()
	if !ok {
		return false // a turn runs: it is not idle
	}
	defer end()
	s.mu.Lock()
	p, id := s.proc, s.id
	if s.turns.Closed() || p == nil || id == "" || !p.alive() || !canSleep(p) {
		s.mu.Unlock()
		return false
	}
	// Detached first: Close, or a late update, no longer reach it.
	s.proc = nil
	s.mu.Unlock()
	s.a.unregister(id, s)
	s.a.mu.Lock()
	s.a.asleep[s] = true
	s.a.mu.Unlock()
	ctx, cancel := context.WithTimeout(s.ctx, s.a.opts.CloseTimeout)
	defer cancel()
	if _, err := p.conn.CloseSession(ctx, sdk.CloseSessionRequest{SessionId: id}); err != nil {
		s.log.Warn("acp: closing an idle session", "session", id, "err", rpcMessage(err))
	} else {
		s.a.closedIn(id, p)
	}
	s.log.Info("acp: closed the agent session of an idle conversation; the next message loads it again", "session", id, "why", why)
	return true
}

// awake reports whether the session holds an agent session now.
func (s *Session) awake() (bool, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.turns.Closed() && s.proc != nil, s.lastUsed
}

// keepBound puts the least recently used idle sessions to sleep while more
// than MaxOpen are awake; current (just used) is the last to go.
func (a *Agent) keepBound(current *Session) {
	if a.opts.MaxOpen < 0 {
		return
	}
	a.mu.Lock()
	seen := map[*Session]bool{}
	var all []*Session
	for _, s := range a.sessions {
		if !seen[s] {
			seen[s] = true
			all = append(all, s)
		}
	}
	a.mu.Unlock()
	type entry struct {
		s    *Session
		used time.Time
	}
	var open []entry
	for _, s := range all {
		if ok, used := s.awake(); ok {
			open = append(open, entry{s, used})
		}
	}
	excess := len(open) - a.opts.MaxOpen
	if excess <= 0 {
		return
	}
	slices.SortFunc(open, func(x, y entry) int {
		switch {
		case x.s == current:
			return 1
		case y.s == current:
			return -1
		}
		return x.used.Compare(y.used)
	})
	for _, e := range open {
		if excess == 0 {
			return
		}
		if e.s.sleep("more than the sessions allowed open") {
			excess--
		}
	}
}
