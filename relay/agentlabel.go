package relay

import "github.com/pilotdesk/pilotdesk/session"

// agentLabel names the relay's agent for people: every turn a relay starts
// runs on its one backend, and the conversation records this name when the
// turn starts (startTurnLocked), for the list's entries and the turn's
// copilot:user_message. A backend that says more than its name (an ACP
// agent names itself once started) does so through session.Labeler.
func (r *Relay) agentLabel() string {
	if l, ok := r.agent.(session.Labeler); ok {
		if s := l.Label(); s != "" {
			return s
		}
	}
	return r.agent.Name()
}
