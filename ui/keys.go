package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
)

// The keyboard reaches everything. Tab and Shift+Tab move the focus out
// of the composer to the window's controls (a newline is Shift+Enter);
// Ctrl+Tab and Ctrl+Shift+Tab, or Ctrl+PageDown and Ctrl+PageUp, switch
// to the next or previous conversation of the list; F10, Alt+F and Alt+H
// open the menus; Ctrl+Q quits; PageUp and PageDown scroll the transcript
// a page, wherever the keyboard is, and Home and End (Ctrl+Home and
// Ctrl+End in the composer, whose Home and End move the cursor) to its
// first and last rows.
//
// The window's own: Ctrl+N new conversation, Ctrl+. stop, Ctrl+L focus
// the composer, Ctrl+M switch Plan/Act, Ctrl+, Settings, Ctrl+O open the
// conversation's folder. (Escape in the composer stops too.)
var (
	shortcutNew      = &desktop.CustomShortcut{KeyName: fyne.KeyN, Modifier: fyne.KeyModifierShortcutDefault}
	shortcutStop     = &desktop.CustomShortcut{KeyName: fyne.KeyPeriod, Modifier: fyne.KeyModifierShortcutDefault}
	shortcutFocus    = &desktop.CustomShortcut{KeyName: fyne.KeyL, Modifier: fyne.KeyModifierShortcutDefault}
	shortcutMode     = &desktop.CustomShortcut{KeyName: fyne.KeyM, Modifier: fyne.KeyModifierShortcutDefault}
	shortcutSettings = &desktop.CustomShortcut{KeyName: fyne.KeyComma, Modifier: fyne.KeyModifierShortcutDefault}
	// Ctrl+O, File → Open folder: the one thing the window opens.
	shortcutOpenFolder = &desktop.CustomShortcut{KeyName: fyne.KeyO, Modifier: fyne.KeyModifierShortcutDefault}

	shortcutNextConv  = &desktop.CustomShortcut{KeyName: fyne.KeyTab, Modifier: fyne.KeyModifierControl}
	shortcutPrevConv  = &desktop.CustomShortcut{KeyName: fyne.KeyTab, Modifier: fyne.KeyModifierControl | fyne.KeyModifierShift}
	shortcutNextConv2 = &desktop.CustomShortcut{KeyName: fyne.KeyPageDown, Modifier: fyne.KeyModifierControl}
	shortcutPrevConv2 = &desktop.CustomShortcut{KeyName: fyne.KeyPageUp, Modifier: fyne.KeyModifierControl}
	shortcutQuit      = &desktop.CustomShortcut{KeyName: fyne.KeyQ, Modifier: fyne.KeyModifierShortcutDefault}
	shortcutFileMenu  = &desktop.CustomShortcut{KeyName: fyne.KeyF, Modifier: fyne.KeyModifierAlt}
	shortcutHelpMenu  = &desktop.CustomShortcut{KeyName: fyne.KeyH, Modifier: fyne.KeyModifierAlt}
	shortcutTop       = &desktop.CustomShortcut{KeyName: fyne.KeyHome, Modifier: fyne.KeyModifierControl}
	shortcutBottom    = &desktop.CustomShortcut{KeyName: fyne.KeyEnd, Modifier: fyne.KeyModifierControl}
)

// The menus, in the order of mainMenu.
const (
	menuFile = iota
	menuView
	menuHelp
)

// keyShortcut runs the shortcuts of this file; false if s is none of them.
func (w *Window) keyShortcut(name string) bool {
	switch name {
	case shortcutNextConv.ShortcutName(), shortcutNextConv2.ShortcutName():
		w.switchBy(1)
	case shortcutPrevConv.ShortcutName(), shortcutPrevConv2.ShortcutName():
		w.switchBy(-1)
	case shortcutQuit.ShortcutName():
		w.quit()
	case shortcutFileMenu.ShortcutName():
		w.openMenu(menuFile)
	case shortcutHelpMenu.ShortcutName():
		w.openMenu(menuHelp)
	case shortcutTop.ShortcutName():
		w.transcript.scrollToTop()
	case shortcutBottom.ShortcutName():
		w.transcript.scrollToBottom()
	default:
		return false
	}
	return true
}

