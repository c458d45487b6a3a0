package relay_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// partialStore is a memory store that, like the JetStream store, commits
// each conversation of a batch on its own: while a conversation is
// refused, its part of every Write fails (history.PartialWriteError) and
// the other conversations' parts are stored.
type partialStore struct {
	*history.Memory

	mu      sync.Mutex
	refused string
	hold    chan struct{}
	mixed   int // Writes that failed the refused conversation and stored another
}

func (s *partialStore) Write(ctx context.Context, b history.Batch) error {
	s.mu.Lock()
	hold := s.hold
	s.mu.Unlock()
	if hold != nil {
		<-hold
	}
	// Read after the hold: the held Write may have taken every queued
	// conversation's events, and the test refuses one before it releases.
	s.mu.Lock()
	refused := s.refused
	s.mu.Unlock()
	if refused == "" {
		return s.Memory.Write(ctx, b)
	}
	var kept history.Batch
	failed := false
	for _, e := range b.Events {
		if e.ConversationID == refused {
			failed = true
		} else {
			kept.Events = append(kept.Events, e)
		}
	}
	for _, c := range b.Conversations {
		if c.ID == refused {
			failed = true
		} else {
			kept.Conversations = append(kept.Conversations, c)
		}
	}
	if err := s.Memory.Write(ctx, kept); err != nil {
		return err
	}
	if failed {
		if len(kept.Events) > 0 {
			s.mu.Lock()
			s.mixed++
			s.mu.Unlock()
		}
		return &history.PartialWriteError{Failed: map[string]error{refused: fmt.Errorf("append to %q: %w", refused, history.ErrConflict)}}
	}
	return nil
}

// A write that fails one conversation of its batch and stores the others
// (the JetStream store's per-conversation outcomes) fails that conversation
// alone: its turn ends with copilot:error naming its own reason, and the
// other conversation of the same batch gets its events.
func TestPartialWriteFailsOneConversation(t *testing.T) {
	st := &partialStore{Memory: history.NewMemory()}
	e := startFull(t, st)
	bad, _ := e.subscribe("bad")
	good, _ := e.subscribe("good")
	warm, _ := e.subscribe("warm")
	badTurn := e.startTurn(bad, "bad", "go", nil)    // seq 1
	goodTurn := e.startTurn(good, "good", "go", nil) // seq 1
	warmTurn := e.startTurn(warm, "warm", "go", nil) // seq 1
	sync_(t, bad)
	sync_(t, good)
	sync_(t, warm)

	// A write of another conversation is held, so that both deltas queue
	// behind it and go in the next Write together.
	hold := make(chan struct{})
	st.mu.Lock()
	st.hold = hold
	st.mu.Unlock()
	warmTurn.delta("m", "held ")
	badTurn.delta("m", "refused ")
	goodTurn.delta("m", "stored ")
	st.mu.Lock()
	st.hold, st.refused = nil, "bad"
	st.mu.Unlock()
	close(hold)
	warm.Expect("copilot:delta")

	ef := bad.Expect("copilot:error")
	msg, _ := ef.Field("message").(string)
	if ef.Seq() != 2 || !strings.Contains(msg, "another writer appended") || strings.Contains(msg, "good") {
		t.Fatalf("the refused conversation's error: %s; want seq 2 and its own reason", ef.Raw)
	}
	d := good.Expect("copilot:delta")
	if d.Seq() != 2 || d.Field("content") != "stored " {
		t.Fatalf("the other conversation: %s", d.Raw)
	}
	if stored := storedFrames(t, st, "good"); len(stored) != 2 {
		t.Fatalf("good: %d events stored, want 2", len(stored))
	}
	st.mu.Lock()
	mixed := st.mixed
	st.mu.Unlock()
	if mixed == 0 {
		t.Fatal("no Write held both conversations: the test did not exercise a partial write")
	}
	// The other turn goes on.
	goodTurn.delta("m", "more")
	if d := good.Expect("copilot:delta"); d.Seq() != 3 {
		t.Fatalf("the other conversation after the failure: %s", d.Raw)
	}
	goodTurn.finish(nil)
	good.Expect("copilot:idle")

	// Once the store takes it again, the refused conversation's closing
	// events are stored and it works again.
	st.mu.Lock()
	st.refused = ""
	st.mu.Unlock()
	idle := bad.Expect("copilot:idle")
	if idle.Field("status") != "error" {
		t.Fatalf("the refused turn ended with %s", idle.Raw)
	}
	e.logs.waitLog(t, "the history store writes again")
}
