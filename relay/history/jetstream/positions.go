package jetstream

import (
	"cmp"
	"slices"
)

// A replay after seq since starts at the conversation's first event past
// since. The stream cannot be asked for that directly (the protocol seq is
// in a header), so the store keeps, per conversation, where some events
// are: every posEvery-th event it appends or reads, and the event where
// each replay that its fn stopped ended (the relay replays to a slow
// client in stretches, each starting where the last one stopped). A replay
// starts at the nearest known event at or before since and skips what
// precedes since; only a conversation with no known event at or before
// since is bisected (startAfter), a few message gets.

// position says that event seq starts at stream seq stream.
type position struct {
	seq    int64
	stream uint64
}

const (
	// posEvery is how many events apart the positions noted while
	// appending and reading are: a replay skips fewer than that.
	posEvery = 64
	// maxPositions bounds one conversation's positions; past it every
	// other one is dropped.
	maxPositions = 4096
)

// notePosLocked records a position of a conversation, stored in seq order
// (a convState's fields are under s.mu).
func (s *Store) notePosLocked(st *convState, p position) {
	i, found := slices.BinarySearchFunc(st.pos, p.seq, func(q position, seq int64) int { return cmp.Compare(q.seq, seq) })
	if found {
		st.pos[i] = p
		return
	}
	st.pos = slices.Insert(st.pos, i, p)
	if len(st.pos) > maxPositions {
		kept := st.pos[:0]
		for j, q := range st.pos {
			if j%2 == 0 {
				kept = append(kept, q)
			}
		}
		st.pos = kept
	}
}

// lastPosLocked is the seq of the conversation's latest position (0: none).
func (s *Store) lastPosLocked(st *convState) int64 {
	if len(st.pos) == 0 {
		return 0
	}
	return st.pos[len(st.pos)-1].seq
}

// posAtOrBefore returns the known event nearest to since from below.
func (s *Store) posAtOrBefore(st *convState, since int64) (position, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, found := slices.BinarySearchFunc(st.pos, since, func(q position, seq int64) int { return cmp.Compare(q.seq, seq) })
	if found {
		return st.pos[i], true
	}
	if i == 0 {
		return position{}, false
	}
	return st.pos[i-1], true
}
