package chat

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// Checkpoints in the terminal (docs/cli.md): /changes lists the turns that
// changed files, /diff N [PATH] prints a turn's diff, /restore N puts the
// files back as they were before turn N after a y/N confirmation, and
// /undo undoes the last restore, as the window's and the web client's
// Undo do.

// checkpointer is a Conn that can ask for diffs and restores (the
// client's does).
type checkpointer interface {
	Diff(ctx context.Context, conversationID, checkpoint, path string) error
	Restore(ctx context.Context, conversationID, checkpoint string) error
}

// checkpointCommand runs /changes, /diff and /restore, and reports whether
// the line (text, split into fields) was one of them.
func (r *repl) checkpointCommand(ctx context.Context, text string, fields []string) bool {
	switch fields[0] {
	case "/changes":
		r.listChanges()
	case "/diff":
		path := ""
		switch {
		case len(fields) == 3:
			path = fields[2]
		case len(fields) > 3 && !strings.ContainsAny(text, `"'`):
			// A path with spaces, as /changes prints it: the rest of
			// the line, its spaces as typed.
			path = afterWords(text, 2)
		case len(fields) != 2:
			r.note(styleWarn, `Usage: /diff N [PATH], N a turn from /changes; a PATH with spaces may be in quotes: /diff 2 "my notes.md".`)
			return true
		}
		ch := r.changesOf(fields[1])
		if ch == nil {
			return true
		}
		cp, ok := r.conn.(checkpointer)
		if !ok {
			r.note(styleWarn, "This connection cannot ask for diffs.")
			return true
		}
		r.diffAsked++
		r.request(ctx, "ask for the diff", func(c context.Context) error {
			err := cp.Diff(c, r.conv, ch.Checkpoint, path)
			if err != nil {
				r.diffAsked-- // no diff will answer
			}
			return err
		})
	case "/restore":
		if len(fields) != 2 {
			r.note(styleWarn, "Usage: /restore N, N a turn from /changes.")
			return true
		}
		ch := r.changesOf(fields[1])
		if ch == nil {
			return true
		}
		if r.turnBlocks("/restore") {
			return true
		}
		r.askRestore(ch)
	case "/undo":
		r.undoRestore(ctx)
	default:
		return false
	}
	return true
}

// afterWords is text after its first n words, trimmed.
func afterWords(text string, n int) string {
	rest := strings.TrimLeft(text, " \t")
	for range n {
		end := strings.IndexAny(rest, " \t")
		if end < 0 {
			return ""
		}
		rest = strings.TrimLeft(rest[end:], " \t")
	}
	return strings.TrimRight(rest, " \t")
}

// changesOf is the change set of turn arg ("1" the first that changed
// files), or nil after saying what is wrong.
func (r *repl) changesOf(arg string) *protocol.Changes {
	var cps []*protocol.Changes
	if r.fold != nil {
		cps = r.fold.Checkpoints()
	}
	n, err := strconv.Atoi(arg)
	switch {
	case len(cps) == 0:
		r.note(styleWarn, "No turn of this conversation changed files yet.")
	case err != nil || n < 1 || n > len(cps):
		r.note(styleWarn, fmt.Sprintf("There is no turn %q: /changes lists turns 1 to %d.", sanitize(arg), len(cps)))
	default:
		return cps[n-1]
	}
	return nil
}

func (r *repl) listChanges() {
	var cps []*protocol.Changes
	if r.fold != nil {
		cps = r.fold.Checkpoints()
	}
	if len(cps) == 0 {
		r.note(styleDim, "No turn of this conversation changed files yet.")
		return
	}
	for i, ch := range cps {
		r.note(styleBold, fmt.Sprintf("%d. %s (checkpoint %s)", i+1, conversation.ChangesText(ch.Files, ch.Truncated), conversation.Short(ch.Checkpoint)))
		for _, f := range ch.Files {
			r.note("", "   "+sanitize(conversation.FileChangeText(f)))
		}
	}
	r.note(styleDim, "/diff N [PATH] shows a turn's diff; /restore N puts the files back as they were before it.")
}

// askRestore asks for a y/N confirmation, naming what the restore would
// change, before it sends copilot:restore.
func (r *repl) askRestore(ch *protocol.Changes) {
	// The window's and the web client's words, from the one fold: each
	// file this turn and the later ones touched, once, with what the
	// restore does to it.
	r.note(styleWarn, conversation.RestoreQuestion)
	var effects []conversation.RestoreItem
	if r.fold != nil {
		effects = r.fold.RestoreEffects(ch.Checkpoint)
	}
	for _, e := range effects {
		r.note("", "   "+sanitize(e.Path)+" ("+e.Effect+")")
	}
	r.note(styleDim, conversation.RestoreCaveat(nil))
	checkpoint := ch.Checkpoint
	r.askConfirm("Restore? [y/N]", &confirmation{
		yes: func(ctx context.Context) { r.restore(ctx, "restore", checkpoint) },
		no:  "Not restored.",
	})
}

