package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
)

// Without a relay running: create prints the token alone on its first
// line, list shows the device (never the token), revoke removes it; bad
// invocations are usage errors.
func TestTokenCommandWithoutRelay(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	code, out, stderr := runCLI(t, ctx, "token", "create", "--name", "Pixel", "--role", "controller", "--expires", "24h", "--data-dir", dir)
	if code != 0 {
		t.Fatalf("create: %d\n%s", code, stderr)
	}
	token, rest, _ := strings.Cut(out, "\n")
	if !strings.HasPrefix(token, "pdt_") || len(token) != len("pdt_")+43 {
		t.Fatalf("first line %q is not a token alone", token)
	}
	if !strings.Contains(rest, `device "Pixel", role controller; it expires`) || !strings.Contains(rest, "No relay runs on "+dir) {
		t.Fatalf("create said:\n%s", out)
	}
	code, out, _ = runCLI(t, ctx, "token", "list", "--data-dir", dir)
	if code != 0 || !strings.Contains(out, "NAME") || !strings.Contains(out, "Pixel") || !strings.Contains(out, "controller") || strings.Contains(out, token) {
		t.Fatalf("list: %d\n%s", code, out)
	}
	for _, args := range [][]string{
		{"token", "create", "--name", "Pixel", "--role", "viewer", "--data-dir", dir}, // taken
	} {
		if code, _, stderr := runCLI(t, ctx, args...); code != 1 || !strings.Contains(stderr, "exists already") {
			t.Errorf("%v: %d %s", args, code, stderr)
		}
	}
	for _, args := range [][]string{
		{"token"},
		{"token", "mint"},
		{"token", "create", "--name", "x", "--data-dir", dir},
		{"token", "create", "--name", "x", "--role", "admin", "--data-dir", dir},
		{"token", "revoke", "--data-dir", dir},
		{"token", "list", "extra", "--data-dir", dir},
	} {
		if code, _, _ := runCLI(t, ctx, args...); code != 2 {
			t.Errorf("%v exited %d, want 2", args, code)
		}
	}
	if code, out, _ := runCLI(t, ctx, "token", "revoke", "Pixel", "--data-dir", dir); code != 0 || !strings.Contains(out, `Revoked "Pixel"`) {
		t.Fatalf("revoke: %d %s", code, out)
	}
	if code, _, stderr := runCLI(t, ctx, "token", "revoke", "--data-dir", dir, "Pixel"); code != 1 || !strings.Contains(stderr, `no device is named "Pixel"`) {
		t.Fatalf("revoking again: %d %s", code, stderr)
	}
}

// With `pilotdesk serve` running on the data dir: the token printed works
// at once (with its role: a viewer may not send), the output names the
// running relay's URL, and `token revoke` closes the live connection with
// 4003 within a second or so; the token then gets 401. The relay's file
// of its address is private and goes when it stops.
func TestTokenBesideRunningServe(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	cmd, addr, tail := startServe(t, "--listen", "127.0.0.1:0", "--agent", "script", "--data-dir", dir, "--token", "the-owner-token")
	running := filepath.Join(dir, runningName)
	if fi, err := os.Stat(running); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v %v", running, fi, err)
	}

	bin := pilotdeskBinary(t)
	out, err := exec.Command(bin, "token", "create", "--name", "phone", "--role", "viewer", "--data-dir", dir).Output()
	if err != nil {
		t.Fatalf("token create: %v", err)
	}
	token, rest, _ := strings.Cut(string(out), "\n")
	wsURL := "ws://" + addr + "/ws"
	if !strings.Contains(rest, "http://"+addr+"/#token="+token) || !strings.Contains(rest, "--connect "+wsURL+" --token "+token) {
		t.Fatalf("create said:\n%s", out)
	}
	cl := relaytest.Dial(t, wsURL+"?client=web", token)
	cl.Send(protocol.TypeSend, map[string]any{"conversationId": "c1", "prompt": "hi"})
	if f := cl.Expect(protocol.TypeError); !strings.Contains(string(f.Data), `"forbidden"`) {
		t.Fatalf("a viewer's send: %s", f.Raw)
	}
	cl.Send(protocol.TypePing, nil)
	cl.Expect(protocol.TypePong)

	if out, err := exec.Command(bin, "token", "revoke", "phone", "--data-dir", dir).CombinedOutput(); err != nil || !strings.Contains(string(out), "within a second") {
		t.Fatalf("token revoke: %v\n%s", err, out)
	}
	// From the revoke stored, not from starting the command: a process
	// (the binary's start, the store's open) can take seconds on a busy
	// machine, the relay's poll is what is checked.
	start := time.Now()
	if code, reason := cl.WaitClosed(); code != relay.CloseRevoked || reason != "token revoked" {
		t.Fatalf("closed with %d %q", code, reason)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the connection closed %s after the revoke", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), relaytest.Timeout)
	defer cancel()
	_, resp, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the revoked token's upgrade: %v %v", resp, err)
	}
	if strings.Contains(tail.String(), token) {
		t.Error("the token appears in the relay's log")
	}

	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Wait()
	if _, err := os.Stat(running); !os.IsNotExist(err) {
		t.Errorf("%s is left after serve stopped: %v", running, err)
	}
}

// `pilotdesk chat` on the data dir of a running serve attaches to it
// instead of being refused: its prompt runs on that relay.
func TestChatAttachesToServe(t *testing.T) {
	data := newServedDataDir(t)
	_, addr := data.serve("the-owner-token")

	chat := data.chat()
	chat.Stdin = strings.NewReader("hello\n")
	var stdout, stderr bytes.Buffer
	chat.Stdout, chat.Stderr = &stdout, &stderr
	if err := chat.Run(); err != nil {
		t.Fatalf("chat: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	out := stdout.String()
	if !strings.Contains(out, "pilotdesk chat · the relay of process") || !strings.Contains(out, "act> hello\nEcho: hello") {
		t.Fatalf("chat on a data dir a relay holds:\n%s\nstderr:\n%s", out, stderr.String())
	}
	// The conversation is the running relay's.
	cl := relaytest.Dial(t, "ws://"+addr+"/ws", "the-owner-token")
	cl.Send(protocol.TypeList, nil)
	var list protocol.Conversations
	cl.Expect(protocol.TypeConversations).Decode(t, &list)
	if len(list.Conversations) != 1 || list.Conversations[0].Title != "hello" {
		b, _ := json.Marshal(list)
		t.Fatalf("the relay lists %s", b)
	}
}
