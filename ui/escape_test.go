package ui

import (
	"fmt"
	"testing"

	"fyne.io/fyne/v2"

	"github.com/pilotdesk/pilotdesk/ui/uitest"
)

// TestEscapeCancelsDialogs: Escape cancels the new-conversation dialog
// (its folder box has the keyboard), Settings (its Model box has it),
// Connect a device… and the confirmation of a delete, as Cancel does; it did nothing, and a keyboard user had to Tab to Cancel.
// The conversation is left as it was.
func TestEscapeCancelsDialogs(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	escape := func() {
		t.Helper()
		c := h.w.Window().Canvas()
		ev := &fyne.KeyEvent{Name: fyne.KeyEscape}
		if f := c.Focused(); f != nil {
			f.TypedKey(ev)
		} else if k := c.OnTypedKey(); k != nil {
			k(ev)
		}
		h.frame()
	}
	first := h.w.current
	h.w.shortcut(shortcutNew)
	d := h.w.newConv
	if d == nil {
		t.Fatal("Ctrl+N asked nothing")
	}
	if h.w.Window().Canvas().Focused() != d.folder {
		t.Fatal("the folder box does not have the keyboard")
	}
	escape()
	if h.w.newConv != nil || h.w.current != first {
		t.Fatal("Escape did not cancel the new-conversation dialog")
	}

	// Settings opens with the keyboard in its Model box: Escape there
	// cancels it.
	h.w.ShowSettings()
	if h.w.settings == nil {
		t.Fatal("no Settings")
	}
	if _, ok := h.w.Window().Canvas().Focused().(*escapeEntry); !ok {
		t.Fatalf("Settings opened with the keyboard on %T", h.w.Window().Canvas().Focused())
	}
	escape()
	if h.w.settings != nil {
		t.Fatal("Escape did not cancel Settings")
	}

	// Connect a device…: Escape closes it, from nothing or from its
	// device name box.
	h.w.opts.Devices = relayDevices{r: h.srv.Relay, info: ShareInfo{URL: "ws://127.0.0.1:7420/ws"}}
	for _, inName := range []bool{false, true} {
		d := h.w.showShare()
		h.frame()
		if inName {
			h.w.Window().Canvas().Focus(d.name)
		}
		escape()
		if h.w.share != nil || !d.closed {
			t.Fatalf("Escape (keyboard in the name box: %v) did not close Connect a device…", inName)
		}
	}

	// About opens with the keyboard nowhere: Escape closes it.
	h.w.ShowAbout()
	escape()
	if h.w.about != nil {
		t.Fatal("Escape did not close About")
	}

	h.send("markdown")
	h.waitFor("the turn", func() bool { return completedTurns(h) == 1 })
	h.frame()
	id := h.w.current
	h.w.confirmDelete()
	if h.w.deleting == nil {
		t.Fatal("no confirmation of the delete")
	}
	escape()
	if h.w.deleting != nil {
		t.Fatal("Escape did not cancel the delete")
	}
	h.frame()
	if h.w.current != id || !h.w.store.Has(id) {
		t.Fatal("Escape deleted the conversation")
	}
}

// TestEscapeFromEveryWidgetOfADialog: Escape closes Settings, the
// new-conversation dialog, Connect a device… and a confirmation whichever
// of their widgets has the keyboard: a dropdown, a checkbox, a button
// (Tab puts it there), not only a text box. Fyne gives the key to the
// focused widget, and these did nothing with it.
func TestEscapeFromEveryWidgetOfADialog(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	h.w.opts.Devices = relayDevices{r: h.srv.Relay, info: ShareInfo{URL: "wss://192.168.1.20:7421/ws", LAN: true, SetupURL: "http://192.168.1.20:7421/"}}
	h.send("markdown")
	h.waitFor("the turn", func() bool { return completedTurns(h) == 1 })
	h.frame()
	c := h.w.Window().Canvas()
	// focusables are the widgets of the open dialog that take the
	// keyboard, as Tab visits them.
	focusables := func() []fyne.Focusable {
		var out []fyne.Focusable
		top := c.Overlays().Top()
		if top == nil {
			t.Fatal("no dialog is open")
		}
		uitest.Walk(top, func(o fyne.CanvasObject) bool {
			if !o.Visible() {
				return false
			}
			// A selectable label's text (the token, its link) is
			// Fyne's own widget, which no wrapper reaches: Escape
			// there does nothing still.
			if f, ok := o.(fyne.Focusable); ok && fmt.Sprintf("%T", f) != "*widget.focusSelectable" {
				if d, ok := o.(fyne.Disableable); !ok || !d.Disabled() {
					out = append(out, f)
				}
			}
			return true
		})
		return out
	}
	devices := 0
	for _, tc := range []struct {
		name   string
		open   func()
		isOpen func() bool
		// want are kinds of widget the dialog must hold, so that the
		// test checks them.
		want []string
	}{
		{"Settings", h.w.ShowSettings, func() bool { return h.w.settings != nil }, []string{"*ui.escapeSelect", "*ui.escapeCheck", "*ui.escapeButton", "*ui.escapeEntry"}},
		{"New conversation", h.w.askNewConversation, func() bool { return h.w.newConv != nil }, []string{"*ui.escapeCheck", "*ui.escapeButton"}},
		{"Connect a device", func() {
			devices++
			d := h.w.showShare()
			d.name.SetText(fmt.Sprint("Pixel ", devices))
			d.create()
		}, func() bool { return h.w.share != nil }, []string{"*ui.escapeSelect", "*ui.escapeButton"}},
		{"Delete", h.w.confirmDelete, func() bool { return h.w.deleting != nil }, []string{"*ui.escapeButton"}},
	} {
		tc.open()
		h.frame()
		n := len(focusables())
		kinds := map[string]bool{}
		for i := 0; i < n; i++ {
			if !tc.isOpen() {
				tc.open()
				h.frame()
			}
			f := focusables()[i]
			kinds[fmt.Sprintf("%T", f)] = true
			c.Focus(f)
			if c.Focused() != f {
				t.Fatalf("%s: %T does not take the keyboard", tc.name, f)
			}
			f.TypedKey(&fyne.KeyEvent{Name: fyne.KeyEscape})
			h.frame()
			if tc.isOpen() {
				t.Errorf("%s: Escape with the keyboard on its %T (widget %d of %d) did not close it", tc.name, f, i+1, n)
				c.Unfocus()
				h.w.cancelDialog()
				h.frame()
			}
		}
		for _, k := range tc.want {
			if !kinds[k] {
				t.Errorf("%s: no %s among its widgets %v", tc.name, k, kinds)
			}
		}
	}
}
