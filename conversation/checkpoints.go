package conversation

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// Checkpoints (docs/checkpoints.md): a turn's copilot:changes becomes a
// note row "3 files changed +12 −4" that carries the change set (Row.Changes),
// so every front end shows it, and richer ones draw it as a card: its
// files, each one's diff (copilot:diff, kept in Row.Card), and Restore; a
// copilot:restored becomes a note naming what the restore did and its undo
// (Row.Restored), which such a front end offers as Undo.

// Card is what a changes card, or a restore's notice, knows beyond its
// event: the diffs asked for and fetched, and a restore on its way. A
// Card in a row is never changed: the fold puts a new one in its place,
// so a renderer's copy of a row stays as it was.
type Card struct {
	// Patches are the diffs fetched so far, by path.
	Patches map[string]protocol.FilePatch
	// Loading names the paths whose diff was asked for and has not come.
	Loading map[string]bool
	// Error is why the relay refused the last diff asked for.
	Error string
	// Restoring is true from the moment this client asks for a restore to
	// the card's checkpoint (or, on a restore's notice, to its undo) until
	// the relay says it restored or refused.
	Restoring bool
	// Undone is true on a restore's notice once its undo was restored.
	Undone bool
}

func (c *Card) clone() *Card {
	if c == nil {
		return &Card{}
	}
	n := *c
	n.Patches = maps.Clone(c.Patches)
	n.Loading = maps.Clone(c.Loading)
	return &n
}

func (s *State) checkpointRow(data any) {
	switch d := data.(type) {
	case *protocol.Changes:
		ch := *d
		ch.Files = slices.Clone(d.Files)
		s.appendRow(Row{Kind: RowNote, State: NoteInfo, Done: true, Text: ChangesText(ch.Files, ch.Truncated), more: &rowMore{changes: &ch}})
	case *protocol.Restored:
		// The card (or the notice) that asked for it is no longer
		// restoring; a notice whose undo this was is undone.
		for i := range s.Rows {
			r := s.Rows[i]
			switch {
			case r.Changes() != nil && r.Changes().Checkpoint == d.Checkpoint && r.Card() != nil && r.Card().Restoring:
				s.setCard(i, func(c *Card) { c.Restoring = false })
			case r.Restored() != nil && r.Restored().Undo == d.Checkpoint && (r.Card() == nil || !r.Card().Undone):
				s.setCard(i, func(c *Card) { c.Restoring, c.Undone = false, true })
			}
		}
		rd := *d
		rd.Files = slices.Clone(d.Files)
		s.appendRow(Row{Kind: RowNote, State: NoteInfo, Done: true, Text: RestoredText(d), more: &rowMore{restored: &rd}})
	}
}

// setCard replaces row i's Card with a changed copy.
func (s *State) setCard(i int, change func(*Card)) {
	c := s.Rows[i].Card().clone()
	change(c)
	s.setRow(i, s.Rows[i].withMore(func(m *rowMore) { m.card = c }))
}

// cardRow is the row of the changes card of checkpoint (-1: none).
func (s *State) cardRow(checkpoint string) int {
	for i := len(s.Rows) - 1; i >= 0; i-- {
		if ch := s.Rows[i].Changes(); ch != nil && ch.Checkpoint == checkpoint {
			return i
		}
	}
	return -1
}

// AskDiff records that this client asks for the diff of path in the
// changes card of checkpoint, and reports whether it should: false when
// the card has it already, or it is on its way, or there is no such card.
func (s *State) AskDiff(checkpoint, path string) bool {
	i := s.cardRow(checkpoint)
	if i < 0 {
		return false
	}
	if c := s.Rows[i].Card(); c != nil {
		if _, ok := c.Patches[path]; ok || c.Loading[path] {
			return false
		}
	}
	s.setCard(i, func(c *Card) {
		if c.Loading == nil {
			c.Loading = map[string]bool{}
		}
		c.Loading[path] = true
		c.Error = ""
	})
	return true
}

// diffReply folds a copilot:diff reply into its card.
func (s *State) diffReply(d *protocol.DiffReply) {
	i := s.cardRow(d.Checkpoint)
	if i < 0 {
		return
	}
	s.setCard(i, func(c *Card) {
		if c.Patches == nil {
			c.Patches = map[string]protocol.FilePatch{}
		}
		for _, f := range d.Files {
			c.Patches[f.Path] = f
			delete(c.Loading, f.Path)
		}
		// A path the relay found no patch for (a binary file, one not in
		// the turn) gets an empty one rather than loading for ever.
		for p := range c.Loading {
			c.Patches[p] = protocol.FilePatch{Path: p}
			delete(c.Loading, p)
		}
	})
}

// MarkRestoring records that this client asked for a restore to
// checkpoint: of a changes card (Restore) or of a restore's undo (Undo).
func (s *State) MarkRestoring(checkpoint string) {
	for i, r := range s.Rows {
		if (r.Changes() != nil && r.Changes().Checkpoint == checkpoint) || (r.Restored() != nil && r.Restored().Undo == checkpoint) {
			s.setCard(i, func(c *Card) { c.Restoring = true })
		}
	}
}

