package history

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"
)

// Memory is a Store that keeps everything in memory: a relay without a data
// dir, and tests.
type Memory struct {
	epoch string

	mu     sync.RWMutex // guards convs, events, spend
	convs  map[string]Conversation
	events map[string][]Event // per conversation, in seq order
	spend  []Spend            // the ledger (spend.go): one entry per UTC hour, oldest first

	devMu   sync.Mutex         // guards devices, pushes, vapid
	devices []Device           // devices.go
	pushes  []PushSubscription // push.go
	vapid   *VAPIDPair         // push.go; nil: none kept yet
}

// NewMemory returns an empty in-memory store with a fresh epoch.
func NewMemory() *Memory {
	return &Memory{epoch: NewEpoch(), convs: map[string]Conversation{}, events: map[string][]Event{}}
}

// NewEpoch returns a random epoch name.
func NewEpoch() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (m *Memory) Epoch() string { return m.epoch }

func (m *Memory) Conversations(ctx context.Context) ([]Conversation, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]Conversation, 0, len(m.convs))
	for _, c := range m.convs {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UpdatedAt.After(out[j].UpdatedAt) })
	return out, nil
}

func (m *Memory) Conversation(ctx context.Context, id string) (Conversation, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	c, ok := m.convs[id]
	if !ok {
		return Conversation{}, ErrNotFound
	}
	return c, nil
}

func (m *Memory) Write(ctx context.Context, b Batch) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	// Check the whole batch before changing anything: a batch is applied
	// entirely or not at all, as it is by a database transaction.
	inBatch := make(map[string]bool, len(b.Conversations))
	for _, c := range b.Conversations {
		inBatch[c.ID] = true
	}
	// batchMax is the highest seq so far in this batch per conversation:
	// an event above it (the usual case) cannot repeat one of the batch.
	batchMax := make(map[string]int64, len(b.Conversations)+1)
	for i, e := range b.Events {
		if _, stored := m.convs[e.ConversationID]; !stored && !inBatch[e.ConversationID] {
			return fmt.Errorf("history: write event %d of conversation %q: %w", e.Seq, e.ConversationID, ErrNotFound)
		}
		repeated := false
		if _, found := m.findLocked(e.ConversationID, e.Seq); found {
			repeated = true
		} else if top, ok := batchMax[e.ConversationID]; ok && e.Seq <= top {
			repeated = slices.ContainsFunc(b.Events[:i], func(o Event) bool {
				return o.ConversationID == e.ConversationID && o.Seq == e.Seq
			})
		}
		if repeated {
			return fmt.Errorf("history: write event %d of conversation %q: the seq is already stored", e.Seq, e.ConversationID)
		}
		if top, ok := batchMax[e.ConversationID]; !ok || e.Seq > top {
			batchMax[e.ConversationID] = e.Seq
		}
	}
	for _, e := range b.Events {
		evs := m.events[e.ConversationID]
		if n := len(evs); n == 0 || evs[n-1].Seq < e.Seq {
			m.events[e.ConversationID] = append(evs, e) // the usual case: the next seq
			continue
		}
		// Out of order: insert into a new array (Clip makes Insert
		// allocate), because Events may be handing the old one to its fn.
		i, _ := m.findLocked(e.ConversationID, e.Seq)
		m.events[e.ConversationID] = slices.Insert(slices.Clip(evs), i, e)
	}
	for _, c := range b.Conversations {
		m.convs[c.ID] = c
	}
	for _, sp := range b.Spend {
		m.spend = AddSpend(m.spend, sp)
	}
	return nil
}

// findLocked returns where seq is, or would be, in the conversation's
// events.
// The caller holds m.mu.
func (m *Memory) findLocked(conversationID string, seq int64) (int, bool) {
	return slices.BinarySearchFunc(m.events[conversationID], seq, func(e Event, seq int64) int { return cmp.Compare(e.Seq, seq) })
}

func (m *Memory) Events(ctx context.Context, conversationID string, since int64, fn func(Event) error) error {
	m.mu.RLock()
	evs := m.events[conversationID]
	i, _ := m.findLocked(conversationID, since+1)
	// Capped so that later appends never touch our view; Write never
	// changes elements in place (an out-of-order insert copies).
	evs = evs[i:len(evs):len(evs)]
	m.mu.RUnlock()
	for _, e := range evs {
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}

func (m *Memory) Delete(ctx context.Context, conversationID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.convs, conversationID)
	delete(m.events, conversationID)
	return nil
}

// DeleteOlderThan removes the conversations last updated before cutoff, and
// their events (--history-max-age), and returns how many it removed.
func (m *Memory) DeleteOlderThan(ctx context.Context, cutoff time.Time) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for id, c := range m.convs {
		if c.UpdatedAt.Before(cutoff) {
			delete(m.convs, id)
			delete(m.events, id)
			n++
		}
	}
	return n, nil
}

func (m *Memory) Close() error { return nil }
