//go:build cgo

package glpreload

import (
	"bufio"
	"bytes"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/pilotdesk/pilotdesk/internal/testsupport"
)

// TestStartLoadsTheDriver preloads this machine's Mesa driver and finds it
// in the process's memory map.
func TestStartLoadsTheDriver(t *testing.T) {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	path := driverPath(string(maps), os.Getenv, fileExists)
	if path == "" {
		t.Skip("no Mesa driver to preload on this machine (Mesa's libgl1-mesa-dri is not installed)")
	}
	if mapped(t, path) {
		t.Skipf("%s was loaded by an earlier run of this test in this process (-count)", path)
	}
	Start(testsupport.Logger(t))()
	if !mapped(t, path) {
		t.Fatalf("%s is not in the memory map after Start's wait returned", path)
	}
}

// mapped reports whether the file at path (or a link to it) is mapped into
// this process.
func mapped(t *testing.T, path string) bool {
	t.Helper()
	want, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || !strings.HasPrefix(f[5], "/") {
			continue
		}
		if fi, err := os.Stat(f[5]); err == nil && os.SameFile(fi, want) {
			return true
		}
	}
	return false
}

func TestLoadSaysWhyALibraryDoesNotLoad(t *testing.T) {
	dir := t.TempDir()
	notALibrary := dir + "/swrast_dri.so"
	if err := os.WriteFile(notALibrary, []byte("not an ELF file"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := load(notALibrary)
	if err == nil || !strings.Contains(err.Error(), notALibrary) {
		t.Fatalf("load of a text file: err = %v, want an error naming the file", err)
	}
	// Start logs the failure and its wait still returns.
	var logs bytes.Buffer
	t.Setenv("LIBGL_DRIVERS_PATH", dir)
	Start(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))()
	if !strings.Contains(logs.String(), "preloading the OpenGL driver failed") {
		t.Fatalf("log = %q, want the failure", logs.String())
	}
}
