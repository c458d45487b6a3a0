package relay_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/relay/workspace"
)

// A send's clientId comes back on its turn's copilot:user_message, live and
// in a replay, so that its sender knows the prompt reached the relay; a
// send without one is echoed as before, without the key; a clientId that
// is no id is refused.
func TestSendClientIDEchoed(t *testing.T) {
	e := start(t, nil)
	cl := e.dial()
	cl.Send("copilot:send", map[string]any{"conversationId": "k", "prompt": "first", "clientId": "web-7f3a"})
	if sub := cl.Expect("copilot:subscribed"); sub.Field("starting") != nil {
		t.Fatalf("the sender's implicit subscription says a send is starting: %s", sub.Raw)
	}
	um := cl.Expect("copilot:user_message")
	if m := keys(t, um, "conversationId", "seq", "messageId", "content", "mode", "sentBy", "agent", "clientId"); m["clientId"] != "web-7f3a" {
		t.Fatalf("user_message %s", um.Raw)
	}
	e.agent.nextTurn(t).finish(nil)
	cl.Expect("copilot:idle")

	cl.Send("copilot:send", map[string]any{"conversationId": "k", "prompt": "second"})
	plain := cl.Expect("copilot:user_message")
	keys(t, plain, "conversationId", "seq", "messageId", "content", "mode", "sentBy", "agent")
	e.agent.nextTurn(t).finish(nil)
	cl.Expect("copilot:idle")

	late := e.dial()
	late.Send("copilot:subscribe", map[string]any{"conversationId": "k", "sinceSeq": 0})
	sub, replay := late.WaitForCollect("copilot:subscribed", nil)
	var echoes []any
	for _, f := range replay {
		if f.Type == "copilot:user_message" {
			echoes = append(echoes, f.Field("clientId"))
		}
	}
	if len(echoes) != 2 || echoes[0] != "web-7f3a" || echoes[1] != nil {
		t.Fatalf("the replay's prompts carry clientIds %v, want [web-7f3a <nil>]: %s", echoes, framesString(replay))
	}
	if sub.Field("starting") != nil {
		t.Fatalf("copilot:subscribed of an idle conversation: %s", sub.Raw)
	}

	for _, bad := range []any{"", strings.Repeat("x", 129), 7} {
		cl.Send("copilot:send", map[string]any{"conversationId": "k", "prompt": "third", "clientId": bad})
		if f := cl.Expect("error"); f.Field("code") != "invalid_field" || !strings.Contains(fmt.Sprint(f.Field("message")), "clientId") {
			t.Fatalf("a clientId of %v: %s", bad, f.Raw)
		}
	}
}

// A send the relay refuses is answered with an error that names the
// send's clientId, so that its client knows which prompt to give back
// (two may be on their way at once); a send without one gets the error
// without the key.
func TestSendRefusalNamesItsClientID(t *testing.T) {
	e := start(t, nil)
	cl := e.dial()
	cl.Send("copilot:send", map[string]any{"conversationId": "k", "prompt": "first", "clientId": "web-1"})
	cl.Expect("copilot:subscribed")
	cl.Expect("copilot:user_message")
	turn := e.agent.nextTurn(t)

	cl.Send("copilot:send", map[string]any{"conversationId": "k", "prompt": "second", "clientId": "web-2"})
	if f := cl.Expect("error"); f.Field("code") != "conversation_busy" || f.Field("clientId") != "web-2" {
		t.Fatalf("a send while a turn runs: %s, want conversation_busy naming web-2", f.Raw)
	}
	cl.Send("copilot:send", map[string]any{"conversationId": "k", "prompt": "third"})
	if f := cl.Expect("error"); f.Field("code") != "conversation_busy" || f.Field("clientId") != nil {
		t.Fatalf("a send without a clientId, refused: %s, want no clientId", f.Raw)
	}
	turn.finish(nil)
	cl.Expect("copilot:idle")

	cl.Send("copilot:send", map[string]any{"conversationId": "k", "prompt": strings.Repeat("x", protocol.MaxFrameBytes-100), "clientId": "web-3"})
	if f := cl.Expect("error"); f.Field("code") != "too_large" || f.Field("clientId") != "web-3" {
		t.Fatalf("a prompt over the frame limit: %s, want too_large naming web-3", f.Raw)
	}
}