// RestoreFailed ends every restore this client waits for: the relay
// refused it, or it could not be sent.
func (s *State) RestoreFailed() {
	for i, r := range s.Rows {
		if r.Card() != nil && r.Card().Restoring {
			s.setCard(i, func(c *Card) { c.Restoring = false })
		}
	}
}

// checkpointError folds a refused copilot:diff or copilot:restore into the
// cards that wait for it, and reports whether it was one.
func (s *State) checkpointError(e *protocol.Error) bool {
	switch e.Type {
	case protocol.TypeDiff:
		for i, r := range s.Rows {
			if r.Card() != nil && len(r.Card().Loading) > 0 {
				s.setCard(i, func(c *Card) {
					clear(c.Loading)
					c.Error = e.Message
				})
			}
		}
		return true
	case protocol.TypeRestore:
		s.RestoreFailed()
	}
	return false
}

// Checkpoints are the change sets of the conversation's turns, oldest
// first: the turns a client numbers for /diff N and /restore N.
func (s *State) Checkpoints() []*protocol.Changes {
	var out []*protocol.Changes
	for i := range s.Rows {
		if ch := s.Rows[i].Changes(); ch != nil {
			out = append(out, ch)
		}
	}
	return out
}

// RestoreItem is one file a restore to a checkpoint would change, and
// how: Effect "removed", "rewritten" or "brought back", or, for a file
// over 10 MiB, which the restore does not touch, EffectLeftAsIs.
type RestoreItem struct {
	Path   string
	Effect string
}

// Restore effects.
const (
	EffectRemoved     = "removed"
	EffectRewritten   = "rewritten"
	EffectBroughtBack = "brought back"
	// EffectLeftAsIs: the file is over 10 MiB in a change set since, so
	// no snapshot kept its content and the restore leaves it as it is
	// (copilot:restored lists it skipped), whatever the turns did to it.
	EffectLeftAsIs = "left as it is: over 10 MiB"
)

