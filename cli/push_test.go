package cli

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The VAPID key pair is made once per data dir, readable by its owner
// alone, and the same after a restart; a damaged file is an error, never
// silently replaced (a new key would end every browser's subscription).
func TestVAPIDKeysKept(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first, err := pushConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, vapidFile)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %o, want 0600", path, fi.Mode().Perm())
	}
	again, err := pushConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	if again.Keys != first.Keys || first.Keys.Check() != nil {
		t.Fatalf("the keys changed across a restart: %+v then %+v", first.Keys, again.Keys)
	}
	if err := os.WriteFile(path, []byte(`{"publicKey": "x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := pushConfig(dir); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("a damaged key file: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != `{"publicKey": "x"}` {
		t.Fatalf("the damaged file was replaced: %s", b)
	}
	mem, err := pushConfig(memoryDataDir)
	if err != nil || mem.Keys.Check() != nil {
		t.Fatalf("in memory: %v", err)
	}
}
