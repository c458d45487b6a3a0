package ui

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"fyne.io/fyne/v2/dialog"
)

// Open folder (File menu, Ctrl+O) shows the current conversation's folder
// in the system's file manager. The folder is on the relay's machine: the
// action works only when the relay is the window's own (not Options.Remote),
// as Browse… in the new-conversation dialog does.

// openFolderLabel is the File menu's item; openFolderRemoteLabel replaces
// it, disabled, when the relay is on another machine, to say why.
const (
	openFolderLabel       = "Open folder"
	openFolderRemoteLabel = "Open folder (the relay is on another machine)"
)

// folderToOpen is the current conversation's folder as this machine sees
// it, "" when there is none to open: the relay is remote, or the
// conversation works in the relay's default folder, not fixed yet.
func (w *Window) folderToOpen() string {
	if w.opts.Remote || !filepath.IsAbs(w.view.Dir) {
		return ""
	}
	return w.view.Dir
}

// folderURL is the file:// URL of the absolute path dir (a Windows path's
// drive gets the leading slash URLs want: file:///C:/src).
func folderURL(dir string) *url.URL {
	p := filepath.ToSlash(dir)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return &url.URL{Scheme: "file", Path: p}
}

// openFolder opens the current conversation's folder with the system's
// file manager; it says why not in a dialog when the folder has gone (a
// worktree removed by hand) or the system cannot open it.
func (w *Window) openFolder() {
	dir := w.folderToOpen()
	if dir == "" {
		return
	}
	err := func() error {
		if fi, err := os.Stat(dir); err != nil {
			return fmt.Errorf("the conversation's folder %s is not there: %w", dir, err)
		} else if !fi.IsDir() {
			return fmt.Errorf("the conversation's folder %s is not a folder", dir)
		}
		if w.opts.OpenFolder != nil {
			w.openFolderAside(dir)
			return nil
		}
		if err := w.app.OpenURL(folderURL(dir)); err != nil {
			return fmt.Errorf("opening %s in the file manager: %w", dir, err)
		}
		return nil
	}()
	if err != nil {
		w.showOpenFolderError(err)
	}
}

// openFolderAside opens dir with Options.OpenFolder on a goroutine of the
// window's own, and says on the UI goroutine why it could not.
func (w *Window) openFolderAside(dir string) {
	open := w.opts.OpenFolder
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		if err := open(dir); err != nil {
			err = fmt.Errorf("no file manager opened %s: %w", dir, err)
			w.onUI(func() { w.showOpenFolderError(err) })
		}
	}()
}

// showOpenFolderError says why the folder did not open.
func (w *Window) showOpenFolderError(err error) {
	w.log.Warn("open folder", "err", err)
	dialog.ShowError(err, w.win)
}

// showOpenFolder enables the File menu's Open folder when there is a
// folder to open, and changes the menu only when that changed.
func (w *Window) showOpenFolder() {
	item := w.openFolderItem
	if item == nil {
		return
	}
	label := openFolderLabel
	if w.opts.Remote {
		label = openFolderRemoteLabel
	}
	disabled := w.folderToOpen() == ""
	if item.Disabled == disabled && item.Label == label {
		return
	}
	item.Disabled, item.Label = disabled, label
	w.win.SetMainMenu(w.menu) // the driver draws it again
}
