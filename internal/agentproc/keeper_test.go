package agentproc

import (
	"context"
	"errors"
	"testing"
)

var errKeeperClosed = errors.New("closed")

// keeperOf is a keeper of helper agents in mode "echo" (they run until
// their stdin closes), recording what each start was given.
type keeperOf struct {
	*Keeper[*agent]
	previous []*agent // the previous process each start was given
	started  []*agent
	// hold, when set, is waited for inside a start (a slow agent).
	hold chan struct{}
	in   chan struct{} // signalled when a start has begun, with hold set
}

func newKeeperOf(t *testing.T) *keeperOf {
	k := &keeperOf{}
	k.Keeper = NewKeeper(func(ctx context.Context, previous *agent) (*agent, error) {
		if k.hold != nil {
			k.in <- struct{}{}
			<-k.hold
		}
		k.previous = append(k.previous, previous)
		a := start(t, "echo", nil, nil)
		k.started = append(k.started, a)
		return a, nil
	}, errKeeperClosed)
	return k
}

func (a *agent) Agent() *Process { return a.Process }

// TestKeeperRestarts: Get starts the agent once and returns it while it
// runs; after it died the next Get starts another and tells the start which
// one died.
func TestKeeperRestarts(t *testing.T) {
	k := newKeeperOf(t)
	if cur := k.Current(); cur != nil {
		t.Fatalf("Current before the first Get = %v", cur)
	}
	first, err := k.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	again, err := k.Get(context.Background())
	if err != nil || again != first || len(k.started) != 1 || k.previous[0] != nil {
		t.Fatalf("a second Get while the agent runs: %v, %v; %d starts (previous %v)", again, err, len(k.started), k.previous)
	}
	first.Stop() // dies
	second, err := k.Get(context.Background())
	if err != nil || second == first || len(k.started) != 2 || k.previous[1] != first {
		t.Fatalf("Get after the agent died: same %v, %v; %d starts, previous %v", second == first, err, len(k.started), k.previous)
	}
	if k.Current() != second {
		t.Error("Current is not the restarted agent")
	}
}

// TestKeeperClose: after Close, Get fails and starts nothing; Stop stops
// the agent, once.
func TestKeeperClose(t *testing.T) {
	k := newKeeperOf(t)
	a, err := k.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !k.Close() || k.Close() || !k.Closed() {
		t.Fatal("Close reports the first close, and only it")
	}
	if _, err := k.Get(context.Background()); !errors.Is(err, errKeeperClosed) || len(k.started) != 1 {
		t.Fatalf("Get after Close = %v (%d starts), want the closed error and no start", err, len(k.started))
	}
	if a.Stopped() {
		t.Fatal("Close stopped the agent: the sessions are closed in it first")
	}
	if !k.Stop() || !a.Stopped() {
		t.Fatal("Stop did not stop the agent")
	}
	if k.Stop() {
		t.Error("a second Stop found an agent to stop")
	}
}

// TestKeeperStartDuringClose: an agent whose start was under way when the
// keeper closed is stopped, and Get says closed; Stop waits for that start.
func TestKeeperStartDuringClose(t *testing.T) {
	k := newKeeperOf(t)
	k.hold, k.in = make(chan struct{}), make(chan struct{})
	got := make(chan error, 1)
	go func() {
		_, err := k.Get(context.Background())
		got <- err
	}()
	<-k.in // the start is under way
	k.Close()
	stopped := make(chan bool, 1)
	go func() { stopped <- k.Stop() }()
	close(k.hold)
	if err := <-got; !errors.Is(err, errKeeperClosed) {
		t.Fatalf("Get whose start ended after Close = %v, want the closed error", err)
	}
	if len(k.started) != 1 || !k.started[0].Stopped() {
		t.Fatal("the agent started during Close was not stopped")
	}
	if <-stopped {
		t.Error("Stop found an agent although the one started late was never kept")
	}
}
