package prefsfile

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func open(t *testing.T, path string, migrate func() map[string]any) *Store {
	t.Helper()
	s, err := Open(path, migrate, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestRoundTrip: every kind of value a store takes is what a store opened
// on its file afterwards reads, with its type.
func TestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "prefs.json")
	s := open(t, path, nil)
	s.SetBool("b", true)
	s.SetBoolList("bl", []bool{true, false})
	s.SetFloat("f", 1.5)
	s.SetFloatList("window.size", []float64{1100, 720.5})
	s.SetInt("i", 42)
	s.SetIntList("il", []int{1, 2, 3})
	s.SetString("s", "héllo \"x\"")
	s.SetStringList("sl", []string{"a", "b"})
	s.SetString("gone", "x")
	s.RemoveValue("gone")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	r := open(t, path, func() map[string]any { t.Fatal("migrated although the file exists"); return nil })
	if !r.Bool("b") || !reflect.DeepEqual(r.BoolList("bl"), []bool{true, false}) || r.Float("f") != 1.5 ||
		!reflect.DeepEqual(r.FloatList("window.size"), []float64{1100, 720.5}) || r.Int("i") != 42 ||
		!reflect.DeepEqual(r.IntList("il"), []int{1, 2, 3}) || r.String("s") != "héllo \"x\"" ||
		!reflect.DeepEqual(r.StringList("sl"), []string{"a", "b"}) {
		t.Fatalf("read back: %#v", r.values)
	}
	if got := r.StringWithFallback("gone", "fb"); got != "fb" {
		t.Fatalf("a removed key reads %q", got)
	}
	if got := r.IntWithFallback("s", 7); got != 7 {
		t.Fatalf("a string read as an int: %d, want the fallback", got)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm()&0o077 != 0 {
		t.Fatalf("the file (it holds secrets) is %v, %v: want its user's alone", fi.Mode(), err)
	}
}

// TestMigrateOnce: a store with no file starts with what migrate gives and
// writes it at once; once the file exists, migrate is not asked again, and
// the store's own values win.
func TestMigrateOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prefs.json")
	calls := 0
	old := map[string]any{"settings.agent": "script", "window.size": []float64{900, 600}, "firstRun": true}
	s := open(t, path, func() map[string]any { calls++; return old })
	if calls != 1 || s.String("settings.agent") != "script" || !s.Bool("firstRun") {
		t.Fatalf("after the migration: calls %d, %#v", calls, s.values)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the migration was not written at once: %v", err)
	}
	s.SetString("settings.agent", "copilot")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	old["settings.agent"] = "acp"
	r := open(t, path, func() map[string]any { calls++; return old })
	if calls != 1 || r.String("settings.agent") != "copilot" || !reflect.DeepEqual(r.FloatList("window.size"), []float64{900, 600}) {
		t.Fatalf("second start: calls %d, %#v", calls, r.values)
	}
}

// TestTwoStoresKeepEachOthersKeys: two windows at once on one file each
// write only what they changed over what the file holds.
func TestTwoStoresKeepEachOthersKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prefs.json")
	a := open(t, path, nil)
	b := open(t, path, nil)
	a.SetString("a", "1")
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b.SetString("b", "2")
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	r := open(t, path, nil)
	if r.String("a") != "1" || r.String("b") != "2" {
		t.Fatalf("%#v", r.values)
	}
}

// TestDamagedFile: a file that is not preferences is moved aside with the
// store starting empty, rather than failing the app's start.
func TestDamagedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prefs.json")
	if err := os.WriteFile(path, []byte(`{"a": "x"`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := open(t, path, func() map[string]any { return map[string]any{"m": "migrated"} })
	if len(s.values) != 0 {
		t.Fatalf("values %#v", s.values)
	}
	if b, err := os.ReadFile(path + ".bad"); err != nil || !strings.Contains(string(b), `"a"`) {
		t.Fatalf("the damaged file was not kept aside: %q %v", b, err)
	}
	s.SetString("k", "v")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if r := open(t, path, nil); r.String("k") != "v" {
		t.Fatalf("%#v", r.values)
	}
}

// TestBatchAndListeners: WriteValues changes many keys in one change, and
// listeners hear of changes, not of writes that change nothing.
func TestBatchAndListeners(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "prefs.json"), nil)
	heard := 0
	s.AddChangeListener(func() { heard++ })
	s.WriteValues(func(m map[string]any) { m["x"] = "1"; m["y"] = true })
	s.SetString("x", "1")
	if heard != 1 || s.String("x") != "1" || !s.Bool("y") {
		t.Fatalf("heard %d, %#v", heard, s.values)
	}
	list := []string{"a"}
	s.SetStringList("l", list)
	list[0] = "changed"
	if got := s.StringList("l"); got[0] != "a" {
		t.Fatalf("the store kept the caller's slice: %v", got)
	}
}
