package relay

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/history/memcluster"
	"github.com/pilotdesk/pilotdesk/session"
)

// slowStopAgent's turns stream a delta, then, once cancelled, stop only
// when release is closed: a turn on a machine so loaded that its goroutine
// runs again long after its context was cancelled.
type slowStopAgent struct {
	running chan struct{} // a turn streamed its delta
	release chan struct{} // cancelled turns may return
}

// newSlowStopRelay starts a relay of cfg (its agent and work folder set
// here) whose agent is a slowStopAgent, and returns release, which lets
// the agent's cancelled turns return (once; the test's end calls it too).
func newSlowStopRelay(t *testing.T, cfg Config) (*Relay, *slowStopAgent, func()) {
	t.Helper()
	agent := &slowStopAgent{running: make(chan struct{}, 1), release: make(chan struct{})}
	cfg.Agent, cfg.WorkDir = agent, t.TempDir()
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release := func() { once.Do(func() { close(agent.release) }) }
	t.Cleanup(func() {
		release()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = r.Close(ctx)
	})
	return r, agent, release
}

func (*slowStopAgent) Name() string { return "slow-stop" }
func (*slowStopAgent) Close() error { return nil }
func (a *slowStopAgent) Open(_ context.Context, _ string, _ session.OpenOptions, h session.Host) (session.Session, error) {
	return &slowStopSession{a: a, h: h}, nil
}

type slowStopSession struct {
	a *slowStopAgent
	h session.Host
}

func (s *slowStopSession) Run(ctx context.Context, _ session.Turn) error {
	s.h.Emit(session.Delta{MessageID: "m1", Content: "partial "})
	s.a.running <- struct{}{}
	<-ctx.Done()
	<-s.a.release
	return ctx.Err()
}

func (*slowStopSession) Close(context.Context) error { return nil }

// TestClusterLostTurnEndsBeforeTakeBack: a relay stalled past its lease
// loses its conversations and cancels their turns; before a turn's
// goroutine has run again, the relay, announced again, takes the
// conversation back (its own from before the lapse) and closes the turn
// as a lost relay's. The lost turn, ending after that, must not emit its
// idle (status aborted) into the conversation the relay owns again: the
// clients would read a second end of a turn that had been closed, in the
// middle of the next one. Seen in make test's TestChaos/relay-stop at a
// load average of 20 ("seq 106: a turn was aborted ()").
func TestClusterLostTurnEndsBeforeTakeBack(t *testing.T) {
	const id = "lost-turn"
	net := memcluster.New()
	st := net.NewStore()
	// A lease that does not lapse in the test: the lapse is told by hand.
	cl := net.NewCluster(st, memcluster.Options{Lease: time.Hour})
	r, agent, release := newSlowStopRelay(t, Config{Store: st, Cluster: cl})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	if owner, err := r.routeCommand(ctx, id); err != nil || owner != "" {
		t.Fatalf("routeCommand: owner %q, err %v; want this relay's", owner, err)
	}
	if e := r.startSend(ctx, &protocol.Send{ConversationID: id, Prompt: "go"}, &protocol.By{Device: "test", Client: "test"}, nil); e != nil {
		t.Fatalf("send: %s", e.Message)
	}
	select {
	case <-agent.running:
	case <-ctx.Done():
		t.Fatal("the turn never streamed")
	}
	if !r.commit.sync(ctx) {
		t.Fatal("the turn's start was not stored")
	}
	conv := r.lookupConversation(id)
	conv.mu.Lock()
	lost := conv.turn
	conv.mu.Unlock()

	clusterHooks{r}.LeaseLost(true)
	routed := make(chan error, 1)
	go func() {
		_, err := r.routeCommand(ctx, id)
		routed <- err
	}()
	select {
	case err := <-routed:
		// Taken back while the lost turn still runs: it ends now.
		release()
		if err != nil {
			t.Fatalf("taking the conversation back: %v", err)
		}
	case <-time.After(time.Second):
		release()
		if err := <-routed; err != nil {
			t.Fatalf("taking the conversation back: %v", err)
		}
	}
	select {
	case <-lost.done:
	case <-ctx.Done():
		t.Fatal("the lost turn never ended")
	}
	if !r.commit.sync(ctx) {
		t.Fatal("the takeover's events were not stored")
	}

	var idles []string
	var types []string
	if err := st.Events(ctx, id, 0, func(e history.Event) error {
		types = append(types, e.Type)
		if e.Type == protocol.TypeIdle {
			var f struct {
				Data protocol.Idle `json:"data"`
			}
			if err := json.Unmarshal(e.Frame, &f); err != nil {
				return err
			}
			idles = append(idles, f.Data.Status+" "+f.Data.Message)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(idles) != 1 || types[len(types)-1] != protocol.TypeIdle {
		t.Fatalf("stored %v with idles %q; want the turn closed once, by the takeover", types, idles)
	}
	if !strings.HasPrefix(idles[0], "error relay lost") {
		t.Fatalf("the turn was closed %q, want as a lost relay's", idles[0])
	}
}
