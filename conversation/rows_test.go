package conversation

import (
	"testing"
	"unsafe"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// A row stays small: a 5,000-message conversation keeps about 22,500 of
// them for as long as it is open, so each 8 bytes is 180 kB of the
// window's memory. What only a few rows have is behind Row.more.
func TestRowSize(t *testing.T) {
	if n := unsafe.Sizeof(Row{}); n > 144 {
		t.Fatalf("a Row is %d bytes, want at most 144", n)
	}
}

// A row's card changed is a new row: a copy taken before keeps the card
// and the change set it had (renderers keep copies and compare them).
func TestCardChangeLeavesCopiesAlone(t *testing.T) {
	ch := &protocol.Changes{Checkpoint: "c1"}
	s := &State{Rows: []Row{{Kind: RowNote, more: &rowMore{changes: ch}}}}
	before := s.Rows[0]
	s.setCard(0, func(c *Card) { c.Restoring = true })
	if before.Card() != nil || !s.Rows[0].Card().Restoring {
		t.Fatalf("card before %+v, after %+v", before.Card(), s.Rows[0].Card())
	}
	if s.Rows[0].Changes() != ch || before.Changes() != ch {
		t.Fatal("the change set was not kept")
	}
}
