// Package history is where the relay keeps conversations and their events.
// The relay writes every conversation event here before it sends the event
// to any client, so that a client that reconnects (or a relay that restarts)
// can replay exactly what was sent.
//
// Three implementations: Memory (tests, and a relay run without a data
// dir), the SQLite store in history/sqlite, and the NATS JetStream store in
// history/jetstream.
package history

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
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
	// Agent names, for people, the agent that ran the conversation's
	// latest turn, as it was when the turn started ("" before the first
	// turn, and in history stored before it was recorded).
	Agent string
	// Workspace is where the conversation's agent works, fixed by its
	// first send (the zero Workspace before it, and in history stored
	// before workspaces were recorded).
	Workspace Workspace
}

// Workspace is a conversation's folder (docs/protocol.md, Workspaces):
// Path as the user chose it, Isolation "none" or "worktree", Dir where the
// agent runs; for a worktree its Branch, Base (the commit it started
// from) and Worktree, the worktree's top folder (Dir is Worktree or a
// folder inside it).
type Workspace struct {
	Path      string `json:"path"`
	Isolation string `json:"isolation,omitempty"`
	Dir       string `json:"dir"`
	Branch    string `json:"branch,omitempty"`
	Base      string `json:"base,omitempty"`
	Worktree  string `json:"worktree,omitempty"`
	// Ignored: the worktree held files its .gitignore ignores at the end
	// of the last turn (protocol.Workspace.Ignored).
	Ignored bool `json:"ignored,omitempty"`
}

// IsZero reports whether no workspace is fixed.
func (w Workspace) IsZero() bool { return w == (Workspace{}) }

// Batch is written in one transaction: the events and the new state of the
// conversations they touch.
type Batch struct {
	Events        []Event
	Conversations []Conversation
	// Spend is AI credits spent, which a Ledger keeps with the events
	// (spend.go); other stores ignore it.
	Spend []Spend
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
	// (A store shared by several writers, where another may have stored
	// the seq, fails only that conversation, with ErrConflict, as below.)
	//
	// A failure of the storage itself (not of the batch) may, in a store
	// that commits each conversation on its own, fail some conversations
	// and store the others: Write then returns a *PartialWriteError that
	// names the failed ones. Each conversation is still written entirely or
	// not at all, but a store over a network may not know which: a write
	// whose answer was lost fails, and if its part was stored after all, the
	// conversation's next Write fails with ErrConflict (nothing stored is
	// ever taken back: it may have been delivered), and the writer takes
	// what is stored instead of handing its seqs out again.
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

// ErrConflict says that another writer appended to the conversation since
// this store last saw it, or that an earlier failed Write of this store
// was stored after all, so the write was refused: a store shared by
// several relays (JetStream) fences every writer but the one that appended
// last. It comes wrapped, in a PartialWriteError.
var ErrConflict = errors.New("another writer appended to the conversation")

// ErrOwnAppendStored comes with ErrConflict when what moved the
// conversation on is this store's own append whose Write failed, its
// outcome unknown, and which was stored after all: no other writer was
// involved.
var ErrOwnAppendStored = errors.New("an append whose Write failed was stored after all")

// ErrLeaseLost says that a store shared by several relays refused to
// append because this relay could not confirm that its lease still held
// (history.Cluster): another relay may own the conversation by now, so it
// appends nothing it had queued, and it no longer owns its conversations.
// It comes wrapped, in a PartialWriteError.
var ErrLeaseLost = errors.New("this relay's lease lapsed: it no longer owns the conversation")

// PartialWriteError is returned by a Write that stored some conversations
// of its batch and not others. The conversations it does not name were
// written in full, and may be delivered; those it names were not written
// at all. Like any failed Write, it stores none of the batch's Spend.
type PartialWriteError struct {
	// Failed says, by conversation id, why each failed conversation was
	// not written.
	Failed map[string]error
}

func (e *PartialWriteError) Error() string {
	ids := slices.Sorted(maps.Keys(e.Failed))
	var b strings.Builder
	fmt.Fprintf(&b, "history: %d conversation(s) not written:", len(ids))
	for i, id := range ids {
		if i == 3 {
			fmt.Fprintf(&b, " and %d more", len(ids)-i)
			break
		}
		fmt.Fprintf(&b, " %q: %v;", id, e.Failed[id])
	}
	return strings.TrimSuffix(b.String(), ";")
}

// Unwrap lets errors.Is find, for example, ErrConflict in any of them.
func (e *PartialWriteError) Unwrap() []error {
	out := make([]error, 0, len(e.Failed))
	for _, id := range slices.Sorted(maps.Keys(e.Failed)) {
		out = append(out, e.Failed[id])
	}
	return out
}
