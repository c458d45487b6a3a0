package ui

import (
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
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
	// cardOpen says which files of the changes cards are open, by
	// cardKey, and cardGen counts the changes to a card's, by checkpoint,
	// so that a row view redraws its card (changes.go).
	cardOpen map[string]toolOpen
	cardGen  map[string]uint32
}

// emptyHint greets a conversation with nothing in it yet; with the
// built-in demo agent (agent "script") it says what to type first.
func emptyHint(agent string) string {
	if agent == "script" {
		return demoHint + "\n\n" + emptyText
	}
	return emptyText
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
}

func newTranscript(w *Window) *transcript {
	t := &transcript{win: w, views: map[fyne.CanvasObject]*rowState{}, fixes: map[int]float32{}, open: map[string]toolOpen{}, ticks: map[string][]bool{}, ranPlans: map[string]bool{}, cardOpen: map[string]toolOpen{}, cardGen: map[string]uint32{}}
	t.list = t.newList()
	t.measure = t.newRowState()
	t.hint = widget.NewLabel(emptyHint(w.opts.Agent))
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
	k := rowKey{t.gen, id, r.Version, t.openOf(r), 0}
	if r.Changes != nil {
		k.card = t.cardGen[r.Changes.Checkpoint]
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

// measureRow returns row i's exact height at the current width.
func (t *transcript) measureRow(i int) float32 {
	if t.width <= 0 {
		return t.estimate(t.rows[i])
	}
	t.measure.show(i, t.rows[i], t.segments(i))
	t.measure.key = rowKey{}
	h := t.measure.measureAt(t.width)
	t.cache[i].exact, t.cache[i].width = true, t.width
	return h
}

// estimate guesses a row's height from its text length.
func (t *transcript) estimate(r conversation.Row) float32 {
	width := t.width
	if width <= 0 {
		width = 600
	}
	if t.unit == nil {
		t.calibrate(width)
	}
	switch r.Kind {
	case conversation.RowPlan:
		// A title, a line per step and the button's line.
		return float32(len(r.Steps)+2) * 2 * theme.TextSize()
	case conversation.RowAgentPlan:
		// A title and a line per step.
		return float32(len(r.Entries)+1) * 2 * theme.TextSize()
	case conversation.RowReasoning:
		// Collapsed, one line; expanded it is measured.
		return 2 * theme.TextSize()
	}
	if r.Changes != nil {
		// A title, a line per file and the Restore button's line.
		return float32(min(len(r.Changes.Files), cardFiles)+2) * 2.4 * theme.TextSize()
	}
	u := t.unit[r.Kind]
	if u.charWidth <= 0 {
		return u.base
	}
	perLine := max(1, int((width-4*theme.Padding())/u.charWidth))
	lines := 0
	for _, l := range strings.Split(r.Text, "\n") {
		lines += 1 + utf8.RuneCountInString(l)/perLine
	}
	return u.base + float32(max(lines-1, 0))*u.perLine
}

// calibrate measures one- and two-line rows of each kind at width.
func (t *transcript) calibrate(width float32) {
	t.unit = map[conversation.RowKind]estimate{}
	th := theme.Current()
	textW := fyne.MeasureText("The quick brown fox jumps over the lazy dog", th.Size(theme.SizeNameText), fyne.TextStyle{}).Width / 43
	monoW := fyne.MeasureText("0123456789", th.Size(theme.SizeNameText), fyne.TextStyle{Monospace: true}).Width / 10
	for _, k := range []conversation.RowKind{conversation.RowUser, conversation.RowText, conversation.RowCode, conversation.RowTool, conversation.RowStatus, conversation.RowMode, conversation.RowNote} {
		one := conversation.Row{Kind: k, Text: "x", State: conversation.NoteInfo}
		two := one
		two.Text = "x\nx"
		t.measure.show(-1, one, parseMarkdown(one.Text))
		h1 := t.measure.measureAt(width)
		t.measure.show(-1, two, parseMarkdown(two.Text))
		h2 := t.measure.measureAt(width)
		cw := textW
		if k == conversation.RowCode {
			cw = monoW
		}
		t.unit[k] = estimate{base: h1, perLine: max(h2-h1, 0), charWidth: cw}
	}
	t.measure.key = rowKey{}
}

// scheduleFixes applies heights found during the list's layout once that
// layout is over (SetItemHeight from inside it would re-enter it).
func (t *transcript) scheduleFixes() {
	if t.fixScheduled {
		return
	}
	t.fixScheduled = true
	t.win.later(0, t.applyFixes)
}

func (t *transcript) applyFixes() {
	t.fixScheduled = false
	if len(t.fixes) == 0 {
		return
	}
	follow := t.following()
	fixes := t.fixes
	t.fixes = map[int]float32{}
	// Rows above the top of the view that change height would move what
	// the user reads: the view moves with them (an estimate corrected as
	// the list lays a row out just above the view, rows just added above
	// by extendUp).
	offset := t.list.GetScrollOffset()
	var moved float32
	for i, h := range fixes {
		if i >= len(t.rows) {
			delete(fixes, i)
			continue
		}
		if !follow && t.rowTop(i) < offset {
			moved += h - t.heights[i]
		}
	}
	t.setHeights(fixes)
	if follow {
		t.scrollToBottom()
	} else if moved != 0 {
		t.list.ScrollToOffset(offset + moved)
		t.lastOffset = t.list.GetScrollOffset()
	}
}

// rowTop is where row i begins in the list.
func (t *transcript) rowTop(i int) float32 {
	var y float32
	for _, h := range t.heights[:i] {
		y += h
	}
	return y + float32(i)*theme.Padding()
}

// atBottom reports whether the newest row is in view (follow mode).
func (t *transcript) atBottom() bool {
	if len(t.rows) == 0 {
		return true
	}
	pad := theme.Padding()
	var total float32
	for _, h := range t.heights {
		total += h
	}
	total += pad * float32(len(t.heights)-1)
	view := t.list.Size().Height
	// The margin is what is drawn below the text: the padding, and the
	// room a streaming block is given to grow into (growRoom), blank
	// until its lines come.
	margin := 2 * pad
	if !t.rows[len(t.rows)-1].Done {
		margin += growStep
	}
	return total <= view || t.list.GetScrollOffset()+view >= total-margin
}

func (t *transcript) widthChanged(w float32) {
	if w == t.width {
		return
	}
	first := t.width == 0
	t.width = w
	t.unit = nil
	if first {
		t.remeasure()
		return
	}
	// Dragging a window edge changes the width many times a second: wait
	// for it to settle before measuring again.
	if t.widthTimer != nil {
		t.widthTimer.Stop()
	}
	t.widthTimer = t.win.later(120*time.Millisecond, t.remeasure)
}

// remeasure recomputes every height for the current width.
func (t *transcript) remeasure() {
	if len(t.rows) == 0 {
		return
	}
	follow := t.following()
	// Scrolled up, the row at the top of the view stays there: every
	// height above it changes with the width (most to an estimate), and
	// the view would otherwise jump to other rows.
	anchor, into := 0, float32(0)
	if !follow {
		anchor, _ = t.shownRange()
		into = t.list.GetScrollOffset() - t.rowTop(anchor)
	}
	rows := t.rows
	t.gen++ // every visible row must be laid out again
	hs := make(map[int]float32, len(rows))
	exactFrom := max(0, len(rows)-60)
	for i := range rows {
		t.cache[i].exact = false
		if i >= exactFrom {
			hs[i] = t.measureRow(i)
		} else {
			hs[i] = t.estimate(rows[i])
		}
	}
	t.setHeights(hs)
	if follow {
		t.scrollToBottom()
		return
	}
	t.list.ScrollToOffset(max(0, t.rowTop(anchor)+min(into, t.heights[anchor])))
	t.lastOffset = t.list.GetScrollOffset()
}

// widthWatcher lays out its only child at full size and reports width
// changes.
type widthWatcher struct {
	onWidth   func(float32)
	onResized func()
}

func (l *widthWatcher) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	l.onWidth(size.Width)
	for _, o := range objs {
		o.Resize(size)
		o.Move(fyne.NewPos(0, 0))
	}
	l.onResized()
}

func (l *widthWatcher) MinSize(objs []fyne.CanvasObject) fyne.Size {
	return fyne.NewSize(200, 100)
}

// ---- row views ----

// rowState is one list row: a stack holding the view of the row's kind.
type rowState struct {
	t     *transcript
	root  *fyne.Container
	key   rowKey
	width float32
	cur   fyne.CanvasObject

	user  *userView
	text  *widget.RichText
	links linkCopies // text's own copies of the link pieces it shows
	code  *codeView
	tool  *toolView
	plan  *planView
	line  *lineView
	// reasoning and agentPlan: agentrows.go
	reasoning *reasoningView
	agentPlan *agentPlanView
	changes   *changesView // changes.go
}

func (t *transcript) newRowState() *rowState {
	s := &rowState{t: t}
	s.links.reveal = t.reveal
	s.root = container.New(&rowLayout{s: s, stack: layout.NewStackLayout()})
	return s
}

// rowLayout stacks a row view's parts, as container.NewStack does, and
// leads from the view the list holds to its rowState.
type rowLayout struct {
	s     *rowState
	stack fyne.Layout
}

func (l *rowLayout) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	l.stack.Layout(objs, size)
}

