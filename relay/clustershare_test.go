package relay_test

import (
	"context"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/history/jetstream"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/session"
	"github.com/pilotdesk/pilotdesk/session/script"
)

// What the relays of a cluster share besides conversations: the credit
// budget, the device tokens' revocations, and who switched a mode.

// The JetStream store tells of changes to the spend ledger and to the
// device tokens, which the relay looks for.
var (
	_ history.SpendWatcher   = (*jetstream.Store)(nil)
	_ history.DevicesWatcher = (*jetstream.Store)(nil)
)

// shareLease is the lease of the relays of a test in which none is lost:
// far longer than the test lease, as a busy machine stalled a relay past
// 2 s, it gave its conversations up, and the turn a test waited for ended
// in an error (TestClusterModeChangedBy: "no copilot:idle").
const shareLease = 20 * time.Second

// relayConfig is relay i with agent behind it and its Config changed by
// mod, for the tests of what the relays share, where none is lost.
func (b testBackend) relayConfig(t *testing.T, i int, agent session.Agent, mod func(*relay.Config)) *member {
	t.Helper()
	return b.relayMod(t, i, agent, jetstream.ClusterOptions{Lease: shareLease}, mod)
}

// One budget for the cluster: what relay A's conversations spend reaches
// relay B's clients in copilot:budget as it is spent, without a restart,
// and once the cluster's spend reaches the budget B refuses a send with
// budget_exceeded, as A does. No spend counts twice: A's own spend comes
// back to it through the ledger's watch, and later connections on both
// relays are greeted with the same figures.
func TestClusterBudgetShared(t *testing.T) {
	parallel(t)
	eachNATS(t, func(t *testing.T, b testBackend) {
		withBudget := func(c *relay.Config) { c.BudgetCredits = 10 }
		a := b.relayConfig(t, 0, budgetAgent(t), withBudget)
		bb := b.relayConfig(t, 1, budgetAgent(t), withBudget)
		ca, cb := a.srv.Dial(t), bb.srv.Dial(t)
		if got := decodeBudget(t, ca.Expect(protocol.TypeBudget)); got.SpentCredits != 0 || got.BudgetCredits != 10 {
			t.Fatalf("A greets with %+v", got)
		}
		decodeBudget(t, cb.Expect(protocol.TypeBudget))

		runTurn(t, ca, "spend-a", "four")
		waitBudget(t, cb, 4) // B's client hears of A's spend
		runTurn(t, ca, "spend-a", "four")
		waitBudget(t, cb, 8)
		frames := runTurn(t, cb, "spend-b", "four") // B's own: 8 < 10, it runs
		waitBudget(t, ca, 12)                       // and A counts it
		if got := budgetAfter(t, cb, frames, 12); got.ResetsAt == "" {
			t.Fatalf("B's budget over the limit without resetsAt: %+v", got)
		}

		// Spent ≥ budget on the cluster: both relays refuse, in a
		// conversation of their own and in the other's.
		refused(t, cb, "new-on-b")
		refused(t, ca, "new-on-a")
		refused(t, cb, "spend-a")

		// Nothing counted twice, on either relay, once every read of the
		// ledger is done.
		for name, m := range map[string]*member{"A": a, "B": bb} {
			late := m.srv.Dial(t)
			if got := decodeBudget(t, late.Expect(protocol.TypeBudget)); got.SpentCredits != 12 {
				t.Fatalf("a new connection on %s is greeted with %v credits spent, want 12", name, got.SpentCredits)
			}
		}
	})
}

