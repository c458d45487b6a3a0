package ui

import (
	"context"
	"fmt"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// Checkpoints in the window (docs/checkpoints.md): under a turn that
// changed files, a card lists them ("3 files changed +12 −4"), each
// expandable to its diff (asked of the relay with copilot:diff when first
// opened, drawn as a tool row's diff is), with "Restore files to before
// this turn…" behind a confirmation that names what will change. A
// restore's notice offers Undo. A viewer's window shows neither button:
// the relay would refuse them. What the card knows (diffs, a restore on
// its way) is the fold's (conversation.Card); which files are open is the
// window's own (transcript.cardOpen).

// cardFiles is how many files a card lists; the rest are counted.
const cardFiles = 50

// cardDiffLines is how many lines of a file's diff show before "Show
// all".
const cardDiffLines = 200

// cardKey names one file of one card, for transcript.cardOpen.
func cardKey(checkpoint, path string) string { return checkpoint + "\x00" + path }

// changesView is a turn's changes card.
type changesView struct {
	t       *transcript
	obj     *fyne.Container
	bg      cardBackground
	title   *widget.Label
	files   *fyne.Container
	more    *widget.Label
	note    *widget.Label
	restore *rowButton
	lines   []*fileLine
	row     conversation.Row
}

// fileLine is one file of a card: a button that opens its diff (the
// file's mark and path), its counts, and under it the diff when open.
type fileLine struct {
	obj    *fyne.Container
	open   *rowButton
	counts *tintedText
	body   *fyne.Container
	path   string
}

func newChangesView(t *transcript) *changesView {
	v := &changesView{t: t}
	v.bg = newCardBackground(changesCard)
	v.title = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	v.files = container.NewVBox()
	v.more = widget.NewLabel("")
	v.more.SizeName = theme.SizeNameCaptionText
	v.note = widget.NewLabel("")
	v.note.Wrapping = fyne.TextWrapWord
	v.note.SizeName = theme.SizeNameCaptionText
	v.restore = t.newButton(conversation.RestoreButton, theme.HistoryIcon(), func() {
		if ch := v.row.Changes(); ch != nil {
			v.t.win.confirmRestore(ch.Checkpoint)
		}
	})
	head := container.NewBorder(nil, nil, widget.NewIcon(theme.DocumentIcon()), nil, v.title)
	foot := container.NewBorder(nil, nil, nil, v.restore, v.note)
	v.obj = container.NewStack(v.bg.rect, container.NewPadded(container.NewVBox(head, v.files, v.more, foot)))
	return v
}

func (v *changesView) set(r conversation.Row) {
	v.row = r
	v.bg.repaint()
	ch := r.Changes()
	card := r.Card()
	if card == nil {
		card = &conversation.Card{}
	}
	v.title.SetText(conversation.ChangesText(ch.Files, ch.Truncated))
	files := ch.Files[:min(len(ch.Files), cardFiles)]
	// The lines are kept and changed, not made anew: a button made anew
	// would take the keyboard from one that Tab reached.
	for i, f := range files {
		if i == len(v.lines) {
			v.lines = append(v.lines, v.newFileLine())
		}
		v.lines[i].set(ch.Checkpoint, f, card, v.t)
	}
	if len(v.files.Objects) != len(files) {
		objs := make([]fyne.CanvasObject, len(files))
		for i := range files {
			objs[i] = v.lines[i].obj
		}
		v.files.Objects = objs
		v.files.Refresh()
	}
	if n := len(ch.Files) - len(files); n > 0 || ch.Truncated {
		v.more.SetText(conversation.MoreFilesText(n, ch.Truncated) + " (pilotdesk chat's /changes lists them)")
		v.more.Show()
	} else {
		v.more.Hide()
	}
	var note []string
	if card.Error != "" {
		note = append(note, conversation.DiffRefusedText(card.Error))
	}
	switch {
	case v.t.win.role == protocol.RoleViewer:
		v.restore.Hide()
	case card.Restoring:
		v.restore.Show()
		v.restore.SetText(conversation.RestoringText)
		v.restore.Disable()
	default:
		v.restore.Show()
		v.restore.SetText(conversation.RestoreButton)
		v.restore.Enable()
	}
	v.note.SetText(strings.Join(note, "\n"))
	if len(note) > 0 {
		v.note.Show()
	} else {
		v.note.Hide()
	}
	relayout(v.obj)
}

func (v *changesView) newFileLine() *fileLine {
	l := &fileLine{}
	l.open = v.t.newButton("", theme.MenuExpandIcon(), func() {
		if ch := v.row.Changes(); ch != nil {
			v.t.toggleCardFile(ch.Checkpoint, l.path, l.open)
		}
	})
	l.open.Importance = widget.LowImportance
	l.open.Alignment = widget.ButtonAlignLeading
	l.counts = newTintedText(theme.SizeNameText, fyne.TextStyle{Monospace: true})
	l.body = container.NewVBox()
	l.body.Hide()
	l.obj = container.NewVBox(container.NewBorder(nil, nil, nil, l.counts, l.open), l.body)
	return l
}

func (l *fileLine) set(checkpoint string, f protocol.ChangedFile, card *conversation.Card, t *transcript) {
	l.path = f.Path
	if text := conversation.FileMark(f.Status) + "  " + f.Path; l.open.Text != text {
		l.open.SetText(text)
	}
	switch {
	case f.Binary:
		l.counts.set("binary", colorNameHint)
	default:
		l.counts.setParts(tint{fmt.Sprintf("+%d", f.Additions), colorSyntaxInserted}, tint{" ", theme.ColorNameForeground},
			tint{fmt.Sprintf("−%d", f.Deletions), colorSyntaxDeleted})
	}
	open := t.cardOpen[cardKey(checkpoint, f.Path)]
	if open == toolClosed {
		l.open.SetIcon(theme.MenuExpandIcon())
		l.body.RemoveAll()
		l.body.Hide()
		return
	}
	l.open.SetIcon(theme.MenuDropDownIcon())
	l.body.Objects = fileDiff(checkpoint, f, card, open, t)
	l.body.Show()
	relayout(l.body)
}

// fileDiff is the open part of a card's file: its diff, or why there is
// none to show yet.
func fileDiff(checkpoint string, f protocol.ChangedFile, card *conversation.Card, open toolOpen, t *transcript) []fyne.CanvasObject {
	p, ok := card.Patches[f.Path]
	switch {
	case card.Loading[f.Path]:
		return []fyne.CanvasObject{smallNote(conversation.DiffLoading)}
	case !ok:
		return []fyne.CanvasObject{smallNote(conversation.NoDiff)}
	}
	lines := conversation.PatchLines(p.Patch)
	if len(lines) == 0 {
		return []fyne.CanvasObject{smallNote(conversation.NoLinesText(f.Binary, p.Patch))}
	}
	var objs []fyne.CanvasObject
	limit := cardDiffLines
	if open == toolShowAll {
		limit = maxShownLines
	}
	shown := lines[:min(len(lines), limit)]
	objs = append(objs, diffView(shown))
	key := cardKey(checkpoint, f.Path)
	switch {
	case len(lines) > len(shown) && open != toolShowAll:
		all := t.newButton(conversation.ShowAllLinesText(len(lines)), nil, func() { t.setCardFile(key, toolShowAll, nil) })
		all.Importance = widget.LowImportance
		objs = append(objs, container.NewHBox(all))
	case len(lines) > len(shown):
		objs = append(objs, smallNote(conversation.FirstLinesText(len(shown), len(lines))+"; pilotdesk chat's /diff shows all"))
	}
	if p.Truncated {
		objs = append(objs, smallNote(conversation.DiffCut))
	}
	return objs
}

// toggleCardFile opens or closes one file of a card; opening it the first
// time asks the relay for its diff.
func (t *transcript) toggleCardFile(checkpoint, path string, by fyne.Focusable) {
	key := cardKey(checkpoint, path)
	if t.cardOpen[key] != toolClosed {
		t.setCardFile(key, toolClosed, by)
		return
	}
	t.win.askDiff(checkpoint, path)
	t.setCardFile(key, toolOpened, by)
}

// setCardFile sets how far a card's file is open and measures its row
// anew (as setOpen does for a tool row).
func (t *transcript) setCardFile(key string, o toolOpen, by fyne.Focusable) {
	if o == toolClosed {
		delete(t.cardOpen, key)
	} else {
		t.cardOpen[key] = o
	}
	checkpoint, _, _ := strings.Cut(key, "\x00")
	t.cardGen[checkpoint]++
	for id, r := range t.rows {
		if r.Changes() == nil || r.Changes().Checkpoint != checkpoint {
			continue
		}
		t.remeasureRow(id)
	}
	t.focusAfterToggle(by)
}

// askDiff asks the relay for the diff of one file of a card of the
// current conversation, unless the card has it or waits for it.
func (w *Window) askDiff(checkpoint, path string) {
	id := w.current
	if !w.store.AskDiff(id, checkpoint, path) {
		return
	}
	w.enqueue(func(ctx context.Context) {
		if err := w.client.Diff(ctx, id, checkpoint, path); err != nil {
			w.store.Apply(client.Event{Type: protocol.TypeError, Data: &protocol.Error{Type: protocol.TypeDiff, ConversationID: id, Message: "not sent: " + err.Error()}})
		}
	})
}

// confirmRestore asks before a restore to checkpoint, naming the files it
// changes, and that it undoes whatever else changed the folder since
// (another conversation working there too, by name).
func (w *Window) confirmRestore(checkpoint string) {
	if w.view.Streaming {
		w.store.AddNote(w.current, conversation.NoteWarn, conversation.RestoreBusy)
		return
	}
	files, others := w.store.RestoreEffects(w.current, checkpoint)
	lines, listBox := effectLines(files)
	question := widget.NewLabel(conversation.RestoreQuestion)
	question.Wrapping = fyne.TextWrapWord
	caveat := widget.NewLabel(conversation.RestoreCaveat(others))
	caveat.Wrapping = fyne.TextWrapWord
	if len(others) > 0 {
		caveat.Importance = widget.WarningImportance
	}
	c := &confirmation{id: checkpoint, text: conversation.RestoreQuestion + "\n" + strings.Join(lines, "\n") + "\n" + caveat.Text}
	id := w.current
	w.confirmAction(&w.restoring, c, "Restore the files?", container.NewVBox(question, listBox, caveat),
		"Restore", theme.HistoryIcon(), func() { w.restore(id, checkpoint) }, nil)
}

// effectLines are the files a restore or an undo changes, a line each,
// in a monospace label that scrolls beyond twelve.
func effectLines(files []conversation.RestoreItem) (lines []string, box fyne.CanvasObject) {
	lines = make([]string, 0, len(files))
	for _, f := range files {
		lines = append(lines, f.Path+"  ("+f.Effect+")")
	}
	list := widget.NewLabelWithStyle(strings.Join(lines, "\n"), fyne.TextAlignLeading, fyne.TextStyle{Monospace: true})
	box = list
	if len(lines) > 12 {
		s := container.NewVScroll(list)
		s.SetMinSize(fyne.NewSize(0, 12*theme.TextSize()*1.4))
		box = s
	}
	return lines, box
}

// confirmUndo undoes the current conversation's restore whose undo
// checkpoint is undo: at once when no turn changed files since, else
// after asking, naming the files those turns changed, which the undo
// takes back too (conversation.State.UndoDiscards).
func (w *Window) confirmUndo(undo string) {
	id := w.current
	discards := w.store.UndoDiscards(id, undo)
	if len(discards) == 0 {
		w.restore(id, undo)
		return
	}
	if w.view.Streaming {
		w.store.AddNote(id, conversation.NoteWarn, conversation.RestoreBusy)
		return
	}
	lines, listBox := effectLines(discards)
	question := widget.NewLabel(conversation.UndoQuestion)
	question.Wrapping = fyne.TextWrapWord
	c := &confirmation{id: undo, text: conversation.UndoQuestion + "\n" + strings.Join(lines, "\n")}
	w.confirmAction(&w.restoring, c, "Undo the restore?", container.NewVBox(question, listBox),
		"Undo", theme.ContentUndoIcon(), func() { w.restore(id, undo) }, nil)
}

// restore asks the relay to put conversation id's files back as they were
// at checkpoint (a card's Restore, confirmed, or a notice's Undo).
func (w *Window) restore(id, checkpoint string) {
	if id == w.current && w.view.Streaming {
		w.store.AddNote(id, conversation.NoteWarn, conversation.RestoreBusy)
		return
	}
	w.store.MarkRestoring(id, checkpoint)
	w.enqueue(func(ctx context.Context) {
		if err := w.client.Restore(ctx, id, checkpoint); err != nil {
			w.store.RestoreFailed(id)
			w.store.AddNote(id, conversation.NoteError, "Not restored: "+err.Error())
		}
	})
}

// restoredDetail lists the files a restore could not write, and why.
func restoredDetail(d *protocol.Restored) string {
	var failed []string
	for _, f := range d.Files {
		if f.Status == protocol.FileFailed {
			failed = append(failed, conversation.FileChangeText(f))
		}
	}
	return strings.Join(failed, "\n")
}