func (l *rowLayout) MinSize(objs []fyne.CanvasObject) fyne.Size {
	return l.stack.MinSize(objs)
}

// rowStateOf returns the rowState of a row view made by createItem.
func rowStateOf(obj fyne.CanvasObject) *rowState {
	if c, ok := obj.(*fyne.Container); ok {
		if l, ok := c.Layout.(*rowLayout); ok {
			return l.s
		}
	}
	return nil
}

func (s *rowState) show(id int, r conversation.Row, segs []widget.RichTextSegment) {
	var obj fyne.CanvasObject
	switch r.Kind {
	case conversation.RowUser:
		if s.user == nil {
			s.user = newUserView()
		}
		s.user.set(r)
		obj = s.user.obj
	case conversation.RowText:
		if s.text == nil {
			s.text = widget.NewRichText()
			s.text.Wrapping = fyne.TextWrapWord
		}
		s.text.Segments = s.links.bind(segs)
		s.text.Refresh()
		obj = s.text
	case conversation.RowCode:
		if s.code == nil {
			s.code = newCodeView(s.t)
		}
		s.code.set(r)
		obj = s.code.obj
	case conversation.RowTool:
		if s.tool == nil {
			s.tool = newToolView(s.t)
		}
		s.tool.set(id, r, s.t.openOf(r))
		obj = s.tool.obj
	case conversation.RowPlan:
		if s.plan == nil {
			s.plan = newPlanView(s.t)
		}
		s.plan.set(id, s.t.rows)
		obj = s.plan.obj
	case conversation.RowReasoning:
		if s.reasoning == nil {
			s.reasoning = newReasoningView(s.t)
		}
		s.reasoning.set(id, r, s.t.openOf(r))
		obj = s.reasoning.obj
	case conversation.RowAgentPlan:
		if s.agentPlan == nil {
			s.agentPlan = newAgentPlanView()
		}
		s.agentPlan.set(r)
		obj = s.agentPlan.obj
	case conversation.RowNote:
		if r.Changes == nil {
			obj = s.showLine(id, r)
			break
		}
		if s.changes == nil {
			s.changes = newChangesView(s.t)
		}
		s.changes.set(r)
		obj = s.changes.obj
	default:
		obj = s.showLine(id, r)
	}
	if obj == s.cur {
		return
	}
	if s.cur != nil {
		s.cur.Hide()
	}
	found := false
	for _, o := range s.root.Objects {
		if o == obj {
			found = true
			break
		}
	}
	if !found {
		s.root.Add(obj)
	}
	obj.Show()
	s.cur = obj
}

