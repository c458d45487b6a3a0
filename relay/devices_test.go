package relay_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/session"
)

const ownToken = "the-relay-token"

// startDevices runs a relay with a token and a devices table.
func startDevices(t *testing.T, mod func(*relay.Config)) (*env, *history.Memory) {
	t.Helper()
	devs := history.NewMemory()
	e := start(t, func(c *relay.Config) {
		c.Token = ownToken
		c.Devices = devs
		c.DevicePoll = 50 * time.Millisecond
		if mod != nil {
			mod(c)
		}
	})
	return e, devs
}

// device makes a device token through the relay.
func (e *env) device(name, role string, expires time.Time) string {
	e.t.Helper()
	token, dev, err := e.srv.Relay.CreateDevice(context.Background(), relay.NewDevice{Name: name, Role: role, Expires: expires})
	if err != nil {
		e.t.Fatalf("CreateDevice(%s, %s): %v", name, role, err)
	}
	if dev.Name != name || dev.Role != role || strings.Contains(string(dev.Hash[:]), token) {
		e.t.Fatalf("device %+v", dev)
	}
	return token
}

// dialAs connects with token, announcing the client kind (none when "").
func (e *env) dialAs(token, client string) *relaytest.Client {
	e.t.Helper()
	u := e.srv.URL
	if client != "" {
		u += "?client=" + client
	}
	return relaytest.Dial(e.t, u, token)
}

func upgradeStatus(t *testing.T, wsURL, token string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), relaytest.Timeout)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	if err == nil {
		c.CloseNow()
		return http.StatusSwitchingProtocols
	}
	if resp == nil {
		t.Fatalf("dial: %v", err)
	}
	return resp.StatusCode
}

// Every client message against every role: a message beyond the role gets
// error forbidden (naming its type) and nothing else happens; the
// connection stays open and the next message works. Allowed messages are
// never forbidden.
func TestRolesEveryMessage(t *testing.T) {
	e, _ := startDevices(t, nil)
	tokens := map[string]string{
		protocol.RoleViewer:     e.device("phone", protocol.RoleViewer, time.Time{}),
		protocol.RoleController: e.device("tablet", protocol.RoleController, time.Time{}),
		protocol.RoleOwner:      e.device("laptop", protocol.RoleOwner, time.Time{}),
	}
	data := map[string]map[string]any{
		protocol.TypePing:              nil,
		protocol.TypeSubscribe:         {"conversationId": "r1"},
		protocol.TypeUnsubscribe:       {"conversationId": "r1"},
		protocol.TypeList:              {},
		protocol.TypeSend:              {"conversationId": "r2", "prompt": "hi"},
		protocol.TypeAbort:             {"conversationId": "r3"},
		protocol.TypeSetMode:           {"conversationId": "r1", "mode": "plan"},
		protocol.TypeUserInputResponse: {"conversationId": "r1", "requestId": "nope", "answer": "x"},
		protocol.TypeClose:             {"conversationId": "r4"},
		protocol.TypeDelete:            {"conversationId": "r5"},
		protocol.TypeDiff:              {"conversationId": "r1", "checkpoint": "0123"},
		protocol.TypeRestore:           {"conversationId": "r1", "checkpoint": "0123"},
		protocol.TypeWorkspaces:        {},
	}
	for _, role := range protocol.Roles() {
		t.Run(role, func(t *testing.T) {
			// Dialled with the subtest's t, so that a failure stops this
			// subtest, not its parent from the subtest's goroutine.
			cl := relaytest.Dial(t, e.srv.URL+"?client=terminal", tokens[role])
			for _, typ := range protocol.ClientTypes() {
				d, ok := data[typ]
				if !ok {
					t.Fatalf("no test message for %s", typ)
				}
				if typ == protocol.TypePing {
					// The types come in random order: an event of an
					// earlier message (set_mode's mode_changed goes
					// through the store, the pong does not) may still
					// be on its way. Only an error would be the ping's.
					cl.Send(typ, nil)
					_, before := cl.WaitForCollect("pong", nil)
					for _, f := range before {
						if f.Type == "error" {
							t.Errorf("%s sending ping: %s", role, f.Raw)
						}
					}
					continue // every role may
				}
				cl.Send(typ, d)
				got := sync_(t, cl) // the connection is still open: the pong comes
				forbidden := false
				for _, f := range got {
					if f.Type != "error" {
						continue
					}
					m := dataMap(t, f)
					if m["code"] == protocol.CodeForbidden {
						forbidden = true
						if m["type"] != typ || !strings.Contains(m["message"].(string), protocol.RequiredRole(typ)) {
							t.Errorf("%s: forbidden error %s", typ, f.Raw)
						}
					}
				}
				if want := !protocol.RoleAllows(role, typ); forbidden != want {
					t.Errorf("%s sending %s: forbidden %v, want %v (frames %s)", role, typ, forbidden, want, framesString(got))
				}
				if typ == protocol.TypeSend && !forbidden {
					ft := e.agent.nextTurn(t)
					ft.finish(nil)
					cl.WaitFor("copilot:idle", nil)
				}
			}
		})
	}
}

