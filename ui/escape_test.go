package ui

import (
	"testing"

	"fyne.io/fyne/v2"
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