func (s *rowState) showLine(id int, r conversation.Row) fyne.CanvasObject {
	if s.line == nil {
		s.line = newLineView(s.t)
	}
	s.line.set(id, r)
	return s.line.obj
}

// measureAt returns the height the row needs at width. The row is resized
// only when its width differs: wrapped text already fits its width, and a
// resize of a RichText costs two layout passes over its text.
func (s *rowState) measureAt(width float32) float32 {
	if s.cur == nil {
		return 0
	}
	if s.cur.Size().Width != width {
		h := max(s.cur.Size().Height, 1)
		s.root.Resize(fyne.NewSize(width, h))
		s.cur.Resize(fyne.NewSize(width, h))
	} else if c, ok := s.cur.(*fyne.Container); ok {
		// Same width, but parts may have been shown or hidden (a copy
		// button, a detail line): lay the boxes out again so that wrapped
		// labels get their new widths before they are measured.
		relayout(c)
	}
	return wholePixels(s.cur.MinSize().Height)
}

// wholePixels rounds a row's height up to a whole pixel. The list adds its
// rows' heights up in map order, which differs from one call to the next:
// with fractions, a long history's total then differs in its last bits
// each time, and Fyne lays the list out and repaints the window again, at
// 60 frames a second, for as long as the conversation is shown. Estimates
// are sums of measured heights, so they are whole too.
func wholePixels(h float32) float32 {
	return float32(math.Ceil(float64(h)))
}

