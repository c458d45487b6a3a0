package history

import (
	"context"
	"crypto/sha256"
	"errors"
)

// Cluster is the other relays that share a Store (docs/scale-out.md): each
// conversation has one owner, the relay that runs its agent session and
// appends its events; the others serve its subscribers from the events
// the owner stores, and forward its commands to the owner. The relay gets
// one in its Config; nil is one relay alone.
//
// It is declared here, next to Store, because it is the other half of a
// shared Store: the relay (which may import this package) uses it, and the
// store that is shared (relay/history/jetstream, which may import only
// this package) implements it.
type Cluster interface {
	// ID names this relay among the others; it is new at every start.
	ID() string
	// Start announces the relay (its lease) and delivers to h, until Stop:
	// the commands other relays forward to it, the events every owner
	// stores, and the relays whose lease lapsed.
	Start(h ClusterHooks) error
	// Stop ends Start's work, gives up the conversations this relay owns
	// (so that others take them at once, not a lease later) and withdraws
	// its lease. A stopped cluster is not started again.
	Stop(ctx context.Context) error
	// Health says why the relay cannot serve now, "" when it can: it is
	// cut off from NATS, its lease lapsed, or the history store does not
	// answer. /healthz answers 503 with it, and commands that change a
	// conversation are refused with it at once.
	Health() string

	// Claim makes this relay the conversation's owner unless a relay
	// whose lease holds owns it, and returns the owner after: ID() when
	// this relay won (or owned it already). previous is the owner before,
	// "" when nobody (or this relay) was. While this relay's own lease
	// has lapsed it claims nothing and returns ErrNoLease.
	Claim(ctx context.Context, conversationID string) (owner, previous string, err error)
	// Owner returns the conversation's owner and whether its lease holds;
	// "" when nobody owns it.
	Owner(ctx context.Context, conversationID string) (owner string, live bool, err error)
	// Release gives up this relay's ownership of a conversation (a delete).
	Release(ctx context.Context, conversationID string)
	// Forward sends a command to relay owner and returns its answer.
	Forward(ctx context.Context, owner string, cmd []byte) ([]byte, error)
	// Deleted tells the other relays that the conversation was deleted.
	Deleted(ctx context.Context, conversationID string)
	// Follow makes the cluster tell the relay (Stored, Deleted) the events
	// another relay stores of a conversation, from when it returns until
	// unfollow is called: the relay follows what its clients watch. What
	// it reads of the conversation after Follow returns misses nothing
	// stored later. Of the others the relay is told only what its list
	// shows (Stored with no events: the state when it changes).
	Follow(ctx context.Context, conversationID string) (unfollow func(), err error)
	// Latest reads the conversation as it is stored now (not as this
	// relay's store last saw it), and makes the store's next append expect
	// that tail: it is what a relay taking a conversation over starts from.
	Latest(ctx context.Context, conversationID string) (Conversation, error)
}

// Presence is a Cluster that shares which tokens have a connection open
// on each relay (docs/push.md): a relay pushes to a device only when none
// of its connections is open on any relay of the cluster, and only the
// relay that owns the conversation pushes its events.
type Presence interface {
	// SetPresent says which tokens (their SHA-256) have a connection
	// open on this relay now: the whole set, replacing the one told
	// before. It does not wait (the relay calls it under its own lock):
	// the cluster tells the other relays at once, in the background, and
	// the set holds as long as this relay's lease, so that a relay that
	// dies takes its connections with it.
	SetPresent(tokens [][sha256.Size]byte)
	// Present returns the tokens with a connection open on the other
	// relays, as this relay last heard (a moment behind them).
	Present() map[[sha256.Size]byte]bool
}

// ClusterHooks is the relay's side of a Cluster: what it is told.
type ClusterHooks interface {
	// Command runs a command another relay forwarded and returns the
	// answer for that relay.
	Command(ctx context.Context, cmd []byte) []byte
	// Stored tells of events some owner stored: the conversation's events
	// in seq order (possibly none: the relay reads what it misses from the
	// Store) and its state after the last event stored so far.
	Stored(conversationID string, events []Event, state Conversation)
	// Deleted tells of a conversation deleted by its owner.
	Deleted(conversationID string)
	// RelayGone tells of a relay whose lease lapsed: its conversations
	// may be taken over.
	RelayGone(relayID string)
	// Reconnected tells that what other relays stored may not all have
	// been told: the connection came back after a break, or the relay fell
	// so far behind that some of it was dropped.
	Reconnected()
	// LeaseLost tells that this relay's own lease lapsed (it was cut off
	// for longer than the lease): it stops owning its conversations.
	// stalled says the relay itself was stalled past its lease (its
	// process paused) while the store may have been fine, rather than cut
	// off from a store that did not answer.
	LeaseLost(stalled bool)
}

// ErrNoLease is what Claim answers while this relay's own lease has
// lapsed and it has not announced itself again: it claims nothing under
// an id that is dead to the others.
var ErrNoLease = errors.New("this relay's lease lapsed: it claims nothing until it has announced itself again")

// ErrUnreachable wraps the error of a command forwarded to a relay that
// nobody answers for: it is dead (its lease lapses soon) or reconnecting.
var ErrUnreachable = errors.New("the relay that owns the conversation does not answer")

// ErrNotOwner is answered to a command forwarded to a relay that no
// longer owns the conversation (it is stopping): Forward wraps it with
// ErrUnreachable, and the sender asks again who owns it.
var ErrNotOwner = errors.New("this relay does not own the conversation")
