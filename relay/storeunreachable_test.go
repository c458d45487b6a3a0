package relay_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/history/jetstream"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
)

// healthBody is /healthz's answer: its status code and body.
func healthBody(t *testing.T, srv *relaytest.Server) (int, string, string) {
	t.Helper()
	resp, err := http.Get(srv.HTTPURL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(body)
}

// waitHealth asks /healthz until it answers code, and returns the body.
func waitHealth(t *testing.T, srv *relaytest.Server, code int) (string, string) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		got, ctype, body := healthBody(t, srv)
		if got == code {
			return ctype, body
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz still answers %d %q after %v, want %d", got, body, wait, code)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A relay whose history store does not answer (the JetStream cluster lost
// its quorum, played here by failing its lease renewals) says so: /healthz
// answers 503 with the reason in JSON, within half the lease, and a
// copilot:send gets error limit saying the store cannot be reached at
// once, instead of a turn whose appends wait out their 30 s. Once the
// store answers again the relay serves as before.
func TestClusterStoreUnreachable(t *testing.T) {
	parallel(t)
	checkNoLeaks(t)
	b := embeddedBackend(t)
	var down atomic.Bool
	a := b.relayWith(t, 0, clusterScript(t), jetstream.ClusterOptions{Lease: testLease, BeforeRenew: func(context.Context) error {
		if down.Load() {
			return errors.New("no quorum (the test's)")
		}
		return nil
	}})
	ca := a.srv.Dial(t)
	const id = "store-unreachable"
	send(ca, id, "hello")
	wantIdle(t, ca, "the client", "completed")
	if code, _, body := healthBody(t, a.srv); code != http.StatusOK || body != "ok" {
		t.Fatalf("/healthz: %d %q, want 200 ok", code, body)
	}

	down.Store(true)
	ctype, body := waitHealth(t, a.srv, http.StatusServiceUnavailable)
	var h struct{ Status, Reason string }
	if err := json.Unmarshal([]byte(body), &h); err != nil || ctype != "application/json" || h.Status != "unavailable" ||
		!(strings.Contains(h.Reason, "history store") || strings.Contains(h.Reason, "lease lapsed")) {
		t.Fatalf("/healthz answered 503 %s %q (%v)", ctype, body, err)
	}

	send(ca, id, "hello")
	e := ca.WaitFor("error", nil)
	if e.Field("code") != "limit" || e.Field("type") != "copilot:send" || !strings.Contains(fmt.Sprint(e.Field("message")), "history store cannot be reached") {
		t.Fatalf("the send got %s", e.Raw)
	}
	ca.ExpectNothing(100 * time.Millisecond) // no turn started

	down.Store(false)
	waitHealth(t, a.srv, http.StatusOK)
	send(ca, id, "hello")
	wantIdle(t, ca, "the client, once the store is back", "completed")
}