// typedKey takes the window's keys that are not shortcuts (F10, the page
// keys) from whatever has the keyboard: the composer (inComposer: Home
// and End stay its own), a transcript row's button, checkbox or link, or
// the canvas when nothing has it. False if k is not one of them.
func (w *Window) typedKey(k *fyne.KeyEvent, inComposer bool) bool {
	switch k.Name {
	case fyne.KeyF10:
		w.openMenu(menuFile)
	case fyne.KeyPageUp:
		w.transcript.page(-1)
	case fyne.KeyPageDown:
		w.transcript.page(1)
	case fyne.KeyHome:
		if inComposer {
			return false
		}
		w.transcript.scrollToTop()
	case fyne.KeyEnd:
		if inComposer {
			return false
		}
		w.transcript.scrollToBottom()
	default:
		return false
	}
	return true
}

// switchBy opens the conversation d places below the current one in the
// list (above for a negative d), going round at its ends.
func (w *Window) switchBy(d int) {
	entries := w.sidebar.entries
	if len(entries) == 0 {
		return
	}
	at := -1
	for i, e := range entries {
		if e.ID == w.current {
			at = i
		}
	}
	next := 0
	if at >= 0 {
		next = ((at+d)%len(entries) + len(entries)) % len(entries)
	} else if d < 0 {
		next = len(entries) - 1
	}
	w.switchTo(entries[next].ID)
}

// menuBar is what the desktop driver's canvas offers of the menu drawn in
// the window (Fyne's own bar on Linux and Windows); the test driver's
// canvas has none.
type menuBar interface{ ToggleMenu() }

// openMenu opens the menu at index, with the keyboard on it: the arrows
// move through its items and the other menus, Enter runs an item, Escape
// closes it. It says whether the window draws a menu to open.
func (w *Window) openMenu(index int) bool {
	if w.menuOpened != nil {
		w.menuOpened(index)
	}
	c := w.win.Canvas()
	bar, ok := c.(menuBar)
	if !ok {
		return false
	}
	bar.ToggleMenu() // the first menu, focused
	for range index {
		if f := c.Focused(); f != nil {
			f.TypedKey(&fyne.KeyEvent{Name: fyne.KeyRight})
		}
	}
	return true
}

// quit quits the app as the File menu's Quit does.
func (w *Window) quit() {
	if w.quitHook != nil {
		w.quitHook()
		return
	}
	w.app.Quit()
}

func shortcuts() []*desktop.CustomShortcut {
	return []*desktop.CustomShortcut{shortcutNew, shortcutStop, shortcutFocus, shortcutMode, shortcutSettings, shortcutOpenFolder,
		shortcutNextConv, shortcutPrevConv, shortcutNextConv2, shortcutPrevConv2, shortcutQuit,
		shortcutFileMenu, shortcutHelpMenu, shortcutTop, shortcutBottom}
}

// shortcut runs one of the window's shortcuts; false if s is not one.
func (w *Window) shortcut(s fyne.Shortcut) bool {
	cs, ok := s.(*desktop.CustomShortcut)
	if !ok {
		return false
	}
	if cs.ShortcutName() == shortcutQuit.ShortcutName() {
		w.quit() // even with a question open
		return true
	}
	if w.modal != nil {
		return true // the question comes first
	}
	switch cs.ShortcutName() {
	case shortcutNew.ShortcutName():
		w.askNewConversation()
	case shortcutStop.ShortcutName():
		w.stop()
	case shortcutFocus.ShortcutName():
		w.focusComposer()
	case shortcutMode.ShortcutName():
		w.mode.toggle.Toggle()
	case shortcutSettings.ShortcutName():
		w.ShowSettings()
	case shortcutOpenFolder.ShortcutName():
		w.openFolder()
	default:
		return w.keyShortcut(cs.ShortcutName())
	}
	return true
}
