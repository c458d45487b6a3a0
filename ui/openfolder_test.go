package ui

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"

	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/workspace"
)

// folderHarness is a window whose relay serves the folders under a
// temporary root, the conversations starting in root/home, and whose app
// records the URLs it is asked to open.
func folderHarness(t *testing.T, opts Options) (*harness, *openedURLs, string) {
	t.Helper()
	root := t.TempDir()
	home := filepath.Join(root, "home")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.New(workspace.Options{Roots: []string{root}, Default: home})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessConfig{relay: relay.Config{WorkDir: home, Workspaces: ws}, options: opts})
	rec := &openedURLs{App: h.w.app}
	h.w.app = rec
	dir, err := filepath.EvalSymlinks(home)
	if err != nil {
		t.Fatal(err)
	}
	return h, rec, dir
}

// TestOpenFolder: File → Open folder (Ctrl+O) opens the conversation's
// folder in the system's file manager, as a file:// URL, once the
// conversation has one; with a remote relay, whose folders are on
// another machine, it is disabled, says why, and Ctrl+O opens nothing.
func TestOpenFolder(t *testing.T) {
	ctrlO := &desktop.CustomShortcut{KeyName: fyne.KeyO, Modifier: fyne.KeyModifierShortcutDefault}

	h, rec, home := folderHarness(t, Options{})
	if !h.w.openFolderItem.Disabled {
		t.Fatal("Open folder is enabled before the conversation has a folder")
	}
	h.send("markdown")
	h.waitFor("the turn in its folder", func() bool { return completedTurns(h) == 1 && h.w.view.Dir != "" })
	h.frame()
	if h.w.view.Dir != home || h.w.openFolderItem.Disabled || h.w.openFolderItem.Label != openFolderLabel {
		t.Fatalf("the conversation works in %q; Open folder %q disabled %v", h.w.view.Dir, h.w.openFolderItem.Label, h.w.openFolderItem.Disabled)
	}
	h.w.composer.TypedShortcut(ctrlO) // as the driver gives it to the prompt box
	h.w.openFolderItem.Action()
	want := "file://" + filepath.ToSlash(home)
	if !slices.Equal(rec.urls, []string{want, want}) {
		t.Fatalf("Ctrl+O and the menu opened %q, want %q twice", rec.urls, want)
	}

	remote, rec, _ := folderHarness(t, Options{Remote: true})
	remote.send("markdown")
	remote.waitFor("the turn in its folder", func() bool { return completedTurns(remote) == 1 && remote.w.view.Dir != "" })
	remote.frame()
	if item := remote.w.openFolderItem; !item.Disabled || item.Label != openFolderRemoteLabel {
		t.Fatalf("with a remote relay, Open folder is %q, disabled %v", item.Label, item.Disabled)
	}
	remote.w.composer.TypedShortcut(ctrlO)
	if len(rec.urls) != 0 {
		t.Fatalf("with a remote relay Ctrl+O opened %q", rec.urls)
	}
}

// TestFolderURL: a folder's URL is file:// and its absolute path, escaped,
// with the leading slash a Windows drive needs.
func TestFolderURL(t *testing.T) {
	for in, want := range map[string]string{
		"/home/me/src/my api": "file:///home/me/src/my%20api",
		"/tmp/a#b?c":          "file:///tmp/a%23b%3Fc",
	} {
		if got := folderURL(in).String(); got != want {
			t.Errorf("folderURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestOpenFolderSaysWhyNot: when the system's way of opening a folder
// (Options.OpenFolder: xdg-open on Linux) fails, the window says why in a
// dialog; Ctrl+O did nothing visible before.
func TestOpenFolderSaysWhyNot(t *testing.T) {
	var asked []string
	h, rec, home := folderHarness(t, Options{OpenFolder: func(dir string) error {
		asked = append(asked, dir)
		return errors.New("xdg-open: no method available for opening 'file:///x'")
	}})
	h.send("markdown")
	h.waitFor("the turn in its folder", func() bool { return completedTurns(h) == 1 && h.w.view.Dir != "" })
	h.frame()
	overlays := len(h.w.Window().Canvas().Overlays().List())
	h.w.openFolderItem.Action()
	h.waitFor("the reason in a dialog", func() bool {
		h.frame()
		return len(h.w.Window().Canvas().Overlays().List()) > overlays
	})
	if got := strings.Join(texts(h.w.Window().Canvas().Overlays().Top()), "\n"); !strings.Contains(got, "no method available") || !strings.Contains(got, home) {
		t.Fatalf("the dialog says:\n%s", got)
	}
	if len(asked) != 1 || asked[0] != home || len(rec.urls) != 0 {
		t.Fatalf("opened %q by Options.OpenFolder and %q by the app, want %s once by Options.OpenFolder", asked, rec.urls, home)
	}
}