// While a conversation's first send sets up its folder (here a worktree
// whose git command waits for the test), the relay sends no echo yet; a
// client that subscribes then (the sender's page, reconnected after its
// socket dropped) is told by copilot:subscribed's starting that the relay
// has its send, and gets the echo once the turn starts. Once it started,
// a subscription says nothing is starting.
func TestSubscribedNamesAStartingSend(t *testing.T) {
	realGit, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	home := t.TempDir()
	repo := gitRepo(t, filepath.Join(home, "project"))
	gate := t.TempDir()
	entered, open := filepath.Join(gate, "entered"), filepath.Join(gate, "open")
	// The git of the relay: `worktree add` waits until the test opens the
	// gate; everything else is git itself.
	wrapper := filepath.Join(gate, "git")
	script := fmt.Sprintf(`#!/bin/sh
case " $* " in *" worktree add "*)
  : > %q
  while [ ! -e %q ]; do sleep 0.02; done;;
esac
exec %q "$@"
`, entered, open, realGit)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	ws, err := workspace.New(workspace.Options{Roots: []string{home}, Default: home, WorktreeDir: filepath.Join(data, "worktrees"), Git: wrapper})
	if err != nil {
		t.Fatal(err)
	}
	e := start(t, func(cfg *relay.Config) { cfg.Workspaces = ws })
	// A failure does not leave the worktree's git waiting for good.
	t.Cleanup(func() { _ = os.WriteFile(open, nil, 0o644) })
	const id = "cccccccc-3333-4000-8000-000000000003"
	sender := e.dial()
	sender.Send("copilot:send", map[string]any{"conversationId": id, "prompt": "set up and go", "clientId": "web-1",
		"workspace": map[string]any{"path": repo, "isolation": "worktree"}})
	sender.Expect("copilot:subscribed")
	waitForFile(t, entered)

	// The sender's socket dropped; its page comes back and subscribes.
	sender.Close()
	back := e.dial()
	back.Send("copilot:subscribe", map[string]any{"conversationId": id, "sinceSeq": 0})
	sub := back.Expect("copilot:subscribed")
	starting, _ := sub.Field("starting").(map[string]any)
	if starting == nil || starting["clientId"] != "web-1" || sub.Field("streaming") != false || sub.Seq() != 0 {
		t.Fatalf("copilot:subscribed while the first send sets up its folder: %s", sub.Raw)
	}

	if err := os.WriteFile(open, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	um := back.Expect("copilot:user_message")
	if um.Field("clientId") != "web-1" || um.Field("content") != "set up and go" {
		t.Fatalf("the echo after the setup: %s", um.Raw)
	}
	ft := e.agent.nextTurn(t)
	other := e.dial()
	other.Send("copilot:subscribe", map[string]any{"conversationId": id})
	if sub := other.Expect("copilot:subscribed"); sub.Field("starting") != nil || sub.Field("streaming") != true {
		t.Fatalf("copilot:subscribed once the turn runs: %s", sub.Raw)
	}
	ft.finish(nil)
	back.WaitFor("copilot:idle", nil)
}

// waitForFile waits until path exists (a gate's signal), within
// relaytest.Timeout.
func waitForFile(t testing.TB, path string) {
	t.Helper()
	deadline := time.Now().Add(relaytest.Timeout)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A turn that started while its echo waits for its write (a slow store)
// is starting too: a subscription then is told the relay has the send,
// and the echo follows the frame.
func TestSubscribedNamesASendWhoseEchoWaitsForItsWrite(t *testing.T) {
	e := start(t, nil)
	gate := e.store.close()
	var once sync.Once
	release := func() { once.Do(func() { e.store.open(gate) }) }
	t.Cleanup(release) // a failure does not leave the relay's writes held
	sender := e.dial()
	sender.Send("copilot:send", map[string]any{"conversationId": "slow", "prompt": "hello", "clientId": "term-9"})
	ft := e.agent.nextTurn(t) // the turn runs: its echo is emitted, not yet stored
	back := e.dial()
	back.Send("copilot:subscribe", map[string]any{"conversationId": "slow", "sinceSeq": 0})
	sub := back.Expect("copilot:subscribed")
	if starting, _ := sub.Field("starting").(map[string]any); starting == nil || starting["clientId"] != "term-9" || sub.Seq() != 0 {
		t.Fatalf("copilot:subscribed while the echo waits for its write: %s", sub.Raw)
	}
	release()
	if um := back.Expect("copilot:user_message"); um.Field("clientId") != "term-9" {
		t.Fatalf("the echo: %s", um.Raw)
	}
	ft.finish(nil)
	back.WaitFor("copilot:idle", nil)
}
