package cli

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/settings"
)

// TestPrefsFileReplacesFyneStore: the window's preferences move, once, from
// Fyne's store to a file of their own, and Fyne's file is not written at
// exit any more. That exit save truncated the file while Fyne's watcher
// could reload it, and quitting logged "Preferences load error" with
// "Cause: EOF".
func TestPrefsFileReplacesFyneStore(t *testing.T) {
	id := testAppID()
	fyneFile := filepath.Join(os.TempDir(), "fyne-test", id, "preferences.json")
	// An earlier version saved its settings in Fyne's store.
	before := newPrefsApp(t, id)
	old := settings.Defaults()
	old.Model, old.InputTimeout = "gpt-5", 90*time.Second
	settings.Save(before.Preferences(), old)
	before.Preferences().SetFloatList("window.size", []float64{900, 640})
	stopApp(before)
	if _, err := os.Stat(fyneFile); err != nil {
		t.Fatalf("Fyne's store wrote no file: %v", err)
	}
	// The earlier app stays in this process: Fyne saves again 100 ms
	// after a save that had changes behind it, and again after that, so
	// its last save could land after the removal below and look like the
	// new app's (a clean-clone make test saw it). Go on once its file has
	// been still for a second.
	waitStill(t, fyneFile, time.Second)

	path := filepath.Join(t.TempDir(), "pilotdesk", prefsFileName)
	a := newPrefsApp(t, id)
	store, err := usePrefsFile(a, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := settings.Load(a.Preferences(), settings.Defaults()); got != old {
		t.Fatalf("migrated settings %+v\nwant %+v", got, old)
	}
	if wh := a.Preferences().FloatList("window.size"); len(wh) != 2 || wh[0] != 900 {
		t.Fatalf("migrated window size %v", wh)
	}
	next := old
	next.Model = "claude-sonnet-4.5"
	settings.Save(a.Preferences(), next)
	if err := os.Remove(fyneFile); err != nil {
		t.Fatal(err)
	}
	stopApp(a)
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(fyneFile); err == nil {
		t.Fatal("Fyne's store saved its file at exit")
	}

	again := newPrefsApp(t, id)
	store2, err := usePrefsFile(again, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store2.Close()
	if got := settings.Load(again.Preferences(), settings.Defaults()); got != next {
		t.Fatalf("after a restart %+v\nwant %+v", got, next)
	}
}

// waitStill waits until the file at path has kept its modification time
// and size for still.
func waitStill(t *testing.T, path string, still time.Duration) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last os.FileInfo
	since := time.Now()
	for time.Now().Before(deadline) {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if last == nil || !fi.ModTime().Equal(last.ModTime()) || fi.Size() != last.Size() {
			last, since = fi, time.Now()
		} else if time.Since(since) >= still {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s kept changing for 30 s", path)
}
