// Package windows smoke-tests the Windows build under Wine: the installer
// made by `make package-windows` installs silently into a fresh Wine
// prefix, the installed program answers --version, runs the relay on the
// scripted agent (a whole turn from this repository's Go client, SQLite
// history read back after a restart, the data dir's lock held), runs the
// terminal client with piped input, and the uninstaller removes the program
// and leaves the user's data.
//
// scripts/check-windows.sh builds the installer and runs this test with
// PILOTDESK_WINE_SETUP set to it; without it the test is skipped.
package windows

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/pilotdesk/pilotdesk/relay/relaytest"
)

const token = "wine-smoke-token-3b7e91c4d2"

// wineEnv is a Wine prefix made for one test, with the paths to reach what
// the installer put in it.
type wineEnv struct {
	t      *testing.T
	prefix string
	env    []string
}

func newWine(t *testing.T) *wineEnv {
	setup := os.Getenv("PILOTDESK_WINE_SETUP")
	if setup == "" {
		t.Skip("PILOTDESK_WINE_SETUP is not set: scripts/check-windows.sh builds the installer and runs this test")
	}
	if _, err := exec.LookPath("wine"); err != nil {
		t.Skip("wine is not installed")
	}
	// A space in the prefix's path: every path the program sees has one.
	prefix := filepath.Join(t.TempDir(), "wine prefix")
	w := &wineEnv{t: t, prefix: prefix, env: append(os.Environ(),
		"WINEPREFIX="+prefix,
		"WINEDEBUG=-all",
		// No Mono or Gecko: nothing here needs .NET or HTML, and their
		// installers would ask to download.
		"WINEDLLOVERRIDES=mscoree,mshtml=",
		"WINEARCH=win64",
		"DISPLAY=",
		// Wine turns the command line into the program's UTF-16 argv by
		// the locale: one the machine lacks (make exports en_US.UTF-8,
		// which a fresh Debian has not generated) leaves it 7-bit, and the
		// data dir's "ü" arrived as "C<". C.UTF-8 is always there.
		"LANG=C.UTF-8",
		"LC_ALL=C.UTF-8",
	)}
	t.Cleanup(func() {
		cmd := exec.Command("wineserver", "-k")
		cmd.Env = w.env
		_ = cmd.Run()
	})
	w.run(3*time.Minute, "wineboot", "--init")
	w.run(time.Minute, "wineserver", "-w")
	// Wine 8 lacks bcryptprimitives.dll, which Go's Windows runtime needs
	// (wineshim/bcryptprimitives.c says why): the script builds a stand-in.
	if shim := os.Getenv("PILOTDESK_WINE_SHIM"); shim != "" {
		b, err := os.ReadFile(shim)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(prefix, "drive_c", "windows", "system32", "bcryptprimitives.dll")
		if _, err := os.Stat(dst); os.IsNotExist(err) {
			if err := os.WriteFile(dst, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return w
}

// run runs a command in the prefix and returns its combined output,
// failing the test if it fails or outlasts d.
func (w *wineEnv) run(d time.Duration, name string, args ...string) string {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = w.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		w.t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// user is the prefix's Windows profile folder.
func (w *wineEnv) user() string {
	w.t.Helper()
	users := filepath.Join(w.prefix, "drive_c", "users")
	entries, err := os.ReadDir(users)
	if err != nil {
		w.t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && e.Name() != "Public" {
			return filepath.Join(users, e.Name())
		}
	}
	w.t.Fatalf("no user profile in %s", users)
	return ""
}

// waitGone waits for path to disappear (the uninstaller runs from a copy
// of itself, so the command that started it returns before it is done).
func waitGone(t *testing.T, path string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if _, err := os.Stat(path); os.IsNotExist(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is still there after %v", path, within)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// script writes the scripted agent's scenario into the prefix, once, and
// returns its Windows path: one turn that says the prompt back, so a turn
// needs no answer to a question (the built-in demo asks some).
func (w *wineEnv) script() string {
	w.t.Helper()
	onDisk := filepath.Join(w.prefix, "drive_c", "users", "Public", "echo script.json")
	if err := os.WriteFile(onDisk, []byte(`{"turns": [{"steps": [{"delta": "You said: {{prompt}}."}]}]}`), 0o644); err != nil {
		w.t.Fatal(err)
	}
	return `C:\users\Public\echo script.json`
}

// relayProc is `pilotdesk.com serve` running under Wine.
type relayProc struct {
	cmd  *exec.Cmd
	url  string
	mu   sync.Mutex
	log  bytes.Buffer
	done chan struct{}
}

func (p *relayProc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.Write(b)
}

func (p *relayProc) logText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// serve starts the relay and waits until /healthz answers.
func (w *wineEnv) serve(exe, dataDir string, port int) *relayProc {
	w.t.Helper()
	p := &relayProc{url: fmt.Sprintf("ws://127.0.0.1:%d/ws", port), done: make(chan struct{})}
	p.cmd = exec.Command("wine", exe, "serve", "--agent", "script", "--script", w.script(),
		"--listen", fmt.Sprintf("127.0.0.1:%d", port), "--token", token, "--data-dir", dataDir)
	p.cmd.Env = w.env
	p.cmd.Stdout, p.cmd.Stderr = p, p
	if err := p.cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	w.t.Cleanup(func() { p.kill() })
	health := fmt.Sprintf("http://127.0.0.1:%d/healthz", port)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get(health)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case <-p.done:
			w.t.Fatalf("serve exited before answering /healthz:\n%s", p.logText())
		default:
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("serve did not answer %s within 2m:\n%s", health, p.logText())
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func (p *relayProc) kill() {
	if p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
	}
	<-p.done
}

func TestWineSmoke(t *testing.T) {
	w := newWine(t)
	setup, err := filepath.Abs(os.Getenv("PILOTDESK_WINE_SETUP"))
	if err != nil {
		t.Fatal(err)
	}

	// The installer, silently, for this user alone (no administrator).
	w.run(3*time.Minute, "wine", setup, "/S")
	w.run(time.Minute, "wineserver", "-w")
	user := w.user()
	installDir := filepath.Join(user, "AppData", "Local", "Programs", "pilotdesk")
	exe := filepath.Join(installDir, "pilotdesk.exe")
	com := filepath.Join(installDir, "pilotdesk.com")
	for _, f := range []string{exe, com, filepath.Join(installDir, "uninstall.exe"),
		filepath.Join(user, "AppData", "Roaming", "Microsoft", "Windows", "Start Menu", "Programs", "pilotdesk.lnk")} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("the installer did not make %s: %v", f, err)
		}
	}
	reg := w.run(time.Minute, "wine", "reg", "query", `HKCU\Software\Microsoft\Windows\CurrentVersion\Uninstall\pilotdesk`)
	for _, want := range []string{"DisplayName", "UninstallString", "DisplayVersion"} {
		if !strings.Contains(reg, want) {
			t.Errorf("the uninstall entry lacks %s:\n%s", want, reg)
		}
	}

	// --version, from both programs.
	for _, prog := range []string{exe, com} {
		if out := w.run(time.Minute, "wine", prog, "--version"); !strings.Contains(out, "pilotdesk") {
			t.Errorf("%s --version: %q", filepath.Base(prog), out)
		}
	}

	// The relay: a data dir whose Windows path has a space and non-ASCII
	// letters, as a user's profile may.
	dataDir := `C:\users\Public\pilotdesk data ü`
	port := freePort(t)
	relay := w.serve(com, dataDir, port)

	// A second relay on the same data dir is refused: the lock holds.
	second := exec.Command("wine", com, "serve", "--agent", "script", "--script", w.script(),
		"--listen", fmt.Sprintf("127.0.0.1:%d", freePort(t)), "--token", token, "--data-dir", dataDir)
	second.Env = w.env
	out, err := second.CombinedOutput()
	if err == nil || !strings.Contains(strings.ToLower(string(out)), "data dir") {
		t.Errorf("a second relay on the data dir: err %v, output:\n%s", err, out)
	}

	conv := uuid.NewString()
	cl := relaytest.Dial(t, relay.url, token)
	cl.Send("copilot:subscribe", map[string]any{"conversationId": conv, "sinceSeq": 0})
	cl.Expect("copilot:subscribed")
	cl.Send("copilot:send", map[string]any{"conversationId": conv, "prompt": "hello from Wine"})
	_, frames := cl.WaitForCollect("copilot:idle", nil)
	var reply string
	for _, f := range frames {
		if f.Type == "copilot:message" {
			reply, _ = f.Field("content").(string)
		}
	}
	if reply != "You said: hello from Wine." {
		t.Fatalf("the reply is %q, want the prompt said back (frames: %v)", reply, frames)
	}
	cl.Close()
	relay.kill()

	// Restarted on the same data dir, the relay replays the turn from
	// SQLite.
	relay = w.serve(com, dataDir, port)
	cl = relaytest.Dial(t, relay.url, token)
	cl.Send("copilot:subscribe", map[string]any{"conversationId": conv, "sinceSeq": 0})
	_, replayed := cl.WaitForCollect("copilot:subscribed", nil)
	var sawPrompt, sawReply bool
	for _, f := range replayed {
		switch f.Type {
		case "copilot:user_message":
			sawPrompt = f.Field("content") == "hello from Wine"
		case "copilot:message":
			sawReply = f.Field("content") == reply
		}
	}
	if !sawPrompt || !sawReply {
		t.Errorf("after a restart the history lacks the prompt (%v) or the reply (%v): %v", sawPrompt, sawReply, replayed)
	}
	cl.Close()

	// The terminal client with piped input, attached to that relay.
	chat := exec.Command("wine", com, "chat", "--connect", relay.url, "--token", token)
	chat.Env = w.env
	chat.Stdin = strings.NewReader("hello from a pipe\n")
	chatOut, err := chat.CombinedOutput()
	if err != nil {
		t.Fatalf("chat: %v\n%s", err, chatOut)
	}
	if !strings.Contains(string(chatOut), "hello from a pipe") {
		t.Errorf("chat's output lacks the reply to the prompt:\n%s", chatOut)
	}
	relay.kill()

	// The uninstaller removes the program, its entry and its shortcut, and
	// leaves the data.
	w.run(3*time.Minute, "wine", filepath.Join(installDir, "uninstall.exe"), "/S")
	w.run(time.Minute, "wineserver", "-w")
	waitGone(t, exe, time.Minute)
	if _, err := os.Stat(installDir); !os.IsNotExist(err) {
		t.Errorf("the install folder is still there: %v", err)
	}
	dataOnDisk := filepath.Join(w.prefix, "drive_c", "users", "Public", "pilotdesk data ü")
	if _, err := os.Stat(filepath.Join(dataOnDisk, "history.db")); err != nil {
		entries, _ := os.ReadDir(dataOnDisk)
		t.Errorf("the data dir lost its history after uninstalling: %v (holds %v)", err, entries)
	}
}
