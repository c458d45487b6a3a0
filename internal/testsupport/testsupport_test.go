package testsupport

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeTB records what a helper does with its testing.TB.
type fakeTB struct {
	testing.TB // nil: a method not below panics
	mu         sync.Mutex
	failed     bool
	logs       []string
	skipped    string
	fatal      string
	cleanups   []func()
}

func (f *fakeTB) Helper()           {}
func (f *fakeTB) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *fakeTB) Failed() bool      { return f.failed }
func (f *fakeTB) Logf(s string, a ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.logs = append(f.logs, fmt.Sprintf(s, a...))
}
func (f *fakeTB) Skipf(s string, a ...any)  { f.skipped = fmt.Sprintf(s, a...); runtime.Goexit() }
func (f *fakeTB) Fatalf(s string, a ...any) { f.fatal = fmt.Sprintf(s, a...); runtime.Goexit() }
func (f *fakeTB) Fatal(a ...any)            { f.fatal = fmt.Sprint(a...); runtime.Goexit() }

// run calls fn on a goroutine of its own, as testing does, so that Skipf
// and Fatalf end fn alone.
func (f *fakeTB) run(fn func(tb testing.TB)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
}

func (f *fakeTB) cleanup() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}

// parked blocks until release is closed: a goroutine to find.
func parked(started, release chan struct{}) {
	close(started)
	<-release
}

func TestAfterTests(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	go parked(started, release)
	<-started
	var out bytes.Buffer
	if code := afterTests(&out, 100*time.Millisecond, 0, "the package", "testsupport.parked"); code != 1 {
		t.Errorf("with a goroutine left: code %d, want 1", code)
	}
	if s := out.String(); !strings.HasPrefix(s, "goroutines of the package outlived the tests:\n") || !strings.Contains(s, "testsupport.parked") {
		t.Errorf("printed %q", s)
	}
	// The tests failed: that is what counts, no check.
	out.Reset()
	if code := afterTests(&out, 100*time.Millisecond, 3, "the package", "testsupport.parked"); code != 3 || out.Len() != 0 {
		t.Errorf("failed tests: code %d, printed %q", code, out.String())
	}
	// A goroutine that ends within the grace period is no leak.
	time.AfterFunc(50*time.Millisecond, func() { close(release) })
	if code := afterTests(&out, 5*time.Second, 0, "the package", "testsupport.parked"); code != 0 || out.Len() != 0 {
		t.Errorf("after the goroutine ended: code %d, printed %q", code, out.String())
	}
}

// TestLeakedGoroutinesSkipsTheCaller: the goroutine that asks is not a leak,
// though its stack holds the package asked about.
func TestLeakedGoroutinesSkipsTheCaller(t *testing.T) {
	if leaked := leakedGoroutines(0, []string{"testsupport.TestLeakedGoroutinesSkipsTheCaller"}); leaked != "" {
		t.Errorf("leaked:\n%s", leaked)
	}
	if leaked := LeakedGoroutines("no such function anywhere"); leaked != "" {
		t.Errorf("leaked:\n%s", leaked)
	}
}

func TestLogger(t *testing.T) {
	for _, failed := range []bool{false, true} {
		f := &fakeTB{}
		log := Logger(f)
		log.Debug("one", "k", "v")
		log.Info("two")
		f.failed = failed
		f.cleanup()
		if !failed {
			if len(f.logs) != 0 {
				t.Errorf("a passing test printed %q", f.logs)
			}
			continue
		}
		if len(f.logs) != 1 || !strings.HasPrefix(f.logs[0], "backend log:\n") ||
			!strings.Contains(f.logs[0], "level=DEBUG msg=one k=v") || !strings.Contains(f.logs[0], "level=INFO msg=two") {
			t.Errorf("a failing test printed %q", f.logs)
		}
	}
}

