package relay

import "github.com/pilotdesk/pilotdesk/session"

// agentLabel names the relay's agent for people, for the list's entries:
// every conversation of a relay runs on its one backend. A backend that
// says more than its name (an ACP agent names itself once started) does so
// through session.Labeler.
func (r *Relay) agentLabel() string {
	if l, ok := r.agent.(session.Labeler); ok {
		if s := l.Label(); s != "" {
			return s
		}
	}
	return r.agent.Name()
}
