package ui

import (
	"fmt"
	"path/filepath"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/ui/store"
)

// transcript is the chat history: a virtualised widget.List with one row
// per transcript row (a user turn, one markdown block, a code block, a tool
// call, a status line…). Each row's height is set with SetItemHeight: exact
// for rows that were shown or changed, estimated from their text for the
// rest of a long history, and corrected when they scroll into view.
//
// Everything here runs on the UI goroutine.
type transcript struct {
	win  *Window
	list *widget.List
	// rows are the conversation's rows from base on: the last
	// windowRows of a long one when it is opened, and older ones in
	// steps as the user scrolls up to the first (extendUp). The list,
	// cache, heights and the row views count from base: a row's index
	// here is its index in the conversation less base.
	rows      []conversation.Row
	base      int
	extending bool // an extendUp is scheduled
	cache     []rowCache
	// gen grows on every full reload, so that recycled row views know
	// their content belongs to another conversation.
	gen   uint64
	width float32
	// heights mirrors what the list was told, to know where the bottom is.
	heights []float32
	// loading makes Length report 0 while many heights are set, so that
	// each SetItemHeight (which refreshes the list) costs nothing.
	loading bool
	views   map[fyne.CanvasObject]*rowState
	measure *rowState
	// unit holds per-kind height estimates for the current width.
	unit map[conversation.RowKind]estimate
	// fixes are rows whose exact height was found while they were being
	// shown; they are applied after the list's own layout pass.
	fixes        map[int]float32
	fixScheduled bool
	// widthTimer debounces re-measuring after the width changes.
	widthTimer *time.Timer
	root       fyne.CanvasObject
	// box holds the list (setHeights may replace it).
	box   *fyne.Container
	empty fyne.CanvasObject
	// follow is true while the newest row is kept in view. It stops when
	// the user scrolls up and starts again when they scroll back down;
	// lastOffset is the offset the window itself last scrolled to.
	follow     bool
	lastOffset float32
	// unseen counts the messages that came below the view since the user
	// scrolled up; pill says so and jumps to them. pillCheck is true while
	// a look at whether the user scrolled down to them is scheduled (the
	// list does not say when it scrolls).
	unseen    int
	pill      *widget.Button
	pillCheck bool
	// hint is the empty conversation's greeting.
	hint *widget.Label
	// open says which tool rows are expanded, by tool call id, so that it
	// holds across reloads of the conversation.
	open map[string]toolOpen
	// ticks are the plan cards' ticked steps, by plan id, and ranPlans
	// the plans Run in Act was pressed for (until the prompt it sent is
	// in the conversation, conversation.PlanRan).
	ticks    map[string][]bool
	ranPlans map[string]bool
	// ranGen counts the times Run in Act prompts were given back, so that
	// a plan card shown as run redraws as runnable (planGivenBack).
	ranGen uint32
	// cardOpen says which files of the changes cards are open, by
	// cardKey, and cardGen counts the changes to a card's, by checkpoint,
	// so that a row view redraws its card (changes.go).
	cardOpen map[string]toolOpen
	cardGen  map[string]uint32
}

// emptyHint greets a conversation with nothing in it yet; with the
// scripted agent (agent "script") it says what runs: the built-in demo,
// and what to type first, or the scenario file --script named.
func emptyHint(opts Options) string {
	switch {
	case opts.Agent != "script":
		return emptyText
	case opts.Script != "":
		return "This is the scripted agent playing " + filepath.Base(opts.Script) + ": it answers as that scenario says.\n\n" + emptyText
	}
	return demoHint + "\n\n" + emptyText
}

const demoHint = "This is the built-in demo agent: type help to see what it can show."

const emptyText = `Type a prompt below and press Enter.

Act runs the agent's tool calls; Plan denies every one of them, so the agent can only describe what it would do. You can switch at any time, even while it works.

Shortcuts: Ctrl+N new conversation · Ctrl+L the prompt box · Ctrl+M Plan/Act · Esc or Ctrl+. stop`

type rowCache struct {
	version uint32
	segs    []widget.RichTextSegment
	// exact is true when height was measured at width.
	exact bool
	width float32
}

type estimate struct {
	base, perLine, charWidth float32
}

type rowKey struct {
	gen     uint64
	id      int
	version uint32
	open    toolOpen // a tool row's expansion
	card    uint32   // a changes card's files opened and closed (cardGen)
	ran     uint32   // a plan card's runs given back (ranGen)
}