func TestReadJSONLines(t *testing.T) {
	type entry struct {
		Method string `json:"method"`
		PID    int    `json:"pid"`
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "log.jsonl")
	if got := ReadJSONLines[entry](t, path); got != nil {
		t.Errorf("no file: %v", got)
	}
	if err := os.WriteFile(path, []byte(`{"method":"a","pid":1}`+"\n"+`{"method":"b","pid":2}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := ReadJSONLines[entry](t, path)
	if len(got) != 2 || got[0] != (entry{"a", 1}) || got[1] != (entry{"b", 2}) {
		t.Errorf("read %+v", got)
	}
	if err := os.WriteFile(path, []byte("{\"method\":\"a\"}\nnot json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := &fakeTB{}
	f.run(func(tb testing.TB) { ReadJSONLines[entry](tb, path) })
	if !strings.HasPrefix(f.fatal, "fake log: ") {
		t.Errorf("a bad line: fatal %q", f.fatal)
	}
}

func TestRepoRoot(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	if want := filepath.Dir(filepath.Dir(wd)); root != want {
		t.Errorf("RepoRoot = %s, want %s", root, want)
	}
}

func TestFind(t *testing.T) {
	root, _ := RepoRoot()
	tool := NPMTool{Name: "the tool", EnvVar: "TESTSUPPORT_TEST_TOOL", Script: "scripts/install-tool.sh", Path: "internal/testsupport/npmtools.go"}

	t.Setenv(tool.EnvVar, "")
	f := &fakeTB{}
	var got string
	f.run(func(tb testing.TB) { got = tool.Find(tb) })
	if want := filepath.Join(root, "internal", "testsupport", "npmtools.go"); got != want || f.skipped != "" {
		t.Errorf("installed: %q (skipped %q), want %s", got, f.skipped, want)
	}

	missing := tool
	missing.Path = ".tools/none/bin/tool"
	f = &fakeTB{}
	f.run(func(tb testing.TB) { got = missing.Find(tb) })
	if want := "the tool is not installed (" + filepath.Join(root, ".tools", "none", "bin", "tool") + " is missing); run scripts/install-tool.sh"; f.skipped != want {
		t.Errorf("not installed: skipped %q\nwant %q", f.skipped, want)
	}

	exe, _ := os.Executable()
	t.Setenv(tool.EnvVar, exe)
	f = &fakeTB{}
	f.run(func(tb testing.TB) { got = tool.Find(tb) })
	if got != exe || f.skipped != "" {
		t.Errorf("from the environment: %q (skipped %q), want %s", got, f.skipped, exe)
	}

	t.Setenv(tool.EnvVar, filepath.Join(t.TempDir(), "gone"))
	f = &fakeTB{}
	f.run(func(tb testing.TB) { got = tool.Find(tb) })
	if !strings.HasPrefix(f.skipped, "the tool is not installed (") {
		t.Errorf("a missing path from the environment: skipped %q", f.skipped)
	}

	// A name is looked up on PATH.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "testsupport-tool"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv(tool.EnvVar, "testsupport-tool")
	f = &fakeTB{}
	f.run(func(tb testing.TB) { got = tool.Find(tb) })
	if runtime.GOOS != "windows" && got != filepath.Join(dir, "testsupport-tool") {
		t.Errorf("a name on PATH: %q (skipped %q)", got, f.skipped)
	}
}

func TestCopilotEnv(t *testing.T) {
	root, _ := RepoRoot()
	home := t.TempDir()
	t.Setenv("COPILOT_PKG_CACHE_HOME", "")
	env := strings.Join(CopilotEnv(home), "\n")
	for _, want := range []string{
		"HOME=" + home,
		"COPILOT_HOME=" + filepath.Join(home, ".copilot"),
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".state"),
		"COPILOT_PKG_CACHE_HOME=" + filepath.Join(root, ".tools", "copilot", "cache"),
		"GH_TOKEN=\nGITHUB_TOKEN=\nCOPILOT_GITHUB_TOKEN=",
	} {
		if !strings.Contains(env, want+"\n") && !strings.HasSuffix(env, want) {
			t.Errorf("no %q in\n%s", want, env)
		}
	}
	t.Setenv("COPILOT_PKG_CACHE_HOME", "/elsewhere")
	if env := CopilotEnv(home); !strings.Contains(strings.Join(env, "\n"), "\nCOPILOT_PKG_CACHE_HOME=/elsewhere\n") {
		t.Errorf("the cache from the environment: %q", env)
	}
}
