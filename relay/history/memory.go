package history

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"sort"
	"sync"
)

// Memory is a Store that keeps everything in memory: a relay without a data
// dir, and tests.
type Memory struct {
	epoch string

	mu     sync.RWMutex
	convs  map[string]Conversation
	events map[string][]Event // per conversation, in seq order
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
	for _, e := range b.Events {
		m.events[e.ConversationID] = append(m.events[e.ConversationID], e)
	}
	for _, c := range b.Conversations {
		m.convs[c.ID] = c
	}
	return nil
}

func (m *Memory) Events(ctx context.Context, conversationID string, since int64, fn func(Event) error) error {
	m.mu.RLock()
	evs := m.events[conversationID]
	i, _ := slices.BinarySearchFunc(evs, since+1, func(e Event, seq int64) int { return int(e.Seq - seq) })
	evs = evs[i:len(evs):len(evs)] // appends after this point never touch our view
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

func (m *Memory) Close() error { return nil }
