package relay_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"testing"

	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/history"
)

// failingDevices is a devices table whose look-ups fail, as one does when
// the client that asked has gone (the relay closes pending upgrades over
// an address's limit) or the store cannot answer.
type failingDevices struct{ *history.Memory }

func (failingDevices) DeviceByHash(context.Context, [sha256.Size]byte) (history.Device, error) {
	return history.Device{}, errors.New("history: look up a device: context canceled")
}

// A token the relay could not check is no wrong token: it gets 503, and
// however many come, the address is not throttled, so the owner there
// still connects. Before, each counted as a wrong token: in the full-scale
// flood (tools/flood) 10,000 viewer upgrades, many closed during their
// look-up, had 127.0.0.1 throttled and the owner refused with 429.
func TestUncheckedTokensAreNotWrong(t *testing.T) {
	parallel(t)
	e := start(t, func(c *relay.Config) {
		c.Token = ownToken
		c.Devices = failingDevices{history.NewMemory()}
		c.AuthFailuresAllowed = 3
	})
	upgrade := func(token string) int {
		t.Helper()
		req, _ := http.NewRequest("GET", e.srv.HTTPURL+"/ws", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "websocket")
		req.Header.Set("Sec-WebSocket-Version", "13")
		req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for i := range 10 {
		if code := upgrade("a-device-token-that-cannot-be-looked-up"); code != http.StatusServiceUnavailable {
			t.Fatalf("upgrade %d with a token the relay could not check: %d, want 503", i, code)
		}
	}
	if code := upgrade(ownToken); code != http.StatusSwitchingProtocols {
		t.Fatalf("the owner after 10 unchecked tokens from its address: %d, want 101", code)
	}
}