func newTranscript(w *Window) *transcript {
	t := &transcript{win: w, views: map[fyne.CanvasObject]*rowState{}, fixes: map[int]float32{}, open: map[string]toolOpen{}, ticks: map[string][]bool{}, ranPlans: map[string]bool{}, cardOpen: map[string]toolOpen{}, cardGen: map[string]uint32{}}
	t.list = t.newList()
	t.measure = t.newRowState()
	t.hint = widget.NewLabel(emptyHint(w.opts))
	t.hint.Wrapping = fyne.TextWrapWord
	t.hint.Alignment = fyne.TextAlignCenter
	t.hint.Importance = widget.MediumImportance
	t.empty = container.NewPadded(container.NewVBox(layout.NewSpacer(), t.hint, layout.NewSpacer()))
	t.follow = true
	t.box = container.New(&widthWatcher{onWidth: t.widthChanged, onResized: t.resized}, t.list)
	t.pill = widget.NewButtonWithIcon("", theme.MoveDownIcon(), t.scrollToBottom)
	t.pill.Importance = widget.HighImportance
	t.pill.IconPlacement = widget.ButtonIconTrailingText
	t.pill.Hide()
	pill := container.NewVBox(layout.NewSpacer(), container.NewCenter(t.pill))
	t.root = container.NewStack(t.box, t.empty, newWheel(t), container.NewPadded(pill))
	return t
}

func (t *transcript) newList() *widget.List {
	l := widget.NewList(t.length, t.createItem, t.updateItem)
	l.HideSeparators = true
	l.OnSelected = func(id widget.ListItemID) { l.Unselect(id) }
	return l
}

func (t *transcript) length() int {
	if t.loading {
		return 0
	}
	return len(t.rows)
}

// createItem makes a row view. It is registered in views when the list
// first shows a row in it (updateItem): the list also makes one each time
// it is refreshed, only to read its minimum size, and those are never shown.
func (t *transcript) createItem() fyne.CanvasObject {
	return t.newRowState().root
}

func (t *transcript) updateItem(id widget.ListItemID, obj fyne.CanvasObject) {
	s := rowStateOf(obj)
	if s == nil || id < 0 || id >= len(t.rows) {
		return
	}
	if t.views[obj] == nil {
		t.pruneViews()
		t.views[obj] = s
	}
	if id < prefetchRows && t.base > 0 && !t.extending {
		// The view came near the first rows held: fetch older ones once
		// this layout is over, before the user reaches the top.
		t.extending = true
		t.win.later(0, t.extendUp)
	}
	r := t.rows[id]
	key := t.keyOf(id, r)
	if s.key == key && s.width == t.width {
		return
	}
	s.show(id, r, t.segments(id))
	s.key, s.width = key, t.width
	c := &t.cache[id]
	if t.width > 0 && !(c.exact && c.width == t.width) {
		h := s.measureAt(t.width)
		c.exact, c.width = true, t.width
		if h != t.heights[id] {
			t.fixes[id] = h
			t.scheduleFixes()
		}
	}
}

// keyOf is what row id's view must show again when it changes.
func (t *transcript) keyOf(id int, r conversation.Row) rowKey {
	k := rowKey{t.gen, id, r.Version, t.openOf(r), 0, 0}
	if r.Changes() != nil {
		k.card = t.cardGen[r.Changes().Checkpoint]
	}
	if r.Kind == conversation.RowPlan {
		k.ran = t.ranGen
	}
	return k
}

// segments returns row id's parsed markdown, parsing it only when it changed.
func (t *transcript) segments(id int) []widget.RichTextSegment {
	r := t.rows[id]
	if r.Kind != conversation.RowText {
		return nil
	}
	c := &t.cache[id]
	if c.segs == nil || c.version != r.Version {
		c.segs = parseMarkdown(r.Text)
		c.version = r.Version
	}
	return c.segs
}

