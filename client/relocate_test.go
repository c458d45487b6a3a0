package client_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/internal/testsupport"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
)

// TestRelocateFollowsTheRelay: a client with Relocate whose connection is
// closed with 4003 and whose token then gets 401 does not stop with
// ErrRevoked: it asks Relocate where the relay is and goes on there. The
// same client without Relocate stops revoked.
func TestRelocateFollowsTheRelay(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := relaytest.Start(t, relay.Config{Token: "a-token"})
	b := relaytest.Start(t, relay.Config{Token: "b-token"})

	for _, relocate := range []bool{false, true} {
		name := "phone-" + map[bool]string{false: "fixed", true: "relocating"}[relocate]
		token, _, err := a.Relay.CreateDevice(ctx, relay.NewDevice{Name: name, Role: protocol.RoleController})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex // guards asked
		asked := 0
		logs := &testsupport.Buffer{}
		cfg := client.Config{URL: a.URL, Token: token, MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(logs, nil))}
		if relocate {
			cfg.Relocate = func(context.Context) (client.Endpoint, error) {
				mu.Lock()
				defer mu.Unlock()
				asked++
				return client.Endpoint{URL: b.HTTPURL + "/ws", Token: "b-token"}, nil
			}
		}
		c, err := cfg.Dial(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Relay.RevokeDevice(ctx, name); err != nil {
			t.Fatal(err)
		}
		var final error
		dropped := false // the first Live is Dial's
	wait:
		for {
			select {
			case ev, ok := <-c.Events():
				if !ok {
					t.Fatal("events ended without a final state")
				}
				sc, isState := ev.Data.(*client.StateChange)
				if !isState {
					continue
				}
				if sc.State == client.StateClosed {
					final = sc.Err
					break wait
				}
				if sc.State == client.StateReconnecting || sc.State == client.StateOffline {
					dropped = true
				}
				if sc.State == client.StateLive && dropped {
					break wait
				}
			case <-ctx.Done():
				t.Fatalf("relocate %v: no final or live state", relocate)
			}
		}
		if !relocate {
			if !errors.Is(final, client.ErrRevoked) {
				t.Fatalf("without Relocate: closed with %v, want ErrRevoked", final)
			}
			c.Close()
			continue
		}
		if final != nil {
			t.Fatalf("with Relocate: closed with %v", final)
		}
		if c.URL() != b.URL {
			t.Fatalf("with Relocate the client is on %s, want %s", c.URL(), b.URL)
		}
		// The log names the relay in use from the move on.
		_, after, _ := strings.Cut(logs.String(), "the relay moved")
		if !strings.Contains(after, "relay connection restored") || strings.Contains(after, "relay="+a.URL) {
			t.Fatalf("after the move the log names the old relay %s:\n%s", a.URL, logs.String())
		}
		mu.Lock()
		n := asked
		mu.Unlock()
		if n == 0 {
			t.Fatal("Relocate was never asked")
		}
		if err := c.Ping(ctx); err != nil {
			t.Fatalf("ping on the new relay: %v", err)
		}
		c.Close()
	}
}