// A device revoked on relay A is closed on relay B as soon as B's watch of
// the devices hears of it: B's poll of the table is set to an hour here, so
// only the watch can close it.
func TestClusterRevokeWatched(t *testing.T) {
	parallel(t)
	eachNATS(t, func(t *testing.T, b testBackend) {
		s := clusterScript(t)
		slowPoll := func(c *relay.Config) { c.Token, c.DevicePoll = ownToken, time.Hour }
		a := b.relayConfig(t, 0, script.New(s), slowPoll)
		bb := b.relayConfig(t, 1, script.New(s), slowPoll)
		token, _, err := a.srv.Relay.CreateDevice(context.Background(), relay.NewDevice{Name: "Pixel", Role: protocol.RoleController})
		if err != nil {
			t.Fatal(err)
		}
		keep, _, err := a.srv.Relay.CreateDevice(context.Background(), relay.NewDevice{Name: "work", Role: protocol.RoleViewer})
		if err != nil {
			t.Fatal(err)
		}
		pixel := relaytest.Dial(t, bb.srv.URL+"?client=web", token)
		other := relaytest.Dial(t, bb.srv.URL+"?client=web", keep)
		sync_(t, pixel)
		sync_(t, other)

		if err := a.srv.Relay.RevokeDevice(context.Background(), "Pixel"); err != nil {
			t.Fatal(err)
		}
		if code, reason := pixel.WaitClosed(); code != relay.CloseRevoked || reason != "token revoked" {
			t.Fatalf("B closed the revoked device's connection with %d %q, want 4003 \"token revoked\"", code, reason)
		}
		expectQuiet(t, other) // another device's connection stays open
		if got := upgradeStatus(t, bb.srv.URL, token); got != 401 {
			t.Fatalf("the revoked token's upgrade on B: %d", got)
		}
	})
}

// A set_mode sent to relay B for a conversation relay A owns names the
// device that sent it, on every relay: copilot:mode_changed's changedBy is
// B's device, for A's clients and for B's.
func TestClusterModeChangedBy(t *testing.T) {
	parallel(t)
	eachBackend(t, func(t *testing.T, b testBackend) {
		s := clusterScript(t)
		withToken := func(c *relay.Config) { c.Token = ownToken }
		a := b.relayConfig(t, 0, script.New(s), withToken)
		bb := b.relayConfig(t, 1, script.New(s), withToken)
		token, _, err := a.srv.Relay.CreateDevice(context.Background(), relay.NewDevice{Name: "zebra-phone", Role: protocol.RoleController})
		if err != nil {
			t.Fatal(err)
		}
		ca := relaytest.Dial(t, a.srv.URL+"?client=window", ownToken)
		id := "mode-by-" + b.name
		runTurn(t, ca, id, "hello") // A owns it

		phone := relaytest.Dial(t, bb.srv.URL+"?client=web", token)
		phone.Send(protocol.TypeSubscribe, map[string]any{"conversationId": id})
		phone.WaitFor(protocol.TypeSubscribed, nil)
		phone.Send(protocol.TypeSetMode, map[string]any{"conversationId": id, "mode": "plan"})
		for name, cl := range map[string]*relaytest.Client{"A's window": ca, "B's phone": phone} {
			var mc protocol.ModeChanged
			cl.WaitFor(protocol.TypeModeChanged, nil).Decode(t, &mc)
			if mc.Mode != protocol.ModePlan || mc.ChangedBy == nil || *mc.ChangedBy != (protocol.By{Device: "zebra-phone", Client: protocol.ClientWeb}) {
				t.Fatalf("%s got mode_changed %+v (changedBy %v), want plan by zebra-phone (web)", name, mc, mc.ChangedBy)
			}
		}

		// The relay's own device is named by nobody, forwarded or not.
		own := relaytest.Dial(t, bb.srv.URL+"?client=terminal", ownToken)
		own.Send(protocol.TypeSubscribe, map[string]any{"conversationId": id})
		own.WaitFor(protocol.TypeSubscribed, nil)
		own.Send(protocol.TypeSetMode, map[string]any{"conversationId": id, "mode": "act"})
		var mc protocol.ModeChanged
		ca.WaitFor(protocol.TypeModeChanged, nil).Decode(t, &mc)
		if mc.Mode != protocol.ModeAct || mc.ChangedBy != nil {
			t.Fatalf("A's window got mode_changed %+v (changedBy %v), want act by nobody named", mc, mc.ChangedBy)
		}
	})
}