// apply shows what the model says changed in the current conversation.
func (t *transcript) apply(v store.View) {
	defer func() {
		if len(t.rows) == 0 {
			t.empty.Show()
		} else {
			t.empty.Hide()
		}
	}()
	follow := t.following()
	if v.Full {
		t.base = v.From
		t.reload(v.Rows)
		t.scrollToBottom()
		return
	}
	// Indexes from here on count from base; a change to a row older than
	// that is not held (it is fetched as it is when scrolled to).
	var changed []int
	var rows []conversation.Row
	for k, i := range v.Changed {
		if i >= t.base {
			changed = append(changed, i-t.base)
			rows = append(rows, v.Rows[k])
		}
	}
	if len(changed) == 0 {
		return
	}
	n := v.NumRows - t.base
	if follow && n > windowRows+extendChunk {
		// Rows came at the bottom while it is followed: hold the last
		// windowRows again (the scrolled-off ones return from the store
		// as the user scrolls up).
		t.base = v.NumRows - windowRows
		t.reload(t.win.store.Rows(t.win.current, t.base, v.NumRows))
		t.scrollToBottom()
		return
	}
	appended := n > len(t.rows)
	if appended && !follow {
		defer t.cameBelow(len(t.rows))
	}
	if appended {
		t.rows = append(t.rows, make([]conversation.Row, n-len(t.rows))...)
		t.cache = append(t.cache, make([]rowCache, n-len(t.cache))...)
		t.heights = append(t.heights, make([]float32, n-len(t.heights))...)
	}
	for k, i := range changed {
		t.rows[i] = rows[k]
		t.cache[i].exact = false
	}
	if !appended && len(changed) == 1 {
		// The common case while streaming: the tail block grew. Update its
		// row in place; the list is touched only when its height changed.
		i := changed[0]
		h, shown := t.updateShown(i)
		if !shown {
			h = t.estimate(t.rows[i])
		}
		if !t.rows[i].Done {
			// A block still streaming gets room to grow by a few lines, so
			// that the list (whose refresh costs grow with the history) is
			// told a new height every few lines rather than every line.
			h = growRoom(h)
		}
		if h != t.heights[i] {
			t.heights[i] = h
			t.list.SetItemHeight(i, h)
			if follow {
				t.scrollToBottom()
			}
		}
		return
	}
	hs := make(map[int]float32, len(changed))
	for _, i := range changed {
		if h, shown := t.updateShown(i); shown {
			hs[i] = h
		} else {
			hs[i] = t.measureRow(i)
		}
	}
	t.setHeights(hs)
	if follow {
		t.scrollToBottom()
	}
}

// reveal scrolls the list by the least that brings obj, a focused part of
// a row it shows (a link Tab reached in a row cut by the view's edge),
// wholly into view; the top of obj when it is taller than the view.
func (t *transcript) reveal(obj fyne.CanvasObject) {
	d := fyne.CurrentApp().Driver()
	top := d.AbsolutePositionForObject(obj).Y - d.AbsolutePositionForObject(t.list).Y
	bottom, view := top+obj.Size().Height, t.list.Size().Height
	switch {
	case top < 0 || bottom-top > view:
		t.list.ScrollToOffset(t.list.GetScrollOffset() + top)
	case bottom > view:
		t.list.ScrollToOffset(t.list.GetScrollOffset() + bottom - view)
	}
}

func (t *transcript) scrollToBottom() {
	t.list.ScrollToBottom()
	t.lastOffset = t.list.GetScrollOffset()
	t.follow = true
	t.seen()
}

// seen hides the pill: the newest rows are in view.
func (t *transcript) seen() {
	t.unseen = 0
	if t.pill.Visible() {
		t.pill.Hide()
	}
}

// cameBelow counts the messages among rows from, just appended while the
// user reads above them, and shows the pill that says so.
func (t *transcript) cameBelow(from int) {
	for i := from; i < len(t.rows); i++ {
		switch r := t.rows[i]; r.Kind {
		case conversation.RowUser, conversation.RowTool, conversation.RowPlan:
			t.unseen++
		case conversation.RowText, conversation.RowCode:
			if i == 0 || t.rows[i-1].MessageID != r.MessageID {
				t.unseen++
			}
		}
	}
	if t.unseen == 0 {
		return
	}
	text := "1 new message"
	if t.unseen > 1 {
		text = fmt.Sprintf("%d new messages", t.unseen)
	}
	t.pill.SetText(text)
	t.pill.Show()
	t.lookForBottom()
}

// lookForBottom hides the pill once the user scrolled down to the newest
// rows, looking four times a second while it shows.
func (t *transcript) lookForBottom() {
	if t.pillCheck || !t.pill.Visible() {
		return
	}
	t.pillCheck = true
	t.win.later(250*time.Millisecond, func() {
		t.pillCheck = false
		if t.atBottom() {
			t.follow = true
			t.seen()
			return
		}
		t.lookForBottom()
	})
}

