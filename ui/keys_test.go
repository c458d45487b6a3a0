package ui

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/pilotdesk/pilotdesk/conversation"
)

// focusName names what has the keyboard, for a test's message.
func focusName(f fyne.Focusable) string {
	switch x := f.(type) {
	case *rowButton:
		return "row button " + x.Text
	case *rowCheck:
		return "step " + x.Text
	case *widget.Button:
		return "button " + x.Text
	case *composerEntry:
		return "composer"
	}
	return fmt.Sprintf("%T", f)
}

// TestFocusWalk: in a conversation with a code block, a tool row and a
// plan card, Tab from the prompt box leaves it (it takes no Tab of its
// own) and goes round every control of the window in reading order (the
// code block's Copy, the tool row's expand button, the plan's steps, Run
// in Act, the list, Connect a device, the composer's own buttons) back
// to the prompt box; Shift+Tab walks the same round backwards; Space on
// what Tab reached works (a step is unticked).
func TestFocusWalk(t *testing.T) {
	h := newHarness(t, harnessConfig{size: fyne.NewSize(1000, 1600)})
	h.send("markdown")
	h.waitFor("the markdown turn", func() bool { return completedTurns(h) == 1 })
	h.send("do the work")
	h.waitFor("the work turn", func() bool { return completedTurns(h) == 2 })
	test.Tap(h.w.mode.toggle.plan)
	h.send("do the work")
	h.waitFor("the plan turn", func() bool { return completedTurns(h) == 3 })
	h.frame()
	if h.w.composer.AcceptsTab() {
		t.Fatal("the prompt box takes Tab: the keyboard cannot leave it")
	}
	c := h.w.Window().Canvas()
	c.Focus(h.w.composer)
	var round []fyne.Focusable
	for {
		test.FocusNext(c)
		f := c.Focused()
		if f == h.w.composer {
			break
		}
		if f == nil || len(round) == 500 {
			t.Fatalf("Tab lost its way after %d stops (%v)", len(round), f)
		}
		round = append(round, f)
	}
	names := make([]string, len(round))
	for i, f := range round {
		names[i] = focusName(f)
	}
	at := func(what string) int {
		t.Helper()
		for i, n := range names {
			if strings.HasPrefix(n, what) {
				return i
			}
		}
		t.Fatalf("Tab never reaches %s; the round: %q", what, names)
		return -1
	}
	expand := h.shownTool(rowsOf(h, conversation.RowTool)[0]).expand
	expandAt := slices.Index(round, fyne.Focusable(expand))
	if expandAt < 0 {
		t.Fatalf("Tab never reaches the tool row's expand button; the round: %q", names)
	}
	order := []int{at("row button Copy"), expandAt, at("step 1."), at("step 2."), at("row button Run in Act")}
	if !slices.IsSorted(order) {
		t.Fatalf("the transcript's controls out of reading order %v: %q", order, names)
	}
	for _, want := range []string{"button New conversation", "button Connect a device", "button Send", "*widget.List"} {
		at(want)
	}

	// Shift+Tab: the same stops, round the other way (Fyne goes back to
	// a list before the stops inside it, so the order differs there).
	back := map[fyne.Focusable]bool{}
	for i := 0; ; i++ {
		test.FocusPrevious(c)
		f := c.Focused()
		if f == h.w.composer {
			break
		}
		if f == nil || i > 2*len(round) {
			t.Fatalf("Shift+Tab lost its way after %d stops", i)
		}
		back[f] = true
	}
	for i, f := range round {
		if !back[f] {
			t.Fatalf("Shift+Tab never reaches %s", names[i])
		}
	}
	if len(back) != len(round) {
		t.Fatalf("Shift+Tab stops at %d places, Tab at %d", len(back), len(round))
	}

	// Space on the first step unticks it, and the keyboard stays there.
	step := round[at("step 1.")].(*rowCheck)
	c.Focus(step)
	step.TypedKey(&fyne.KeyEvent{Name: fyne.KeySpace}) // the driver sends both
	step.TypedRune(' ')
	h.frame()
	if step.Checked || c.Focused() != step {
		t.Fatalf("Space on a step: checked %v, the keyboard on %s", step.Checked, focusName(c.Focused()))
	}
}

