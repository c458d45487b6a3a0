package history_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

var errNobody = errors.New("nobody listens")

func nobody(err error) bool { return errors.Is(err, errNobody) }

// A forward waiting for an owner whose lease lapses stops at once, with
// an error the sender routes again on, not at its timeout.
func TestForwardStopsWhenTheLeaseLapses(t *testing.T) {
	var lapses history.Lapses
	lapse := lapses.Of("a")
	if lapses.Of("a") != lapse {
		t.Fatal("Of gave relay a two channels: a lapse would reach only one forward")
	}
	sending := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := history.ForwardUntilLapse(context.Background(), lapse, time.Hour, func(ctx context.Context) ([]byte, error) {
			close(sending)
			<-ctx.Done()
			return nil, ctx.Err()
		}, nobody)
		done <- err
	}()
	<-sending
	lapses.Lapsed("b") // another relay's lapse changes nothing
	select {
	case err := <-done:
		t.Fatalf("the forward ended with another relay's lapse: %v", err)
	default:
	}
	lapses.Lapsed("a")
	select {
	case err := <-done:
		if !errors.Is(err, history.ErrUnreachable) || !errors.Is(err, history.ErrLeaseLapsed) {
			t.Fatalf("err %v, want ErrUnreachable and ErrLeaseLapsed", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the forward went on waiting after its owner's lease lapsed")
	}
	if lapses.Of("a") == lapse {
		t.Fatal("a lapsed relay's channel is kept: a later forward to it would stop at once")
	}
}

// A relay nobody answers for is asked again; an owner that is stopping
// (ErrNotOwner) is unreachable; any other error is returned as it is.
func TestForwardAsksAgain(t *testing.T) {
	tries := 0
	reply, err := history.ForwardUntilLapse(context.Background(), nil, time.Minute, func(context.Context) ([]byte, error) {
		if tries++; tries < 3 {
			return nil, errNobody
		}
		return []byte("ok"), nil
	}, nobody)
	if err != nil || string(reply) != "ok" || tries != 3 {
		t.Fatalf("reply %q, err %v after %d tries; want ok after 3", reply, err, tries)
	}

	tries = 0
	_, err = history.ForwardUntilLapse(context.Background(), nil, time.Minute, func(context.Context) ([]byte, error) {
		tries++
		return nil, errNobody
	}, nobody)
	if !errors.Is(err, history.ErrUnreachable) || !errors.Is(err, errNobody) || tries != 8 {
		t.Fatalf("err %v after %d tries; want ErrUnreachable after 8", err, tries)
	}

	_, err = history.ForwardUntilLapse(context.Background(), nil, time.Minute, func(context.Context) ([]byte, error) {
		return nil, history.ErrNotOwner
	}, nobody)
	if !errors.Is(err, history.ErrUnreachable) || !errors.Is(err, history.ErrNotOwner) {
		t.Fatalf("err %v, want ErrUnreachable and ErrNotOwner", err)
	}

	other := errors.New("bad subject")
	tries = 0
	_, err = history.ForwardUntilLapse(context.Background(), nil, time.Minute, func(context.Context) ([]byte, error) {
		tries++
		return nil, other
	}, nobody)
	if !errors.Is(err, other) || errors.Is(err, history.ErrUnreachable) || tries != 1 {
		t.Fatalf("err %v after %d tries; want bad subject, once, not unreachable", err, tries)
	}
}