// scrollToTop shows the first row held (the keyboard's Home); the list
// fetches older ones as it does when the user scrolls there.
func (t *transcript) scrollToTop() {
	t.list.ScrollToTop()
	t.lastOffset = t.list.GetScrollOffset()
	t.follow = t.atBottom()
}

// scrollBy scrolls the transcript by dy (down for a positive dy), as
// the wheel does.
func (t *transcript) scrollBy(dy float32) {
	t.list.ScrollToOffset(max(0, t.list.GetScrollOffset()+dy))
	t.lastOffset = t.list.GetScrollOffset()
	t.follow = t.atBottom()
	if t.follow {
		t.seen()
	}
}

// wheelScrolled scrolls by a wheel event, the platform's distance a
// notch (wheelDistance), wherever in the window the wheel turned.
func (t *transcript) wheelScrolled(e *fyne.ScrollEvent) {
	t.scrollBy(-wheelDistance(e.Scrolled.DY, t.list.Size().Height))
}

// page scrolls a view's height down (dir 1) or up (-1) less two lines,
// which stay in view for context (the keyboard's PageDown and PageUp).
func (t *transcript) page(dir int) {
	step := max(t.list.Size().Height-2*theme.TextSize()*1.5, theme.TextSize())
	t.list.ScrollToOffset(max(0, t.list.GetScrollOffset()+float32(dir)*step))
	t.lastOffset = t.list.GetScrollOffset()
	t.follow = t.atBottom()
}

// following reports whether new rows should scroll into view: the window
// follows the bottom unless the user scrolled up since it last scrolled.
func (t *transcript) following() bool {
	switch {
	case t.atBottom():
		t.follow = true
		t.seen()
	case t.list.GetScrollOffset() < t.lastOffset-1:
		t.follow = false // the user scrolled up
	}
	return t.follow
}

// resized keeps the bottom in view when the list gets shorter (the plan
// banner or the waiting indicator appeared below it).
func (t *transcript) resized() {
	if t.follow && !t.atBottom() && len(t.rows) > 0 {
		t.scrollToBottom()
	}
}

// growStep is the slack given to a streaming block, about three lines.
const growStep = 64

func growRoom(h float32) float32 {
	return float32(int(h/growStep)+1) * growStep
}

// updateShown redraws row i in place if it is on screen and returns its
// height; shown is false when it is not on screen. Every view that last
// showed row i is redrawn: the list keeps views it scrolled away in a pool,
// still holding their row, and which of them is on screen is not known
// here (redrawing only the first found left the shown one stale).
func (t *transcript) updateShown(i int) (h float32, shown bool) {
	r := t.rows[i]
	for _, s := range t.views {
		if s.key.gen != t.gen || s.key.id != i || s.width != t.width {
			continue
		}
		s.show(i, r, t.segments(i))
		s.key = t.keyOf(i, r)
		h = s.measureAt(t.width)
		shown = true
	}
	if shown {
		t.cache[i].exact, t.cache[i].width = true, t.width
	}
	return h, shown
}

// maxViews is how many row views views keeps before pruneViews drops the
// ones the list no longer shows.
const maxViews = 96

// pruneViews forgets the row views that show no row in or near the view.
// The list drops views from its pool (at a refresh, and its pool is a
// sync.Pool), and those would stay in views for ever. A view forgotten
// here that the list shows again is registered again by updateItem, and
// redrawn if its row changed meanwhile (its key has the row's version).
func (t *transcript) pruneViews() {
	if len(t.views) <= maxViews {
		return
	}
	first, last := t.shownRange()
	for o, s := range t.views {
		if s.key.id < first-extendMargin || s.key.id > last+extendMargin {
			delete(t.views, o)
		}
	}
}

// shownRange returns the first and last rows in view.
func (t *transcript) shownRange() (first, last int) {
	offset := t.list.GetScrollOffset()
	bottom := offset + t.list.Size().Height
	pad := theme.Padding()
	var y float32
	first, last = -1, len(t.heights)-1
	for i, h := range t.heights {
		if first < 0 && y+h >= offset {
			first = i
		}
		if y > bottom {
			last = i
			break
		}
		y += h + pad
	}
	return max(first, 0), last
}

