package conversation

import (
	"bytes"
	"cmp"
	"strings"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// compactAfter is how many events a replay folds before the state is
// compacted at its end (compact).
const compactAfter = 1000

// compact copies what the state keeps (its rows, their text, the messages'
// markdown) into new memory, packed together, after a long replay. The
// replay allocated them among ten times as much that it threw away (the
// frames, the decoded events, every version of a streaming block), so they
// sat a few to a page across all the pages the replay used, and those
// pages stayed with the process once the garbage was collected: for a
// 5,000-message conversation the window's Go heap in use grew by 26 MiB
// for 14 MiB of data. Once copied, the old pages hold nothing and go back
// to the system.
func (s *State) compact() {
	interned := map[string]string{}
	keep := func(str string) string {
		if str == "" {
			return ""
		}
		if len(str) > 64 {
			return strings.Clone(str)
		}
		if c, ok := interned[str]; ok {
			return c
		}
		c := strings.Clone(str)
		interned[c] = c
		return c
	}
	moved := make(map[*message]*message, len(s.msgs))
	msgs := make(map[string]*message, len(s.msgs))
	for id, m := range s.msgs {
		n, split := *m, *m.split
		if m.done {
			// A finished message gets no more text: its markdown is one
			// string, which its rows share below, where the message kept
			// a copy of its rows' text (1.5 MB of the 5,000-message
			// conversation's 8.5).
			n.text = cmp.Or(m.text, string(split.buf))
			split.buf = nil
		} else {
			split.buf = bytes.Clone(split.buf)
		}
		n.split, n.id = &split, keep(id)
		msgs[n.id] = &n
		moved[m] = &n
	}
	s.msgs = msgs
	// Where each finished message's rows were found in its markdown: its
	// blocks come in order.
	found := map[*message]int{}
	rows := make([]Row, len(s.Rows))
	for i, r := range s.Rows {
		text := keep(r.Text)
		if m := msgs[r.MessageID]; m != nil && m.done && (r.Kind == RowText || r.Kind == RowCode) && r.Text != "" {
			if at := strings.Index(m.text[found[m]:], r.Text); at >= 0 {
				at += found[m]
				text = m.text[at : at+len(r.Text)]
				found[m] = at + len(r.Text)
			}
		}
		r.Text, r.Lang, r.Title, r.State = text, keep(r.Lang), keep(r.Title), keep(r.State)
		r.Detail, r.Args, r.MessageID = keep(r.Detail), keep(r.Args), keep(r.MessageID)
		r.Mode = protocol.Mode(keep(string(r.Mode)))
		rows[i] = r
	}
	s.Rows = rows
	for i, m := range s.unfinished {
		if n, ok := moved[m]; ok { // a message whose id a later one took is not in msgs
			s.unfinished[i] = n
		}
	}
}