// A forbidden send starts nothing: no turn, no user message for the
// subscribers.
func TestViewerCannotSend(t *testing.T) {
	e, _ := startDevices(t, nil)
	watcher, _ := e.subscribe("v1")
	viewer := e.dialAs(e.device("phone", protocol.RoleViewer, time.Time{}), "web")
	viewer.Send("copilot:send", map[string]any{"conversationId": "v1", "prompt": "rm -rf"})
	if m := dataMap(t, viewer.Expect("error")); m["code"] != protocol.CodeForbidden || m["conversationId"] != "v1" {
		t.Fatalf("viewer's send: %v", m)
	}
	expectQuiet(t, watcher)
	expectQuiet(t, viewer)
}

// copilot:conversations tells a viewer's or a controller's connection its
// role, so that a client can show a viewer a read-only page; the owner's
// page is as before.
func TestListSaysTheRole(t *testing.T) {
	e, _ := startDevices(t, nil)
	for _, role := range []string{protocol.RoleViewer, protocol.RoleController} {
		cl := e.dialAs(e.device("phone-"+role, role, time.Time{}), "web")
		cl.Send("copilot:list", nil)
		if got := dataMap(t, cl.Expect("copilot:conversations"))["role"]; got != role {
			t.Errorf("%s's list says role %v", role, got)
		}
	}
	own := e.dialAs(ownToken, "window")
	own.Send("copilot:list", nil)
	if got, ok := dataMap(t, own.Expect("copilot:conversations"))["role"]; ok {
		t.Errorf("the owner's list says role %v", got)
	}
}

// The relay's own token is the owner of "this device"; a wrong token, or a
// device token that never existed, gets 401.
func TestOwnTokenAndUnknownTokens(t *testing.T) {
	e, _ := startDevices(t, nil)
	own := e.dialAs(ownToken, "window")
	own.Send("copilot:delete", map[string]any{"conversationId": "gone"})
	expectQuiet(t, own) // owner: no forbidden
	if got := upgradeStatus(t, e.srv.URL, "pdt_nope"); got != http.StatusUnauthorized {
		t.Fatalf("an unknown device token: %d", got)
	}
	if got := upgradeStatus(t, e.srv.URL, ""); got != http.StatusUnauthorized {
		t.Fatalf("no token: %d", got)
	}
}

