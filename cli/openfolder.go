package cli

import (
	"fmt"
	"net/url"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/pilotdesk/pilotdesk/internal/capped"
)

// The window's File → Open folder (Ctrl+O) on Linux and the BSDs: Fyne's
// OpenURL starts xdg-open and never looks at how it ended, so on a desktop
// with no file manager set up ("xdg-open: no method available for opening
// 'file:///…'") nothing happened and nothing was said. openFolder runs
// xdg-open and reports its failure; elsewhere (macOS's open, Windows'
// shell) the app's OpenURL stays, which reports its own.

// folderOpener is ui.Options.OpenFolder for this system, nil where the
// app's OpenURL serves.
func folderOpener() func(dir string) error {
	if runtime.GOOS != "linux" && !strings.HasSuffix(runtime.GOOS, "bsd") {
		return nil
	}
	return func(dir string) error { return openFolder(dir, openFolderPatience) }
}

// openFolderPatience is how long openFolder waits for xdg-open to end. A
// file manager that xdg-open runs in the foreground (its generic way, on
// a bare window manager) keeps it running while its window is open: past
// this, the folder is taken as opened.
const openFolderPatience = 5 * time.Second

// openFolder opens dir with xdg-open, and returns why not when xdg-open
// fails within patience (its last line of output, the reason it gives).
func openFolder(dir string, patience time.Duration) error {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(dir)}
	cmd := exec.Command("xdg-open", u.String())
	// The first 4 KiB: enough for xdg-open's reason, bounded whatever a
	// file manager prints.
	out := capped.NewBuffer(4096)
	cmd.Stdout, cmd.Stderr = out, out
	// A file manager started by xdg-open inherits its output: once
	// xdg-open has ended, Wait does not wait for it to close that.
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting xdg-open: %w", err)
	}
	done := make(chan error, 1)
	// This goroutine belongs to xdg-open: it ends when xdg-open does, which
	// is when the file manager it runs in the foreground closes, if later
	// than patience (then nobody reads done, which is buffered).
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			if why := lastLine(out.String()); why != "" {
				return fmt.Errorf("%s (%w)", why, err)
			}
			return fmt.Errorf("xdg-open: %w", err)
		}
		return nil
	case <-time.After(patience):
		return nil
	}
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
