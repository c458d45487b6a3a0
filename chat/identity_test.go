package chat

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/session/script"
)

// startDeviceREPL runs the REPL on a relay with a token, connected as the
// terminal of the device "Pixel" (a controller's device token), and
// returns it with a token of a second device, "tablet".
func startDeviceREPL(t *testing.T) (h *relayHarness, tablet string) {
	t.Helper()
	sc, err := script.Parse("test script", []byte(relayScript))
	if err != nil {
		t.Fatal(err)
	}
	srv := relaytest.Start(t, relay.Config{Agent: script.New(sc), Token: "t0ken"})
	mk := func(name string) string {
		token, _, err := srv.Relay.CreateDevice(context.Background(), relay.NewDevice{Name: name, Role: protocol.RoleController})
		if err != nil {
			t.Fatal(err)
		}
		return token
	}
	pixel, tablet := mk("Pixel"), mk("tablet")
	ctx, cancel := context.WithCancel(context.Background())
	conn, err := client.Config{URL: srv.URL, Token: pixel, Kind: protocol.ClientTerminal}.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	h = &relayHarness{t: t, srv: srv, out: &output{}, in: pw, done: make(chan error, 1)}
	go func() {
		h.done <- Run(ctx, Config{Conn: conn, In: pr, Out: h.out, NewID: func() string { return testConv }})
	}()
	t.Cleanup(func() {
		cancel()
		pw.Close()
		select {
		case <-h.done:
		case <-time.After(relaytest.Timeout):
			t.Error("Run did not return")
		}
		conn.Close()
	})
	return h, tablet
}

// pilotdesk chat with a device token knows its own device: its own prompt
// and switch are not named, another device's are, by their device (not
// as "this device", which the terminal is not), and the relay's own
// device is named for what it is.
func TestDeviceTerminalKnowsItself(t *testing.T) {
	h, tabletToken := startDeviceREPL(t)
	h.typeIn("hello\n")
	h.waitFor("Echo: hello")
	h.typeIn("/plan\n")
	h.waitFor("Switched to Plan: every tool call is denied")

	tablet := relaytest.Dial(t, h.srv.URL+"?client=web", tabletToken)
	tablet.Send(protocol.TypeSubscribe, map[string]any{"conversationId": testConv})
	tablet.WaitFor(protocol.TypeSubscribed, nil)
	tablet.Send(protocol.TypeSetMode, map[string]any{"conversationId": testConv, "mode": "act"})
	h.waitFor("Switched to Act by tablet (web): tool calls run from the next turn.")
	tablet.Send(protocol.TypeSend, map[string]any{"conversationId": testConv, "prompt": "from the tablet"})
	h.waitFor("(sent from tablet (web))")
	h.waitFor("Echo: from the tablet")

	own := relaytest.Dial(t, h.srv.URL+"?client=window", h.srv.Token)
	own.Send(protocol.TypeSend, map[string]any{"conversationId": testConv, "prompt": "from the window"})
	h.waitFor("(sent from this device (window))")
	h.waitFor("Echo: from the window")

	out := h.out.text()
	for _, wrong := range []string{"by Pixel", "from Pixel", "on this device"} {
		if strings.Contains(out, wrong) {
			t.Errorf("the terminal says %q of itself or another:\n%s", wrong, out)
		}
	}
}
