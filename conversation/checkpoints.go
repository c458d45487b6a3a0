package conversation

import (
	"fmt"
	"slices"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// Checkpoints (docs/checkpoints.md): a turn's copilot:changes becomes a
// note row "3 files changed +12 −4" that carries the change set (Row.Changes),
// so every front end shows it, and richer ones draw its files and diffs; a
// copilot:restored becomes a note naming what the restore did and its undo.

func (s *State) checkpointRow(data any) {
	switch d := data.(type) {
	case *protocol.Changes:
		ch := *d
		ch.Files = slices.Clone(d.Files)
		s.appendRow(Row{Kind: RowNote, State: NoteInfo, Done: true, Text: ChangesText(ch.Files, ch.Truncated), Changes: &ch})
	case *protocol.Restored:
		s.appendRow(Row{Kind: RowNote, State: NoteInfo, Done: true, Text: RestoredText(d)})
	}
}

// Checkpoints are the change sets of the conversation's turns, oldest
// first: the turns a client numbers for /diff N and /restore N.
func (s *State) Checkpoints() []*protocol.Changes {
	var out []*protocol.Changes
	for i := range s.Rows {
		if ch := s.Rows[i].Changes; ch != nil {
			out = append(out, ch)
		}
	}
	return out
}

// ChangesText sums a change set up: "3 files changed +12 −4".
func ChangesText(files []protocol.ChangedFile, truncated bool) string {
	adds, dels := 0, 0
	for _, f := range files {
		adds += f.Additions
		dels += f.Deletions
	}
	n := fmt.Sprintf("%d files changed", len(files))
	if len(files) == 1 {
		n = "1 file changed"
	}
	if truncated {
		n = fmt.Sprintf("more than %d files changed", len(files))
	}
	return fmt.Sprintf("%s +%d −%d", n, adds, dels)
}

// FileChangeText is one file of a change set: "M path +3 −1", binary files
// without counts.
func FileChangeText(f protocol.ChangedFile) string {
	mark := map[string]string{protocol.FileAdded: "A", protocol.FileModified: "M", protocol.FileDeleted: "D",
		protocol.FileSkipped: "skipped", protocol.FileFailed: "FAILED"}[f.Status]
	if mark == "" {
		mark = f.Status
	}
	line := mark + " " + f.Path
	switch {
	case f.Error != "":
		line += " (" + f.Error + ")"
	case f.Binary:
		line += " (binary)"
	default:
		line += fmt.Sprintf(" +%d −%d", f.Additions, f.Deletions)
	}
	return line
}

// RestoredText says what a restore did: how many files, which failed, and
// the checkpoint that undoes it.
func RestoredText(d *protocol.Restored) string {
	failed, skipped := 0, 0
	for _, f := range d.Files {
		switch f.Status {
		case protocol.FileFailed:
			failed++
		case protocol.FileSkipped:
			skipped++
		}
	}
	text := fmt.Sprintf("Files restored to checkpoint %s: %d changed", Short(d.Checkpoint), len(d.Files)-failed-skipped)
	if skipped > 0 {
		text += fmt.Sprintf(", %d left as they are (over 10 MiB)", skipped)
	}
	if failed > 0 {
		text += fmt.Sprintf(", %d could not be written", failed)
	}
	return text + fmt.Sprintf(". Undo: restore checkpoint %s.", Short(d.Undo))
}

// Short is a checkpoint's first 8 characters, as people read it.
func Short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