// Revoking a device through the relay closes its connections at once with
// 4003, leaves the others open, and its token then gets 401; the name may
// be given again.
func TestRevokeClosesAtOnce(t *testing.T) {
	e, _ := startDevices(t, func(c *relay.Config) { c.DevicePoll = time.Hour }) // only the revoke itself may close
	token := e.device("Pixel", protocol.RoleController, time.Time{})
	other := e.dialAs(e.device("work", protocol.RoleViewer, time.Time{}), "")
	a, b := e.dialAs(token, "web"), relaytest.Dial(t, relaytest.WithToken(e.srv.URL, token), "")
	sync_(t, a)
	sync_(t, b)
	start := time.Now()
	if err := e.srv.Relay.RevokeDevice(context.Background(), "Pixel"); err != nil {
		t.Fatal(err)
	}
	for _, cl := range []*relaytest.Client{a, b} {
		code, reason := cl.WaitClosed()
		if code != relay.CloseRevoked || reason != "token revoked" {
			t.Fatalf("closed with %d %q, want 4003 \"token revoked\"", code, reason)
		}
	}
	// The poll is an hour: any close well before it is the revoke's own.
	// 10 s, not less: a busy machine delays the close frames, not the
	// revoke.
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("closing took %s", d)
	}
	expectQuiet(t, other)
	if got := upgradeStatus(t, e.srv.URL, token); got != http.StatusUnauthorized {
		t.Fatalf("a revoked token's upgrade: %d", got)
	}
	if err := e.srv.Relay.RevokeDevice(context.Background(), "Pixel"); !errors.Is(err, history.ErrNoDevice) {
		t.Fatalf("revoking twice: %v", err)
	}
	e.device("Pixel", protocol.RoleViewer, time.Time{})
}