// RestoreEffects is what a restore to checkpoint would change, as far as
// the conversation's change sets from that turn on say: each file they
// touched, once, with what the restore does to it, in path order. What
// else changed the folder since (the user, another conversation) is not
// in them: the front ends say so.
func (s *State) RestoreEffects(checkpoint string) []RestoreItem {
	first, last := map[string]string{}, map[string]string{}
	large := map[string]bool{}
	on := false
	for i := range s.Rows {
		ch := s.Rows[i].Changes()
		if ch == nil {
			continue
		}
		on = on || ch.Checkpoint == checkpoint
		if !on {
			continue
		}
		for _, f := range ch.Files {
			if _, ok := first[f.Path]; !ok {
				first[f.Path] = f.Status
			}
			last[f.Path] = f.Status
			large[f.Path] = large[f.Path] || f.Large
		}
	}
	var out []RestoreItem
	for p, st := range first {
		effect := EffectRewritten
		switch {
		case st == protocol.FileAdded && last[p] == protocol.FileDeleted:
			continue // made and removed since: nothing to put back
		case large[p]:
			effect = EffectLeftAsIs
		case st == protocol.FileAdded:
			effect = EffectRemoved
		case last[p] == protocol.FileDeleted:
			effect = EffectBroughtBack
		}
		out = append(out, RestoreItem{Path: p, Effect: effect})
	}
	slices.SortFunc(out, func(a, b RestoreItem) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// UndoDiscards is what the undo of a restore (undo: its undo checkpoint)
// also undoes: the folder goes back to what it held before the restore,
// so the work of every turn that changed files since the restore goes
// too (RestoreEffects of the first of them). None when no turn changed
// files since: the undo then takes back the restore alone, and the front
// ends undo at once; else they name these files and ask (UndoQuestion).
func (s *State) UndoDiscards(undo string) []RestoreItem {
	for i := range s.Rows {
		if r := s.Rows[i].Restored(); r == nil || r.Undo != undo {
			continue
		}
		for _, later := range s.Rows[i+1:] {
			if later.Changes() != nil {
				return s.RestoreEffects(later.Changes().Checkpoint)
			}
		}
		return nil
	}
	return nil
}

// UndoQuestion heads the files UndoDiscards names, asked before such an
// undo.
const UndoQuestion = "Turns since that restore changed files: undoing it puts the folder back as it was before the restore, so it also undoes them:"

// RestoreQuestion is what a front end asks before a restore to checkpoint
// of a turn: the question, then (RestoreEffects) the files, then
// RestoreCaveat.
const RestoreQuestion = "Put the folder's files back as they were before this turn? This changes:"

// The words of a turn's changes card, the window's and the web client's.
const (
	// RestoreButton asks for a restore to before the card's turn;
	// RestoringText is the button while that restore is on its way.
	RestoreButton = "Restore files to before this turn…"
	RestoringText = "Restoring…"
	// DiffCut follows a file's diff that the relay cut.
	DiffCut = "The diff was cut: too long for one message."
	// DiffLoading stands in for a file's diff on its way from the relay.
	DiffLoading = "Loading the diff…"
	// NoDiff stands in for the diff of a file opened that has none and
	// waits for none: the relay refused it (the card says why), or the
	// conversation was read anew since. Opening the file asks again.
	NoDiff = "No diff yet: close the file and open it again to ask for it."
)

// MoreFilesText counts a card's files past the ones it lists: n more, or,
// when the relay's own list was cut (truncated), more than it names.
func MoreFilesText(n int, truncated bool) string {
	if truncated {
		return "and more files than the relay lists"
	}
	return fmt.Sprintf("and %d more files", n)
}

// DiffRefusedText says that the relay refused a file's diff, and why.
func DiffRefusedText(why string) string {
	return "The relay refused the diff: " + why
}

// ShowAllLinesText opens the whole of a diff or a tool's output, n lines.
func ShowAllLinesText(n int) string {
	return fmt.Sprintf("Show all %d lines", n)
}

// FirstLinesText says that a diff shows only its first shown of n lines.
func FirstLinesText(shown, n int) string {
	return fmt.Sprintf("… the first %d of %d lines", shown, n)
}

// RestoreBusy is said in place of a restore asked for while a turn runs:
// the agent may be changing the files the restore would put back.
const RestoreBusy = "A turn is running: stop it or wait for its end, then restore."

// RestoreCaveat says what else a restore puts back; others names the
// other conversations working in the same folder without a worktree.
func RestoreCaveat(others []string) string {
	text := "It also undoes whatever else changed in the folder since. The restore can be undone."
	if len(others) > 0 {
		quoted := make([]string, len(others))
		for i, o := range others {
			quoted[i] = fmt.Sprintf("%q", OneLine(o, 60))
		}
		text = "Another conversation works in this folder (" + strings.Join(quoted, ", ") + "): the restore also undoes what it changed since. " + text
	}
	return text
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

// FileMark is the one-letter mark of a file's status: A, M, D.
func FileMark(status string) string {
	mark := map[string]string{protocol.FileAdded: "A", protocol.FileModified: "M", protocol.FileDeleted: "D",
		protocol.FileSkipped: "skipped", protocol.FileFailed: "FAILED"}[status]
	if mark == "" {
		mark = status
	}
	return mark
}

// FileCounts is a file's "+3 −1", or "binary".
func FileCounts(f protocol.ChangedFile) string {
	if f.Binary {
		return "binary"
	}
	return fmt.Sprintf("+%d −%d", f.Additions, f.Deletions)
}

// FileChangeText is one file of a change set: "M path +3 −1", binary files
// without counts.
func FileChangeText(f protocol.ChangedFile) string {
	line := FileMark(f.Status) + " " + f.Path
	switch {
	case f.Error != "":
		line += " (" + f.Error + ")"
	case f.Binary:
		line += " (binary)"
	default:
		line += " " + FileCounts(f)
	}
	return line
}

// PatchLines are the lines of one file's patch (a copilot:diff reply's)
// to draw: its hunks, without git's header lines before the first one.
func PatchLines(patch string) []DiffLine {
	i := strings.Index(patch, "\n@@")
	switch {
	case strings.HasPrefix(patch, "@@"):
	case i >= 0:
		patch = patch[i+1:]
	default:
		return nil // no hunk: a binary file, a mode change
	}
	out := parseDiff(patch)
	for k, l := range out {
		if l.Op == ' ' && strings.HasPrefix(l.Text, `\ `) {
			out[k] = DiffLine{'@', l.Text} // "\ No newline at end of file"
		}
	}
	return out
}

// RestoredText says what a restore did: how many files, and how many were
// left or failed. How to undo it is each front end's own: the window's
// and the web client's Undo beside it, the terminal's /undo line; "Undo:
// restore checkpoint 6f4e01dc", which it said too, named a step that no
// front end offers by that name.
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
	return text + "."
}

// Short is a checkpoint's first 8 characters, as people read it.
func Short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// NoLinesText says why a changed file's diff (patch, git's, of a
// copilot:diff reply) has no lines to show: a binary file, a change of its
// mode alone ("Mode changed: 100644 → 100755"), an empty file added or
// deleted, else none changed (a patch the relay did not find).
func NoLinesText(binary bool, patch string) string {
	var oldMode, newMode string
	var added, deleted bool
	for _, l := range strings.Split(patch, "\n") {
		switch {
		case strings.HasPrefix(l, "old mode "):
			oldMode = strings.TrimPrefix(l, "old mode ")
		case strings.HasPrefix(l, "new mode "):
			newMode = strings.TrimPrefix(l, "new mode ")
		case strings.HasPrefix(l, "new file mode "):
			added = true
		case strings.HasPrefix(l, "deleted file mode "):
			deleted = true
		case strings.HasPrefix(l, "Binary files "):
			binary = true
		}
	}
	switch {
	case binary:
		return "A binary file: no diff to show."
	case oldMode != "" && newMode != "":
		return "Mode changed: " + oldMode + " → " + newMode
	case added:
		return "An empty file, added: no lines to show."
	case deleted:
		return "An empty file, deleted: no lines to show."
	}
	return "No lines changed."
}
