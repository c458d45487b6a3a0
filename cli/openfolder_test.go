package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// openFolder says why xdg-open could not open a folder, in xdg-open's
// words, where Fyne's OpenURL started it and never looked: on a desktop
// with no file manager set up, Ctrl+O did nothing and said nothing. A
// file manager xdg-open keeps running past the patience is taken as the
// folder opened.
func TestOpenFolderSaysWhyNot(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("xdg-open is for Linux and the BSDs")
	}
	bin := t.TempDir()
	fake := func(script string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(bin, "xdg-open"), []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep command")
	}
	t.Setenv("PATH", bin)
	dir := t.TempDir()

	fake(`echo "xdg-open: no method available for opening '$1'" >&2; exit 3`)
	err = openFolder(dir, time.Minute)
	if err == nil || !strings.Contains(err.Error(), "xdg-open: no method available for opening 'file://"+filepath.ToSlash(dir)+"'") {
		t.Fatalf("a failing xdg-open: %v", err)
	}

	fake(`exit 0`)
	if err := openFolder(dir, time.Minute); err != nil {
		t.Fatalf("an xdg-open that opened it: %v", err)
	}

	fake("exec " + sleep + " 5")
	start := time.Now()
	if err := openFolder(dir, 200*time.Millisecond); err != nil {
		t.Fatalf("a file manager still open: %v", err)
	}
	if waited := time.Since(start); waited > 30*time.Second {
		t.Fatalf("waited %v for a file manager that stays open", waited)
	}

	os.Remove(filepath.Join(bin, "xdg-open"))
	if err := openFolder(dir, time.Minute); err == nil || !strings.Contains(err.Error(), "starting xdg-open") {
		t.Fatalf("no xdg-open: %v", err)
	}
}