// TestWindowKeys: Ctrl+Tab and Ctrl+PageDown open the next conversation
// of the list, Ctrl+Shift+Tab and Ctrl+PageUp the previous one; F10,
// Alt+F and Alt+H open the menus; Ctrl+Q quits, a question open or not;
// PageUp and PageDown scroll the transcript from the prompt box, and
// Home and End from a row's button.
func TestWindowKeys(t *testing.T) {
	h := newHarness(t, harnessConfig{size: fyne.NewSize(900, 420)})
	h.send("markdown")
	h.waitFor("the first turn", func() bool { return completedTurns(h) == 1 })
	first := h.w.current
	h.w.shortcut(shortcutNew)
	h.w.newConv.submit() // the new-conversation dialog's Start, in the default folder
	h.send("do the work")
	h.waitFor("the second conversation", func() bool {
		return h.w.current != first && completedTurns(h) == 1 && len(h.w.sidebar.entries) == 2
	})
	second := h.w.current
	shortcut := func(key fyne.KeyName, mod fyne.KeyModifier) {
		t.Helper()
		// As the driver gives it to the prompt box that has the keyboard.
		h.w.composer.TypedShortcut(&desktop.CustomShortcut{KeyName: key, Modifier: mod})
		h.frame()
	}
	for _, tc := range []struct {
		key  fyne.KeyName
		mod  fyne.KeyModifier
		want string
	}{
		{fyne.KeyTab, fyne.KeyModifierControl, first},
		{fyne.KeyTab, fyne.KeyModifierControl, second},
		{fyne.KeyTab, fyne.KeyModifierControl | fyne.KeyModifierShift, first},
		{fyne.KeyPageDown, fyne.KeyModifierControl, second},
		{fyne.KeyPageUp, fyne.KeyModifierControl, first},
	} {
		shortcut(tc.key, tc.mod)
		if h.w.current != tc.want {
			t.Fatalf("%v+%s opened %s, want %s", tc.mod, tc.key, h.w.current, tc.want)
		}
		if h.w.Window().Canvas().Focused() != h.w.composer {
			t.Fatal("switching conversations took the keyboard from the prompt box")
		}
	}
	shortcut(fyne.KeyTab, fyne.KeyModifierControl)

	var menus []int
	h.w.menuOpened = func(i int) { menus = append(menus, i) }
	h.key(fyne.KeyF10)
	shortcut(fyne.KeyF, fyne.KeyModifierAlt)
	shortcut(fyne.KeyH, fyne.KeyModifierAlt)
	if !slices.Equal(menus, []int{menuFile, menuFile, menuHelp}) {
		t.Fatalf("F10, Alt+F, Alt+H opened the menus %v", menus)
	}
	quits := 0
	h.w.quitHook = func() { quits++ }
	shortcut(fyne.KeyQ, fyne.KeyModifierShortcutDefault)
	if quits != 1 {
		t.Fatal("Ctrl+Q did not quit")
	}

	// The page keys, in a conversation taller than the view.
	h.send("markdown")
	h.waitFor("a second turn", func() bool { return completedTurns(h) == 2 })
	h.frame()
	tr := h.w.transcript
	bottom := tr.list.GetScrollOffset()
	if bottom <= 0 {
		t.Fatalf("the transcript does not scroll (offset %v): make the turn longer", bottom)
	}
	h.key(fyne.KeyPageUp)
	h.frame()
	up := tr.list.GetScrollOffset()
	if up >= bottom || h.w.composer.Text != "" {
		t.Fatalf("PageUp in the prompt box: offset %v from %v, text %q", up, bottom, h.w.composer.Text)
	}
	h.key(fyne.KeyPageDown)
	h.frame()
	if got := tr.list.GetScrollOffset(); got <= up {
		t.Fatalf("PageDown: offset %v from %v", got, up)
	}
	tr.scrollToBottom()
	h.frame()
	statuses := rowsOf(h, conversation.RowStatus)
	copyBtn := h.shownRowOf(statuses[len(statuses)-1]).line.copy
	c := h.w.Window().Canvas()
	c.Focus(copyBtn)
	c.Focused().TypedKey(&fyne.KeyEvent{Name: fyne.KeyHome})
	h.frame()
	if got := tr.list.GetScrollOffset(); got != 0 {
		t.Fatalf("Home: offset %v", got)
	}
	if c.Focused() != nil {
		c.Focused().TypedKey(&fyne.KeyEvent{Name: fyne.KeyEnd})
	} else {
		h.w.typedKey(&fyne.KeyEvent{Name: fyne.KeyEnd}, false)
	}
	h.frame()
	if !tr.atBottom() {
		t.Fatal("End did not scroll to the bottom")
	}
}
