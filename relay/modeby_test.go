package relay_test

import (
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// copilot:mode_changed names who switched (changedBy): the device and
// client kind of a copilot:set_mode, and of a copilot:send whose mode
// differs from the conversation's, for a device token; the relay's own
// device is not named.
func TestModeChangedNamesWhoSwitched(t *testing.T) {
	e, _ := startDevices(t, nil)
	window := e.dialAs(ownToken, "window")
	window.Send("copilot:subscribe", map[string]any{"conversationId": "modes"})
	window.Expect("copilot:subscribed")
	phone := e.dialAs(e.device("zebra-phone", protocol.RoleController, time.Time{}), "web")

	phone.Send("copilot:set_mode", map[string]any{"conversationId": "modes", "mode": "plan"})
	var mc protocol.ModeChanged
	window.WaitFor("copilot:mode_changed", nil).Decode(t, &mc)
	if mc.Mode != protocol.ModePlan || mc.ChangedBy == nil || *mc.ChangedBy != (protocol.By{Device: "zebra-phone", Client: "web"}) {
		t.Fatalf("mode_changed %+v (by %+v)", mc, mc.ChangedBy)
	}

	window.Send("copilot:send", map[string]any{"conversationId": "modes", "prompt": "go", "mode": "act"})
	mc = protocol.ModeChanged{}
	window.WaitFor("copilot:mode_changed", nil).Decode(t, &mc)
	if mc.Mode != protocol.ModeAct || mc.ChangedBy != nil {
		t.Fatalf("mode_changed of the relay's own device's send %+v (by %+v), want nobody named", mc, mc.ChangedBy)
	}
	ft := e.agent.nextTurn(t)
	ft.finish(nil)
	window.WaitFor("copilot:idle", nil)

	// A send in another mode from a device names it.
	phone.Send("copilot:send", map[string]any{"conversationId": "modes", "prompt": "plan it", "mode": "plan"})
	mc = protocol.ModeChanged{}
	window.WaitFor("copilot:mode_changed", nil).Decode(t, &mc)
	if mc.Mode != protocol.ModePlan || mc.ChangedBy == nil || *mc.ChangedBy != (protocol.By{Device: "zebra-phone", Client: "web"}) {
		t.Fatalf("mode_changed of a device's send %+v (by %+v)", mc, mc.ChangedBy)
	}
	ft = e.agent.nextTurn(t)
	ft.finish(nil)
	window.WaitFor("copilot:idle", nil)
}