// relayout runs the layouts of c and of the containers inside it, without
// refreshing any widget.
func relayout(c *fyne.Container) {
	if c.Layout != nil {
		c.Layout.Layout(c.Objects, c.Size())
	}
	for _, o := range c.Objects {
		if cc, ok := o.(*fyne.Container); ok && cc.Visible() {
			relayout(cc)
		}
	}
}

// userView is the user's prompt in a tinted box.
type userView struct {
	obj  fyne.CanvasObject
	bg   *canvas.Rectangle
	mode *widget.Label
	text *widget.Label
}

func newUserView() *userView {
	v := &userView{}
	v.bg = canvas.NewRectangle(colors(theme.Current()).userBackground)
	v.bg.CornerRadius = theme.InputRadiusSize()
	who := widget.NewLabelWithStyle("You", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	who.SizeName = theme.SizeNameCaptionText
	v.mode = widget.NewLabel("")
	v.mode.Importance = widget.WarningImportance
	v.mode.SizeName = theme.SizeNameCaptionText
	v.text = widget.NewLabel("")
	v.text.Wrapping = fyne.TextWrapWord
	v.text.Selectable = true
	head := container.NewHBox(who, v.mode)
	v.obj = container.NewStack(v.bg, container.NewBorder(head, nil, nil, nil, v.text))
	return v
}

func (v *userView) set(r conversation.Row) {
	v.bg.FillColor = colors(theme.Current()).userBackground
	v.bg.Refresh()
	if r.Mode == protocol.ModePlan {
		v.mode.SetText("plan mode")
		v.mode.Show()
	} else {
		v.mode.Hide()
	}
	v.text.SetText(r.Text)
}

// codeView is a fenced code block: monospace, selectable, with a copy button.
type codeView struct {
	obj    fyne.CanvasObject
	bg     *canvas.Rectangle
	lang   *widget.Label
	code   *widget.RichText // highlighted by highlight
	text   string
	hlLang string // what code shows, to highlight only on change
}

func newCodeView(t *transcript) *codeView {
	v := &codeView{}
	v.bg = canvas.NewRectangle(colors(theme.Current()).codeBackground)
	v.bg.CornerRadius = theme.InputRadiusSize()
	v.lang = widget.NewLabel("")
	v.lang.SizeName = theme.SizeNameCaptionText
	v.lang.TextStyle = fyne.TextStyle{Italic: true}
	var copyBtn *rowButton
	copyBtn = t.newButton("Copy", theme.ContentCopyIcon(), func() {
		t.win.copyText(v.text)
		t.win.sayCopied(&copyBtn.Button)
	})
	copyBtn.Importance = widget.LowImportance
	v.code = widget.NewRichText()
	v.code.Wrapping = fyne.TextWrapBreak
	head := container.NewBorder(nil, nil, v.lang, copyBtn)
	body := container.NewPadded(v.code) // its colours are the app theme's (appTheme)
	v.obj = container.NewStack(v.bg, container.NewBorder(head, nil, nil, nil, body))
	return v
}

func (v *codeView) set(r conversation.Row) {
	v.bg.FillColor = colors(theme.Current()).codeBackground
	v.bg.Refresh()
	lang := r.Lang
	if lang == "" {
		lang = "code"
	}
	v.lang.SetText(lang)
	if r.Text != v.text || r.Lang != v.hlLang || v.code.Segments == nil {
		v.code.Segments = highlight(r.Text, r.Lang)
		v.code.Refresh()
	}
	v.text, v.hlLang = r.Text, r.Lang
}

// lineView shows a status line, a mode marker or a note: an icon and a
// wrapped, selectable line, with a "Copy reply" button under a finished turn.
type lineView struct {
	win    *Window
	obj    fyne.CanvasObject
	icon   *widget.Icon
	text   *widget.Label
	detail *widget.Label
	copy   *rowButton
	// undo restores a restore's undo checkpoint (changes.go).
	undo     *rowButton
	restored *protocol.Restored
	idx      int
}

func newLineView(t *transcript) *lineView {
	v := &lineView{win: t.win}
	v.icon = widget.NewIcon(theme.InfoIcon())
	v.text = widget.NewLabel("")
	v.text.Wrapping = fyne.TextWrapWord
	v.text.Selectable = true
	v.detail = widget.NewLabel("")
	v.detail.Wrapping = fyne.TextWrapWord
	v.detail.Selectable = true
	v.detail.SizeName = theme.SizeNameCaptionText
	v.copy = t.newButton("Copy reply", theme.ContentCopyIcon(), func() {
		t.win.copyReplyBefore(v.idx)
		t.win.sayCopied(&v.copy.Button)
	})
	v.copy.Importance = widget.LowImportance
	v.undo = t.newButton("Undo", theme.ContentUndoIcon(), func() {
		if d := v.restored; d != nil {
			t.win.restore(t.win.current, d.Undo)
		}
	})
	v.undo.Hide()
	v.obj = container.NewBorder(nil, nil, container.New(firstLineLayout{}, v.icon), container.NewVBox(v.copy, v.undo), container.NewVBox(v.text, v.detail))
	return v
}

// setUndo shows Undo on a restore's notice, to a window that may restore:
// "Undoing…" while it is on its way, "Undone" once it was.
func (v *lineView) setUndo(r conversation.Row) {
	v.restored = r.Restored
	if r.Restored == nil || v.win.role == protocol.RoleViewer {
		v.undo.Hide()
		return
	}
	v.undo.Show()
	switch c := r.Card; {
	case c != nil && c.Undone:
		v.undo.SetText("Undone")
		v.undo.Disable()
	case c != nil && c.Restoring:
		v.undo.SetText("Undoing…")
		v.undo.Disable()
	default:
		v.undo.SetText("Undo")
		v.undo.Enable()
	}
}

// firstLineLayout places an icon level with the first line of the Label
// beside it. A Label draws its text inside the theme's inner padding and
// an icon fills its box, so an icon at the top of the row sat half a line
// above the text.
type firstLineLayout struct{}

func (firstLineLayout) MinSize(objs []fyne.CanvasObject) fyne.Size {
	s := objs[0].MinSize()
	return fyne.NewSize(s.Width, max(s.Height, labelLineHeight(objs[0])))
}

func (firstLineLayout) Layout(objs []fyne.CanvasObject, _ fyne.Size) {
	s := objs[0].MinSize()
	objs[0].Resize(s)
	objs[0].Move(fyne.NewPos(0, max(0, (labelLineHeight(objs[0])-s.Height)/2)))
}

// labelLineHeight is the height of a one-line Label in o's theme.
func labelLineHeight(o fyne.CanvasObject) float32 {
	th := theme.CurrentForWidget(o)
	text := fyne.MeasureText("M", th.Size(theme.SizeNameText), fyne.TextStyle{})
	return text.Height + 2*th.Size(theme.SizeNameInnerPadding)
}

func (v *lineView) set(idx int, r conversation.Row) {
	v.idx = idx
	v.text.TextStyle = fyne.TextStyle{}
	v.copy.Hide()
	v.setUndo(r)
	switch r.Kind {
	case conversation.RowStatus:
		switch r.State {
		case protocol.StatusCompleted:
			v.icon.SetResource(theme.ConfirmIcon())
			v.text.Importance = widget.SuccessImportance
		case protocol.StatusRejected:
			v.icon.SetResource(theme.CancelIcon())
			v.text.Importance = widget.WarningImportance
			v.text.TextStyle = fyne.TextStyle{Bold: true}
		case protocol.StatusAborted:
			v.icon.SetResource(theme.MediaStopIcon())
			v.text.Importance = widget.WarningImportance
		default:
			v.icon.SetResource(theme.ErrorIcon())
			v.text.Importance = widget.DangerImportance
		}
		v.copy.Show()
	case conversation.RowMode:
		v.icon.SetResource(theme.ViewRefreshIcon())
		if r.Mode == protocol.ModePlan {
			v.text.Importance = widget.WarningImportance
		} else {
			v.text.Importance = widget.SuccessImportance
		}
		v.text.TextStyle = fyne.TextStyle{Italic: true}
	default:
		switch r.State {
		case conversation.NoteError:
			v.icon.SetResource(theme.ErrorIcon())
			v.text.Importance = widget.DangerImportance
		case conversation.NoteWarn:
			v.icon.SetResource(theme.WarningIcon())
			v.text.Importance = widget.WarningImportance
		default:
			v.icon.SetResource(theme.InfoIcon())
			v.text.Importance = widget.MediumImportance
		}
	}
	v.text.SetText(r.Text)
	detail := r.Detail
	if r.Restored != nil {
		v.icon.SetResource(theme.HistoryIcon())
		detail = restoredDetail(r.Restored)
	}
	if detail != "" {
		v.detail.SetText(detail)
		v.detail.Show()
	} else {
		v.detail.Hide()
	}
}
