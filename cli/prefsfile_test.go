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
