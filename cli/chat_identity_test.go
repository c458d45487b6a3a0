package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/chat"
	"github.com/pilotdesk/pilotdesk/internal/testsupport"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/session/script"
)

// TestChatRemembersItsDevice: pilotdesk chat with a device token learns
// its device from its first prompt's echo and keeps it in its data dir
// (under a digest, never the token, readable by this user only), so that
// after a restart its own earlier prompt, replayed, is its own, not "sent
// from Pixel (terminal)". With a data dir that kept nothing it is.
func TestChatRemembersItsDevice(t *testing.T) {
	sc, err := script.Parse("chat script", []byte(chatTestScript))
	if err != nil {
		t.Fatal(err)
	}
	srv := relaytest.Start(t, relay.Config{Agent: script.New(sc), Token: "relay-token"})
	pixel, _, err := srv.Relay.CreateDevice(context.Background(), relay.NewDevice{Name: "Pixel", Role: protocol.RoleController})
	if err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(t.TempDir(), "data")

	// chatRun runs pilotdesk chat on the relay with Pixel's token and the
	// data dir dir, types prompt (if any), waits for want and quits.
	chatRun := func(dir, prompt, want string, args ...string) string {
		t.Helper()
		in, typing := io.Pipe()
		out := &testsupport.Buffer{}
		var stderr bytes.Buffer
		env := Env{Stdin: in, Stdout: out, Stderr: &stderr, Getenv: func(string) string { return "" }}
		done := make(chan int, 1)
		go func() {
			done <- Run(context.Background(), append([]string{"chat", "--connect", srv.URL, "--token", pixel, "--data-dir", dir}, args...), env)
		}()
		if prompt != "" {
			go func() { _, _ = io.WriteString(typing, prompt+"\n") }()
		}
		deadline := time.Now().Add(relaytest.Timeout)
		for !strings.Contains(out.String(), want) {
			if time.Now().After(deadline) {
				typing.Close()
				t.Fatalf("no %q in the chat's output:\n%s\nstderr:\n%s", want, out.String(), stderr.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		typing.Close()
		select {
		case code := <-done:
			if code != 0 {
				t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
			}
		case <-time.After(relaytest.Timeout):
			t.Fatal("chat did not end with its input")
		}
		return out.String()
	}

	// The first run: a new conversation, one prompt.
	out := chatRun(dataDir, "hello", "Echo: hello")
	m := regexp.MustCompile(`New conversation ([0-9a-f-]{36})`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no conversation in:\n%s", out)
	}
	conv := m[1]

	path := filepath.Join(dataDir, chat.IdentityFileName)
	info, err := os.Stat(path)
	if err != nil {
		t.Fatalf("chat kept nothing: %v", err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", path, info.Mode().Perm())
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), pixel) || strings.Contains(string(raw), strings.TrimPrefix(pixel, "pdt_")) {
		t.Fatalf("the file holds the token:\n%s", raw)
	}
	var kept map[string]struct{ By protocol.By }
	if err := json.Unmarshal(raw, &kept); err != nil || len(kept) != 1 {
		t.Fatalf("the file is not one identity (%v):\n%s", err, raw)
	}

	const end = "── end of history"
	again := chatRun(dataDir, "", end, "--conversation", conv)
	if !strings.Contains(again, "act> hello\n") {
		t.Fatalf("the prompt is not replayed:\n%s", again)
	}
	if strings.Contains(again, "(sent from") {
		t.Errorf("after a restart the chat's own prompt is another's:\n%s", again)
	}

	// Control: with a data dir that kept nothing, the replayed prompt is
	// named, as the device's (the test can tell the two apart).
	fresh := chatRun(filepath.Join(t.TempDir(), "other"), "", end, "--conversation", conv)
	if !strings.Contains(fresh, "(sent from Pixel (terminal))") {
		t.Errorf("with nothing kept, the replayed prompt is not named:\n%s", fresh)
	}
}
