// Package history is where the relay keeps conversations and their events.
// The relay writes every conversation event here before it sends the event
// to any client, so that a client that reconnects (or a relay that restarts)
// can replay exactly what was sent.
//
// Two implementations: Memory (tests, and a relay run without a data dir)
// and the SQLite store in history/sqlite.
package history

import (
	"context"
	"errors"
	"time"
)

// Event is one conversation event as it was sent: Frame is the whole encoded
// frame, {"type":…,"data":{…,"conversationId":…,"seq":…}}.
type Event struct {
	ConversationID string
	Seq            int64
	Type           string
	Frame          []byte
}

// Conversation is what the relay keeps about a conversation besides its
// events.
type Conversation struct {
	ID        string
	Title     string // from the first prompt
	Mode      string // "plan" or "act"
	CreatedAt time.Time
	UpdatedAt time.Time
	LastSeq   int64 // seq of the conversation's latest event
	// Streaming is true while a turn runs. A conversation found streaming at
	// start was interrupted by a crash: the relay closes its turn.
	Streaming bool
	// PendingInput is the encoded copilot:user_input_request data of the
	// question open now, if any, so a restart can close it.
	PendingInput []byte
	// Model is the model the conversation's agent session uses.
	Model string
}

// Batch is written in one transaction: the events and the new state of the
// conversations they touch.
type Batch struct {
	Events        []Event
	Conversations []Conversation
}

// Store keeps conversations. Its methods are safe for concurrent use.
type Store interface {
	// Epoch names this store's history; it is created with the store and
	// never changes (docs/protocol.md, Conversations, seq and epoch).
	Epoch() string
	// Conversations lists every conversation, most recently updated first.
	Conversations(ctx context.Context) ([]Conversation, error)
	// Conversation returns one conversation, or ErrNotFound.
	Conversation(ctx context.Context, id string) (Conversation, error)
	// Write commits a batch durably before it returns. Every event's
	// conversation must be in the batch or already stored, and no event may
	// repeat a (conversation, seq) that is stored or earlier in the batch;
	// otherwise Write returns an error and writes nothing of the batch.
	Write(ctx context.Context, b Batch) error
	// Events calls fn for each event of the conversation with Seq > since, in
	// seq order, until fn returns an error (which Events returns).
	Events(ctx context.Context, conversationID string, since int64, fn func(Event) error) error
	// Delete removes a conversation and its events. Deleting an unknown
	// conversation is not an error.
	Delete(ctx context.Context, conversationID string) error
	// Close releases the store.
	Close() error
}

// ErrNotFound is returned for an unknown conversation.
var ErrNotFound = errors.New("conversation not found")