// reload replaces every row (a conversation switch, a reset).
func (t *transcript) reload(rows []conversation.Row) {
	t.gen++
	t.rows = rows
	t.cache = make([]rowCache, len(rows))
	t.heights = make([]float32, len(rows))
	clear(t.fixes)
	all := make(map[int]float32, len(rows))
	// Measure the rows near the bottom, which are shown first; estimate the
	// rest until they scroll into view.
	exactFrom := max(0, len(rows)-60)
	for i := range rows {
		if i >= exactFrom {
			all[i] = t.measureRow(i)
		} else {
			all[i] = t.estimate(rows[i])
		}
	}
	t.setHeights(all)
}

// setHeights tells the list new heights. A few are set one by one (each
// refreshes the list, whose rows skip work when unchanged); many at once
// with the list emptied for the time being, then refreshed once.
func (t *transcript) setHeights(hs map[int]float32) {
	if len(hs) <= 4 {
		// SetItemHeight refreshes the whole list (rows that did not change
		// skip their work); without one the list still needs to learn its
		// new length.
		told := false
		for i, h := range hs {
			if h != t.heights[i] {
				t.heights[i] = h
				t.list.SetItemHeight(i, h)
				told = true
			}
		}
		if !told {
			t.list.Refresh()
		}
		return
	}
	offset := t.list.GetScrollOffset()
	if len(hs) > bulkHeights {
		t.replaceList(hs, offset)
		return
	}
	t.loading = true
	for i, h := range hs {
		t.heights[i] = h
		t.list.SetItemHeight(i, h)
	}
	t.loading = false
	t.list.Refresh()
	t.list.ScrollToOffset(offset)
}

// windowRows is how many of a conversation's last rows the transcript
// holds when it is opened, and extendChunk how many older ones it adds each
// time the view comes within prefetchRows rows of the first row it holds,
// so that they are there before the user scrolls to them. widget.List adds
// every row's height up at each layout (each frame that draws the list):
// with 17,000 rows a frame of the cursor's blink cost a third more than in
// an empty conversation. Adding rows above gives the list every height
// anew (it keys them by index) and so makes new views for the rows on
// screen: a few large steps, taken early, cost less than many small ones.
const (
	windowRows   = 400
	extendChunk  = 400
	prefetchRows = 120
	extendMargin = 8
)

// extendUp adds up to extendChunk rows older than base, fetched from the
// store, above the rows held, and keeps the rows on screen where they are.
func (t *transcript) extendUp() {
	t.extending = false
	if t.base == 0 {
		return
	}
	// The list lays rows out that it does not end up showing (a new list
	// before it scrolls to the bottom): extend only if the view is near
	// the first rows now.
	if first, _ := t.shownRange(); first >= prefetchRows {
		return
	}
	// The user scrolled up to here: new rows must not pull the list down
	// (the list's own scrolling does not tell the transcript).
	t.follow = false
	from := max(0, t.base-extendChunk)
	older := t.win.store.Rows(t.win.current, from, t.base)
	if len(older) != t.base-from {
		return // the conversation changed under us; the next take redraws it
	}
	n := len(older)
	offset := t.list.GetScrollOffset()
	t.gen++ // row views' indexes all move by n
	t.base = from
	t.rows = append(older, t.rows...)
	t.cache = append(make([]rowCache, n), t.cache...)
	heights := make([]float32, n, n+len(t.heights))
	added := float32(0)
	for i := range older {
		heights[i] = t.estimate(older[i])
		added += heights[i] + theme.Padding()
	}
	t.heights = append(heights, t.heights...)
	clear(t.fixes)
	t.replaceList(nil, offset+added)
	t.lastOffset = t.list.GetScrollOffset()
}

// bulkHeights is how many heights setHeights sets on the list itself; more
// go to a new list. Each SetItemHeight refreshes the list, and a refresh
// adds up every height it was told: n heights cost n² steps, which for a
// 5,000-message conversation (17,000 rows) was ten seconds.
const bulkHeights = 300

// replaceList gives every row's height to a new list, which has not been
// drawn yet and so does no refresh per height, and puts it in the old
// one's place, scrolled to offset.
func (t *transcript) replaceList(hs map[int]float32, offset float32) {
	for i, h := range hs {
		t.heights[i] = h
	}
	old := t.list
	l := t.newList()
	for i, h := range t.heights {
		l.SetItemHeight(i, h)
	}
	clear(t.views) // the old list's row views go with it
	t.list = l
	t.box.Objects[0] = l
	// Sized now, it has its scroller and can scroll before it is drawn.
	l.Resize(old.Size())
	t.box.Refresh()
	l.ScrollToOffset(offset)
}
