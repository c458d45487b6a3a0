package cli

import (
	"context"
	"errors"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/internal/testsupport"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/settings"
)

// watchStates forwards the state changes of c until its events end.
func watchStates(c *client.Client) <-chan client.StateChange {
	states := make(chan client.StateChange, 1024)
	go func() {
		defer close(states)
		for ev := range c.Events() {
			if sc, ok := ev.Data.(*client.StateChange); ok {
				states <- *sc
			}
		}
	}()
	return states
}

// waitBackLive waits until c, whose relay went away, is live again; a
// final state (ErrRevoked above all) fails the test.
func waitBackLive(t *testing.T, states <-chan client.StateChange) {
	t.Helper()
	timeout := time.After(60 * time.Second)
	dropped := false
	for {
		select {
		case sc, ok := <-states:
			if !ok || sc.State == client.StateClosed {
				t.Fatalf("the client stopped (revoked: %v): %v", errors.Is(sc.Err, client.ErrRevoked), sc.Err)
			}
			if sc.State == client.StateReconnecting || sc.State == client.StateOffline {
				dropped = true
			}
			if sc.State == client.StateLive && dropped {
				return
			}
		case <-timeout:
			t.Fatal("the client did not come back")
		}
	}
}

// TestApplyKeepsTheOwnerToken: Settings → Apply restarts the window's
// embedded relay in place with the same owner token (one per app start).
// A chat attached through the data dir's relay file, which the old relay
// had, finds the new one and resumes its conversation
// there; nothing says its token was revoked; and the old token opens the
// new relay, as a phone given it would.
func TestApplyKeepsTheOwnerToken(t *testing.T) {
	a := newPrefsApp(t, testAppID())
	start := settings.Defaults()
	start.Agent = settings.AgentDemo
	settings.Save(a.Preferences(), start)
	dir := t.TempDir()
	td, err := openTestDesktop(t, a, "--data-dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	first := td.d.cur
	running, err := readRunning(dir)
	if err != nil || running.URL != first.target.URL || running.Token != first.target.Token {
		t.Fatalf("the relay file %+v, %v; the relay at %s", running, err, first.target.URL)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// What `pilotdesk chat --data-dir dir` runs once attached (chat.go).
	attached, err := client.Config{URL: running.URL, Token: running.Token, Kind: protocol.ClientTerminal,
		Relocate: followRunning(dir), MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer attached.Close()
	states := watchStates(attached)
	id := uuid.NewString()
	if err := attached.Send(ctx, id, "markdown before the restart", protocol.ModeAct, ""); err != nil {
		t.Fatal(err)
	}
	waitConversation(t, first, "markdown before the restart")

	next := start
	next.InputTimeout = 2 * time.Minute
	second := td.applyRestarts(next)
	if second.target.Token != first.target.Token {
		t.Fatal("the restarted relay has a new owner token")
	}

	waitBackLive(t, states)
	if got := attached.URL(); got != second.target.URL {
		t.Fatalf("the attached client is on %s, the relay on %s", got, second.target.URL)
	}
	if err := attached.Send(ctx, id, "markdown after the restart", protocol.ModeAct, ""); err != nil {
		t.Fatal(err)
	}
	waitPrompt(t, second, "markdown before the restart", "markdown after the restart")

	phone, err := client.Config{URL: second.target.URL, Token: first.target.Token, DialTimeout: 5 * time.Second}.Dial(ctx)
	if err != nil {
		t.Fatalf("the old owner token on the restarted relay: %v", err)
	}
	phone.Close()
}

// TestChatFollowsServeOfItsDataDir: `pilotdesk chat` attached to the serve
// of its data dir; that serve stops and another starts on the same data
// dir, on another port with another token: the chat re-reads the relay
// file, attaches to the new one and sends there. It never says its token
// was revoked.
func TestChatFollowsServeOfItsDataDir(t *testing.T) {
	data := newServedDataDir(t)
	serve1, _ := data.serve("the-first-token")

	chat := data.chat()
	in, typed := io.Pipe()
	chat.Stdin = in
	var stdout, stderr testsupport.Buffer
	chat.Stdout, chat.Stderr = &stdout, &stderr
	if err := chat.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { typed.Close(); _ = chat.Process.Kill(); _ = chat.Wait() })
	waitOut := func(want string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for !strings.Contains(stdout.String(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("the chat never said %q:\n%s\nstderr:\n%s", want, stdout.String(), stderr.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if _, err := io.WriteString(typed, "hello\n"); err != nil {
		t.Fatal(err)
	}
	waitOut("Echo: hello")

	_ = serve1.Process.Signal(syscall.SIGTERM)
	_ = serve1.Wait()
	waitOut("reconnecting")
	_, addr2 := data.serve("the-second-token")
	waitOut("Reconnected.")
	if _, err := io.WriteString(typed, "again\n"); err != nil {
		t.Fatal(err)
	}
	waitOut("Echo: again")
	typed.Close()
	if err := chat.Wait(); err != nil {
		t.Fatalf("chat: %v\nstderr:\n%s", err, stderr.String())
	}
	out := stdout.String() + stderr.String()
	if strings.Contains(out, "revoked") {
		t.Fatalf("the chat says its token was revoked:\n%s", out)
	}
	if running, err := readRunning(data.dir); err != nil || !strings.Contains(running.URL, addr2) {
		t.Fatalf("the relay file: %+v %v (the new serve is at %s)", running, err, addr2)
	}
}
