package ui

import (
	"encoding/json"

	"fyne.io/fyne/v2"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// prefIdentity + client.Identity.Key() is who the window was on a relay
// with a token ({device, client}), filed under a digest of both, never
// the token: after a restart, the window's own earlier prompts and
// answers in a replayed history are its own again before it sends
// anything.
const prefIdentity = "identity."

// rememberIdentity gives id who the window was on an earlier run with the
// same relay and token, and files what id learns from now on.
func rememberIdentity(p fyne.Preferences, id *client.Identity) {
	key := prefIdentity + id.Key()
	var by protocol.By
	if raw := p.String(key); raw != "" && json.Unmarshal([]byte(raw), &by) == nil {
		id.Remember(by)
	}
	id.OnLearn(func(by protocol.By) {
		if b, err := json.Marshal(by); err == nil {
			p.SetString(key, string(b))
		}
	})
}
