// Package historytest is the conformance suite every history.Store must
// pass: the in-memory store and the SQLite store run the same checks, so the
// relay can rely on one behaviour whichever store it is given.
package historytest

import (
	"context"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// OlderThanDeleter is implemented by stores that support retention
// (--history-max-age); Run checks it when the store has it.
type OlderThanDeleter interface {
	DeleteOlderThan(ctx context.Context, cutoff time.Time) (int, error)
}

// Run checks every contract of history.Store. open must return a new, empty
// store each time it is called; Run closes each store it opens.
func Run(t *testing.T, open func(t *testing.T) history.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s history.Store)
	}{
		{"Epoch", testEpoch},
		{"Empty", testEmpty},
		{"ConversationRoundTrip", testConversationRoundTrip},
		{"ConversationUpsert", testConversationUpsert},
		{"ConversationsOrder", testConversationsOrder},
		{"EventsOrderAndSince", testEventsOrderAndSince},
		{"EventsOutOfOrderWrites", testEventsOutOfOrderWrites},
		{"EventsStopOnError", testEventsStopOnError},
		{"EventsLongHistory", testEventsLongHistory},
		{"EventsWriteFromCallback", testEventsWriteFromCallback},
		{"EventsFramesStayValid", testEventsFramesStayValid},
		{"EventsInStretches", testEventsInStretches},
		{"EventsStream", testEventsStream},
		{"BatchAtomicDuplicateStored", testBatchAtomicDuplicateStored},
		{"BatchAtomicDuplicateInBatch", testBatchAtomicDuplicateInBatch},
		{"BatchAtomicUnknownConversation", testBatchAtomicUnknownConversation},
		{"EmptyBatch", testEmptyBatch},
		{"Delete", testDelete},
		{"DeleteThenRecreate", testDeleteThenRecreate},
		{"DeleteOlderThan", testDeleteOlderThan},
		{"Concurrent", testConcurrent},
		{"SpendByHour", testSpendByHour},
		{"SpendSince", testSpendSince},
		{"SpendAtomic", testSpendAtomic},
		{"SpendOutlivesConversations", testSpendOutlivesConversations},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			defer func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			}()
			tc.fn(t, s)
		})
	}
}