// ConnectedDevices counts each device token's open connections, not the
// relay's own, and forgets a connection once it closes.
func TestConnectedDevices(t *testing.T) {
	e, _ := startDevices(t, nil)
	token := e.device("Pixel", protocol.RoleController, time.Time{})
	e.device("work", protocol.RoleViewer, time.Time{}) // never connects
	own := e.dialAs(ownToken, "window")
	a, b := e.dialAs(token, "web"), e.dialAs(token, "terminal")
	sync_(t, own)
	sync_(t, a)
	sync_(t, b)
	if got := e.srv.Relay.ConnectedDevices(); len(got) != 1 || got["Pixel"] != 2 {
		t.Fatalf("ConnectedDevices() = %v, want Pixel: 2", got)
	}
	a.Close()
	b.Close()
	deadline := time.Now().Add(relaytest.Timeout)
	for len(e.srv.Relay.ConnectedDevices()) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("ConnectedDevices() = %v after both closed", e.srv.Relay.ConnectedDevices())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A revocation made by another process (straight in the table, as
// `pilotdesk token revoke` does beside a running relay) is noticed by the
// relay's poll.
func TestRevokeFromOutsideIsPolled(t *testing.T) {
	e, devs := startDevices(t, nil) // polls every 50 ms
	cl := e.dialAs(e.device("Pixel", protocol.RoleViewer, time.Time{}), "web")
	sync_(t, cl)
	if err := devs.RevokeDevice(context.Background(), "Pixel"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if code, _ := cl.WaitClosed(); code != relay.CloseRevoked {
		t.Fatalf("closed with %d, want 4003", code)
	}
	// The poll is the only way the relay can learn of it: a bound far
	// above its 50 ms that a busy machine cannot reach.
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the relay noticed after %s", d)
	}
}

// A token made beside the running relay works at once: the upgrade looks
// the hash up in the table.
func TestTokenMadeOutsideWorks(t *testing.T) {
	e, devs := startDevices(t, nil)
	token, _, err := relay.CreateDevice(context.Background(), devs, relay.NewDevice{Name: "ssh", Role: protocol.RoleController})
	if err != nil {
		t.Fatal(err)
	}
	cl := e.dialAs(token, "terminal")
	expectQuiet(t, cl)
}

// An expiring token closes its connections with 4003 when it expires, and
// its next upgrade gets 401. Its last use is recorded.
func TestExpiryClosesAndLastUse(t *testing.T) {
	e, devs := startDevices(t, func(c *relay.Config) { c.DevicePoll = time.Hour })
	// Time to make the device, connect and ping before it expires: with
	// -race on a busy machine the upgrade and the pong can take more than
	// the 700 ms it was.
	made := time.Now()
	expires := made.Add(3 * time.Second)
	token := e.device("temp", protocol.RoleViewer, expires)
	cl := e.dialAs(token, "")
	sync_(t, cl)
	code, reason := cl.WaitClosed()
	if code != relay.CloseRevoked || !strings.HasPrefix(reason, "token revoked") {
		t.Fatalf("closed with %d %q", code, reason)
	}
	// The poll is an hour: a close well before it is the expiry's own. 10 s,
	// not less: a busy machine delays the close frame, not the expiry.
	if late := time.Since(expires); late < 0 || late > 10*time.Second {
		t.Fatalf("closed %s after the expiry", late)
	}
	if got := upgradeStatus(t, e.srv.URL, token); got != http.StatusUnauthorized {
		t.Fatalf("an expired token's upgrade: %d", got)
	}
	list, err := devs.Devices(context.Background())
	if err != nil || len(list) != 1 || list[0].LastUsed.Before(made.Add(-time.Second)) { // used when it connected
		t.Fatalf("devices %+v, %v: no last use recorded", list, err)
	}
	if _, _, err := e.srv.Relay.CreateDevice(context.Background(), relay.NewDevice{Name: "past", Role: "viewer", Expires: time.Now().Add(-time.Minute)}); err == nil {
		t.Fatal("made a token that had expired already")
	}
}

// CreateDevice refuses what would be ambiguous: the relay's own device
// name, a name taken, a role that does not exist.
func TestCreateDeviceRefusals(t *testing.T) {
	e, _ := startDevices(t, nil)
	e.device("Pixel", protocol.RoleViewer, time.Time{})
	for _, nd := range []relay.NewDevice{
		{Name: "Pixel", Role: protocol.RoleViewer},
		{Name: protocol.OwnDevice, Role: protocol.RoleViewer},
		{Name: "x", Role: "admin"},
		{Name: "", Role: protocol.RoleViewer},
		{Name: "a\nb", Role: protocol.RoleViewer},
	} {
		if _, _, err := e.srv.Relay.CreateDevice(context.Background(), nd); err == nil {
			t.Errorf("CreateDevice(%+v) succeeded", nd)
		}
	}
}

// sentBy and answeredBy name the device and the client kind of the
// connection that sent the prompt, answered or rejected; an abort's close
// names nobody.
func TestSentByAndAnsweredBy(t *testing.T) {
	e, _ := startDevices(t, nil)
	window := e.dialAs(ownToken, "window")
	window.Send("copilot:subscribe", map[string]any{"conversationId": "who"})
	window.Expect("copilot:subscribed")
	phone := e.dialAs(e.device("Pixel", protocol.RoleController, time.Time{}), "web")

	phone.Send("copilot:send", map[string]any{"conversationId": "who", "prompt": "deploy"})
	um := window.WaitFor("copilot:user_message", nil)
	var msg protocol.UserMessage
	um.Decode(t, &msg)
	if msg.SentBy == nil || *msg.SentBy != (protocol.By{Device: "Pixel", Client: "web"}) {
		t.Fatalf("user_message %s", um.Raw)
	}
	ft := e.agent.nextTurn(t)

	res := ft.ask(session.InputRequest{Question: "Ship it?"})
	req := window.Expect("copilot:user_input_request")
	phone.Send("copilot:user_input_response", map[string]any{"conversationId": "who", "requestId": req.Field("requestId"), "answer": "yes"})
	var closed protocol.UserInputClosed
	window.Expect("copilot:user_input_closed").Decode(t, &closed)
	if closed.AnsweredBy == nil || *closed.AnsweredBy != (protocol.By{Device: "Pixel", Client: "web"}) || closed.Reason != "answered" {
		t.Fatalf("closed %+v", closed)
	}
	waitAsk(t, res)

	// The window rejects the next one: its own device, its own kind.
	res = ft.ask(session.InputRequest{Question: "Really?"})
	req = window.Expect("copilot:user_input_request")
	window.Send("copilot:user_input_response", map[string]any{"conversationId": "who", "requestId": req.Field("requestId"), "answer": "", "rejected": true})
	closed = protocol.UserInputClosed{}
	window.Expect("copilot:user_input_closed").Decode(t, &closed)
	if closed.AnsweredBy == nil || *closed.AnsweredBy != (protocol.By{Device: protocol.OwnDevice, Client: "window"}) || closed.Reason != "rejected" {
		t.Fatalf("closed %+v", closed)
	}
	waitAsk(t, res)
	ft.finish(ft.Ctx.Err())
	window.WaitFor("copilot:idle", nil)

	// An abort closes the question with nobody named.
	window.Send("copilot:send", map[string]any{"conversationId": "who", "prompt": "again"})
	ft = e.agent.nextTurn(t)
	res = ft.ask(session.InputRequest{Question: "Stop?"})
	window.WaitFor("copilot:user_input_request", nil)
	window.Send("copilot:abort", map[string]any{"conversationId": "who"})
	f := window.WaitFor("copilot:user_input_closed", nil)
	keys(t, f, "conversationId", "seq", "requestId", "reason")
	waitAsk(t, res)
	ft.finish(ft.Ctx.Err())
}

// expiresAt is the relay's deadline on its own clock (serverTime on
// copilot:subscribed is that clock), set when the question is sent, not
// while it waits in the queue; queued counts the questions behind it; a
// relay that waits forever sends no expiresAt.
func TestExpiresAtQueuedServerTime(t *testing.T) {
	const timeout = 1500 * time.Millisecond
	// The timers fire when the test says: a busy machine that takes longer
	// than a timeout to go through the queue does not time the first
	// question out under the test.
	timers := relaytest.NewInputTimers()
	e := start(t, func(c *relay.Config) { c.InputTimeout = timeout; c.InputTimer = timers.Start })
	asked := time.Now()
	cl, sub := e.subscribe("dl")
	subscribed := time.Now()
	var s protocol.Subscribed
	sub.Decode(t, &s)
	// The relay's clock as it answered: between the subscribe and its
	// answer (to the millisecond it is written with), however long a
	// busy machine took to deliver it.
	st, err := time.Parse(time.RFC3339, s.ServerTime)
	if err != nil || st.Before(asked.Truncate(time.Millisecond)) || st.After(subscribed) {
		t.Fatalf("serverTime %q (%v), want between %s and %s", s.ServerTime, err, asked.Format(protocol.TimeLayout), subscribed.Format(protocol.TimeLayout))
	}
	ft := e.startTurn(cl, "dl", "ask twice", nil)
	before := time.Now()
	first := ft.ask(session.InputRequest{Question: "one"})
	var r1 protocol.UserInputRequest
	cl.Expect("copilot:user_input_request").Decode(t, &r1)
	exp1, err := time.Parse(time.RFC3339, r1.ExpiresAt)
	if err != nil || exp1.Before(before.Add(timeout).Add(-10*time.Millisecond)) || exp1.After(time.Now().Add(timeout)) {
		t.Fatalf("expiresAt %q (%v), want about now + %s", r1.ExpiresAt, err, timeout)
	}
	if r1.Queued != 0 {
		t.Fatalf("queued %d with nothing behind", r1.Queued)
	}
	// Each Ask runs on a goroutine of its own: one at a time keeps their
	// order in the queue.
	// A late subscriber sees the open question with those behind it, and
	// the same deadline.
	queued := func(n int) {
		t.Helper()
		deadline := time.Now().Add(relaytest.Timeout)
		for {
			late, lsub := e.subscribe("dl")
			var ls protocol.Subscribed
			lsub.Decode(t, &ls)
			late.Close()
			if ls.PendingInput == nil || ls.PendingInput.ExpiresAt != r1.ExpiresAt || ls.ServerTime == "" || ls.PendingInput.Queued > n {
				t.Fatalf("late subscribed %s", lsub.Raw)
			}
			if ls.PendingInput.Queued == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d question(s) queued, want %d: %s", ls.PendingInput.Queued, n, lsub.Raw)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	second := ft.ask(session.InputRequest{Question: "two"})
	queued(1)
	third := ft.ask(session.InputRequest{Question: "three"})
	queued(2)
	if n := timers.Armed(); n != 1 {
		t.Fatalf("%d question timers armed with one question open and two queued", n)
	}

	time.Sleep(400 * time.Millisecond) // the second question has waited in the queue
	// The second question opens once the first is answered: not before
	// the answer is sent (a bound that holds however slowly the test
	// reads the question afterwards; it was read late on a busy machine).
	answered := time.Now()
	cl.Send("copilot:user_input_response", map[string]any{"conversationId": "dl", "requestId": r1.RequestID, "answer": "a"})
	waitAsk(t, first)
	cl.WaitFor("copilot:user_input_closed", nil)
	var r2 protocol.UserInputRequest
	cl.Expect("copilot:user_input_request").Decode(t, &r2)
	exp2, _ := time.Parse(time.RFC3339, r2.ExpiresAt)
	if r2.Question != "two" || r2.Queued != 1 || exp2.Before(answered.Add(timeout).Add(-time.Millisecond)) {
		t.Fatalf("second request %+v: its timer must start when it opens (after %s), not when it was queued", r2, answered.Add(timeout).Format(protocol.TimeLayout))
	}
	// It times out at its expiresAt, not earlier: its timer runs the
	// whole timeout from when it opened.
	if d := timers.Expire(t); d != timeout {
		t.Fatalf("the second question's timer runs %v, want %v", d, timeout)
	}
	cl.WaitFor("copilot:user_input_timeout", nil)
	waitAsk(t, second)
	cl.Expect("copilot:user_input_request")
	ft.finish(nil)
	waitAsk(t, third)
	cl.WaitFor("copilot:idle", nil)
}

// A relay that waits forever sends no expiresAt.
func TestNoExpiresAtWhenWaitingForever(t *testing.T) {
	e2 := start(t, func(c *relay.Config) { c.InputTimeout = -1 })
	cl2, _ := e2.subscribe("forever")
	ft2 := e2.startTurn(cl2, "forever", "ask", nil)
	res := ft2.ask(session.InputRequest{Question: "whenever"})
	f := cl2.Expect("copilot:user_input_request")
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(f.Data, &raw); err != nil || raw["expiresAt"] != nil {
		t.Fatalf("a relay that waits forever sent %s", f.Raw)
	}
	ft2.finish(nil)
	waitAsk(t, res)
}

// A relay without a token of its own (serve --insecure-no-auth) lets in
// only connections that present none: a device token, a revoked one or a
// garbled one gets 401, never the owner's rights (issue #33: a viewer whose
// token was dropped on the way could delete).
func TestOpenRelayRefusesTokens(t *testing.T) {
	devs := history.NewMemory()
	e := start(t, func(c *relay.Config) { c.Devices = devs })
	token, _, err := relay.CreateDevice(context.Background(), devs, relay.NewDevice{Name: "Pixel", Role: protocol.RoleViewer})
	if err != nil {
		t.Fatal(err)
	}
	revoked, _, err := relay.CreateDevice(context.Background(), devs, relay.NewDevice{Name: "old", Role: protocol.RoleViewer})
	if err != nil {
		t.Fatal(err)
	}
	if err := devs.RevokeDevice(context.Background(), "old"); err != nil {
		t.Fatal(err)
	}
	for name, tok := range map[string]string{"a device's": token, "a revoked": revoked, "a garbled": token[:len(token)-1] + "x", "an unknown": "whatever"} {
		if got := upgradeStatus(t, e.srv.URL, tok); got != http.StatusUnauthorized {
			t.Errorf("%s token on a relay without one: %d, want 401", name, got)
		}
	}
	if got := upgradeStatus(t, relaytest.WithToken(e.srv.URL, "whatever"), ""); got != http.StatusUnauthorized {
		t.Errorf("?token= on a relay without one: %d, want 401", got)
	}
	cl := e.dialAs("", "")
	cl.Send("copilot:delete", map[string]any{"conversationId": "gone"})
	expectQuiet(t, cl) // no token at all: the owner, as the flag says
}
