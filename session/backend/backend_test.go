package backend

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestLimitsWithDefaults: zero or negative limits take the defaults, the
// start one the backend's; limits set stay.
func TestLimitsWithDefaults(t *testing.T) {
	got := Limits{StopGrace: -1}.WithDefaults(time.Minute)
	want := Limits{StartTimeout: time.Minute, StopGrace: 5 * time.Second, AbortTimeout: 10 * time.Second, CloseTimeout: 10 * time.Second}
	if got != want {
		t.Errorf("defaults: %+v, want %+v", got, want)
	}
	set := Limits{StartTimeout: 1, StopGrace: 2, AbortTimeout: 3, CloseTimeout: 4}
	if got := set.WithDefaults(time.Minute); got != set {
		t.Errorf("limits set: %+v, want them kept: %+v", got, set)
	}
}

// TestCloseContext: a context without a deadline gets CloseTimeout; one
// with its own keeps it.
func TestCloseContext(t *testing.T) {
	l := Limits{CloseTimeout: time.Hour}
	ctx, cancel := l.CloseContext(context.Background())
	defer cancel()
	if d, ok := ctx.Deadline(); !ok || time.Until(d) > time.Hour || time.Until(d) < 59*time.Minute {
		t.Errorf("deadline %v, %v: want in an hour", d, ok)
	}
	own, cancelOwn := context.WithTimeout(context.Background(), time.Minute)
	defer cancelOwn()
	ctx, cancel = l.CloseContext(own)
	defer cancel()
	if ctx != own {
		t.Error("a context with a deadline of its own was replaced")
	}
}

// TestTurnErr: the turn's own end wins over the error it caused.
func TestTurnErr(t *testing.T) {
	failed := errors.New("the agent did not start")
	if err := TurnErr(context.Background(), failed); err != failed {
		t.Errorf("TurnErr with a live context = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := TurnErr(ctx, failed); !errors.Is(err, context.Canceled) {
		t.Errorf("TurnErr with a cancelled context = %v", err)
	}
}

// TestTurns: turns run one at a time; TryBegin does not wait for one; after
// Close no turn begins, and only the first Close reports it closed.
func TestTurns(t *testing.T) {
	var turns Turns
	errClosed := errors.New("closed")
	end, err := turns.Begin(errClosed)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := turns.TryBegin(); ok {
		t.Fatal("TryBegin began while a turn ran")
	}
	second := make(chan error, 1)
	go func() {
		end, err := turns.Begin(errClosed)
		if err == nil {
			end()
		}
		second <- err
	}()
	select {
	case err := <-second:
		t.Fatalf("a second turn began while the first ran: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	end()
	if err := <-second; err != nil {
		t.Fatalf("the second turn after the first: %v", err)
	}
	endTry, ok := turns.TryBegin()
	if !ok {
		t.Fatal("TryBegin failed with no turn running")
	}
	endTry()
	if !turns.Close() || turns.Close() || !turns.Closed() {
		t.Fatal("Close reports the first close, and only it")
	}
	if _, err := turns.Begin(errClosed); err != errClosed {
		t.Fatalf("Begin after Close = %v", err)
	}
}

// closing is a session whose Close says it started and then waits for
// release, failing with err.
type closing struct {
	started chan<- struct{}
	release <-chan struct{}
	err     error
}

func (c *closing) Close(context.Context) error {
	c.started <- struct{}{}
	<-c.release
	return c.err
}

// TestCloseAll: the sessions close at once (all three are in Close before
// any returns: one after another would never get there), CloseAll waits
// for every one, and failed hears the one that failed, once.
func TestCloseAll(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	bad := &closing{started: started, release: release, err: errors.New("boom")}
	sessions := []*closing{{started: started, release: release}, bad, {started: started, release: release}}
	var failed []*closing
	done := make(chan struct{})
	go func() {
		defer close(done)
		CloseAll(sessions, func(s *closing, err error) {
			if err != bad.err {
				t.Errorf("failed heard %v, want %v", err, bad.err)
			}
			failed = append(failed, s)
		})
	}()
	for i := range sessions {
		select {
		case <-started:
		case <-time.After(30 * time.Second):
			t.Fatalf("only %d of %d sessions were closing at once", i, len(sessions))
		}
	}
	select {
	case <-done:
		t.Fatal("CloseAll returned before its sessions closed")
	default:
	}
	close(release)
	<-done
	if len(failed) != 1 || failed[0] != bad {
		t.Errorf("failed heard %v, want the failing session once", failed)
	}
}
