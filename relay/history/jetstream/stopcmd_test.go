package jetstream

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/history/jetstream/natstest"
)

// TestClusterForwardToStoppingRelay: commands forwarded to a relay as it
// stops (running, waiting for a slot, queued in its subscription) must
// each get an answer soon, or an error the sender routes again on
// (history.ErrUnreachable): never silence that keeps the sender waiting
// forwardTimeout and ends in a deadline error.
func TestClusterForwardToStoppingRelay(t *testing.T) {
	t.Parallel()
	c := natstest.Start(t, 3)
	nc := clusterConn(t, c, 0)
	resetDefault(t, nc)
	start := func(i int, h history.ClusterHooks) *Cluster {
		return startCluster(t, openR3(t, clusterConn(t, c, i), Options{}), ClusterOptions{}, h)
	}
	h := &blockingHooks{release: make(chan struct{})}
	owner := start(0, h)
	sender := start(1, quietHooks{})

	// Every slot taken, one command waiting for a slot, more queued.
	const n = maxForwarded + 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { _, errs[i] = sender.Forward(context.Background(), owner.ID(), []byte("{}")) })
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		h.mu.Lock()
		running := h.running
		h.mu.Unlock()
		if running >= maxForwarded {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d forwarded commands started", running)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // the rest reach the owner's queue

	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := owner.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if took := time.Since(began); took > forwardTimeout/2 {
		t.Errorf("the forwarded commands took %v to end after the owner stopped (forwardTimeout is %v)", took.Round(time.Millisecond), forwardTimeout)
	}
	refused := 0
	for i, err := range errs {
		if err == nil {
			continue
		}
		if !errors.Is(err, history.ErrUnreachable) {
			t.Errorf("command %d: %v, want an error that routes again (ErrUnreachable)", i, err)
		}
		refused++
	}
	if refused == 0 {
		t.Error("every command was answered: none was left waiting as the owner stopped, so the test shows nothing")
	}
	// Stopped: a sender finds nobody, at once.
	began = time.Now()
	_, err := sender.Forward(context.Background(), owner.ID(), []byte("{}"))
	if !errors.Is(err, history.ErrUnreachable) {
		t.Errorf("forward to a stopped relay: %v, want ErrUnreachable", err)
	}
	if took := time.Since(began); took > forwardTimeout/2 {
		t.Errorf("forward to a stopped relay took %v", took)
	}
}

// TestClusterForwardStopsWhenTheLeaseLapses: a command forwarded to a
// relay that seems to listen but never answers (hung, or dead while the
// cluster still routes to its subscription) ends when the watcher sees
// that relay's lease lapse, as unreachable, so that the sender takes the
// conversation over; not after forwardTimeout with a deadline error.
func TestClusterForwardStopsWhenTheLeaseLapses(t *testing.T) {
	t.Parallel()
	c := natstest.Start(t, 3)
	nc := clusterConn(t, c, 0)
	resetDefault(t, nc)
	st := openR3(t, clusterConn(t, c, 1), Options{})
	sender := startCluster(t, st, ClusterOptions{}, quietHooks{})

	// The hung relay: a lease, and a command subscription that never
	// answers.
	const hung = "hung-relay"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := sender.relays.Put(ctx, hung, []byte(`{"at":"2026-11-24T00:00:00Z","changes":true}`)); err != nil {
		t.Fatal(err)
	}
	sub, err := clusterConn(t, c, 2).SubscribeSync(sender.cmdSubject(hung))
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()

	done := make(chan error, 1)
	go func() {
		_, err := sender.Forward(context.Background(), hung, []byte("{}"))
		done <- err
	}()
	if _, err := sub.NextMsg(5 * time.Second); err != nil {
		t.Fatalf("the command did not reach the hung relay: %v", err)
	}
	if err := sender.relays.Delete(ctx, hung); err != nil { // its lease lapses
		t.Fatal(err)
	}
	err = <-done
	if !errors.Is(err, history.ErrUnreachable) || !errors.Is(err, history.ErrLeaseLapsed) {
		t.Fatalf("Forward = %v, want unreachable because the lease lapsed", err)
	}

	// A forward to a relay whose lease is gone already is refused at once.
	if _, err := sender.Forward(context.Background(), hung, []byte("{}")); !errors.Is(err, history.ErrLeaseLapsed) {
		t.Fatalf("Forward to a lapsed relay = %v, want its lease lapsed", err)
	}
}