// restore sends copilot:restore of checkpoint, confirmed (askRestore), or
// of a restore's undo checkpoint (what: "undo", as a failure says it).
func (r *repl) restore(ctx context.Context, what, checkpoint string) {
	cp, ok := r.conn.(checkpointer)
	if !ok {
		r.note(styleWarn, "This connection cannot restore.")
		return
	}
	r.request(ctx, what, func(c context.Context) error { return cp.Restore(c, r.conv, checkpoint) })
}

// undoRestore restores the undo checkpoint of the conversation's last
// restore, at once, as the window's Undo does: what it puts back is what
// that restore changed, and it can be undone in turn (it is now the last
// restore). Without it a terminal user read that the undo checkpoint
// undoes it and had no command that could restore it.
//
// Turns that changed files since that restore are undone too (the folder
// goes back to what it held before the restore): then /undo names their
// files and asks first, as /restore does, where it wiped them at once.
func (r *repl) undoRestore(ctx context.Context) {
	last := r.lastRestore()
	if last == nil {
		r.note(styleWarn, "Nothing to undo: no restore of this conversation yet.")
		return
	}
	if r.turnBlocks("/undo") {
		return
	}
	discards := r.fold.UndoDiscards(last.Undo)
	if len(discards) == 0 {
		r.restore(ctx, "undo", last.Undo)
		return
	}
	r.note(styleWarn, conversation.UndoQuestion)
	for _, e := range discards {
		r.note("", "   "+sanitize(e.Path)+" ("+e.Effect+")")
	}
	r.note(styleDim, "The undo can be undone in turn (/undo again).")
	undo := last.Undo
	r.askConfirm("Undo? [y/N]", &confirmation{
		yes: func(ctx context.Context) { r.restore(ctx, "undo", undo) },
		no:  "Not undone.",
	})
}

// lastRestore is the conversation's most recent restore that is not
// undone yet, or nil.
func (r *repl) lastRestore() *protocol.Restored {
	if r.fold == nil {
		return nil
	}
	for i := len(r.fold.Rows) - 1; i >= 0; i-- {
		row := r.fold.Rows[i]
		if row.Restored() == nil {
			continue
		}
		if row.Card() != nil && row.Card().Undone {
			return nil
		}
		return row.Restored()
	}
	return nil
}

// showChanges prints a turn's change set as it arrives, with the number
// /diff and /restore take: its place in /changes, which counts the turns
// that changed files only. It said "turn 1" after a conversation's fifth
// turn, the first to change a file, which read as the conversation's
// first turn.
func (r *repl) showChanges(ch *protocol.Changes) {
	r.scr.endLine()
	n := 0
	if r.fold != nil {
		n = len(r.fold.Checkpoints())
	}
	r.note(styleInfo, fmt.Sprintf("%s (/diff %d, /restore %d)", conversation.ChangesText(ch.Files, ch.Truncated), n, n))
}

// showRestored prints what a restore did, and its undo checkpoint.
func (r *repl) showRestored(d *protocol.Restored) {
	r.scr.endLine()
	r.note(styleOK, conversation.RestoredText(d))
	for _, f := range d.Files {
		style := ""
		if f.Status == protocol.FileFailed {
			style = styleError
		}
		r.note(style, "   "+sanitize(conversation.FileChangeText(f)))
	}
	r.note(styleDim, "/undo undoes the last restore (its undo checkpoint: "+d.Undo+").")
}

// showDiff prints a diff, coloured on a terminal.
func (r *repl) showDiff(d *protocol.DiffReply) {
	r.scr.endLine()
	for _, f := range d.Files {
		for _, l := range strings.Split(strings.TrimSuffix(f.Patch, "\n"), "\n") {
			style := ""
			switch {
			case strings.HasPrefix(l, "diff --git"), strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"), strings.HasPrefix(l, "index "):
				style = styleBold
			case strings.HasPrefix(l, "@@"):
				style = styleInfo
			case strings.HasPrefix(l, "+"):
				style = styleOK
			case strings.HasPrefix(l, "-"):
				style = styleError
			}
			r.note(style, sanitize(l))
		}
		if f.Truncated {
			r.note(styleWarn, conversation.DiffCut)
		}
	}
}
