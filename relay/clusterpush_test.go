package relay_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/history/jetstream"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/session/script"
)

// Web Push on a cluster (docs/push.md, Several relays): the subscriptions
// and the VAPID key pair are the cluster's, so a browser that subscribed
// through relay B is pushed by relay A, which owns the conversation, with
// the key B gave it; a device with a page open on B is not pushed by A,
// and is once that page closes; B, which does not own the conversation,
// pushes nothing.
func TestClusterPush(t *testing.T) {
	parallel(t)
	eachBackend(t, func(t *testing.T, b testBackend) {
		svc := newPushService(t)
		s := clusterScript(t)
		var keys [2]relay.VAPIDKeys
		var reports [2]chan relay.PushReport
		var m [2]*member
		for i := range m {
			k, err := relay.NewVAPIDKeys()
			if err != nil {
				t.Fatal(err)
			}
			keys[i], reports[i] = k, make(chan relay.PushReport, 16)
			m[i] = b.relayMod(t, i, script.New(s), jetstream.ClusterOptions{Lease: testLease}, func(c *relay.Config) {
				c.Token = ownToken
				c.Push = &relay.PushConfig{Keys: k, Client: svc.srv.Client()}
			})
			ch := reports[i]
			m[i].srv.Relay.OnPush(func(r relay.PushReport) { ch <- r })
		}
		a, bb := m[0], m[1]
		// Both relays hand out and sign with the first relay's pair.
		for i, mm := range m {
			if code, body := httpCall(t, mm.srv, "GET", "/push/key", ownToken, nil); code != http.StatusOK || !strings.Contains(body, keys[0].Public) {
				t.Fatalf("relay %d's key: %d %s, want relay 0's %s", i, code, body, keys[0].Public)
			}
		}

		ctx := context.Background()
		pixelToken, _, err := a.srv.Relay.CreateDevice(ctx, relay.NewDevice{Name: "Pixel", Role: protocol.RoleController})
		if err != nil {
			t.Fatal(err)
		}
		laptopToken, _, err := a.srv.Relay.CreateDevice(ctx, relay.NewDevice{Name: "Laptop", Role: protocol.RoleController})
		if err != nil {
			t.Fatal(err)
		}
		pixel, laptop := newBrowser(t, svc, "/sub/pixel"), newBrowser(t, svc, "/sub/laptop")
		for _, sub := range []struct {
			via   *member
			token string
			b     *browser
		}{{bb, pixelToken, pixel}, {a, laptopToken, laptop}} {
			if code, body := httpCall(t, sub.via.srv, "POST", "/push/subscribe", sub.token, sub.b.subscription(false)); code != http.StatusNoContent {
				t.Fatalf("subscribe %s: %d %s", sub.b.endpoint, code, body)
			}
		}

		// The laptop has a page open on B: A hears of it.
		laptopConn := relaytest.Dial(t, bb.srv.URL, laptopToken)
		sync_(t, laptopConn)
		laptopHash := sha256.Sum256([]byte(laptopToken))
		waitPresent(t, a, laptopHash, true)

		id := "push-" + b.name
		ca := relaytest.Dial(t, a.srv.URL, ownToken)
		send(ca, id, "question")
		ask := ca.WaitFor("copilot:user_input_request", nil)
		rep := nextReport(t, reports[0])
		if want := (relay.PushReport{Sent: []string{pixel.endpoint}, Skipped: []string{laptop.endpoint}}); !sameReport(rep, want) {
			t.Fatalf("A's pushes for the question: %+v, want %+v", rep, want)
		}
		got := receivedPush(t, svc, pixel, keys[0], 1)
		if got.Title != "Question: question" || got.ConversationID != id {
			t.Fatalf("Pixel got %+v", got)
		}

		// The laptop's page closes: the turn's end reaches it too.
		laptopConn.Close()
		waitPresent(t, a, laptopHash, false)
		ca.Send("copilot:user_input_response", map[string]any{"conversationId": id, "requestId": ask.Field("requestId"), "answer": "left"})
		wantIdle(t, ca, "A's client", protocol.StatusCompleted)
		rep = nextReport(t, reports[0])
		if want := (relay.PushReport{Sent: []string{laptop.endpoint, pixel.endpoint}}); !sameReport(rep, want) {
			t.Fatalf("A's pushes for the turn's end: %+v, want %+v", rep, want)
		}
		if got := receivedPush(t, svc, laptop, keys[0], 1); got.Title != "question" || got.Body != "The agent finished its turn." {
			t.Fatalf("Laptop got %+v", got)
		}
		receivedPush(t, svc, pixel, keys[0], 2)
		select {
		case r := <-reports[1]:
			t.Fatalf("B, which does not own the conversation, pushed: %+v", r)
		default:
		}
	})
}

// waitPresent waits until the relay m hears that the token hashing to h
// has a connection open on another relay (want) or no longer has.
func waitPresent(t *testing.T, m *member, h [sha256.Size]byte, want bool) {
	t.Helper()
	p, ok := m.cluster.(history.Presence)
	if !ok {
		t.Fatal("the cluster shares no presence")
	}
	deadline := time.Now().Add(wait)
	for p.Present()[h] != want {
		if time.Now().After(deadline) {
			t.Fatalf("the relay's presence of the token is not %v within %s", want, wait)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func nextReport(t *testing.T, ch chan relay.PushReport) relay.PushReport {
	t.Helper()
	select {
	case r := <-ch:
		for _, l := range []*[]string{&r.Sent, &r.Skipped, &r.Removed, &r.Failed} {
			slices.Sort(*l)
		}
		return r
	case <-time.After(wait):
		t.Fatalf("no push within %s", wait)
		return relay.PushReport{}
	}
}

func sameReport(a, b relay.PushReport) bool {
	return slices.Equal(a.Sent, b.Sent) && slices.Equal(a.Skipped, b.Skipped) &&
		slices.Equal(a.Removed, b.Removed) && slices.Equal(a.Failed, b.Failed)
}

// receivedPush returns the n-th push the browser's endpoint got (and
// fails unless it got exactly n), decrypted, after checking that keys
// signed it.
func receivedPush(t *testing.T, svc *pushService, b *browser, keys relay.VAPIDKeys, n int) pushed {
	t.Helper()
	reqs, bodies := svc.received(strings.TrimPrefix(b.endpoint, svc.srv.URL))
	if len(reqs) != n {
		t.Fatalf("%s got %d pushes, want %d", b.endpoint, len(reqs), n)
	}
	checkVAPID(t, reqs[n-1], keys, svc.srv.URL)
	var got pushed
	if err := json.Unmarshal(b.decrypt(t, bodies[n-1]), &got); err != nil {
		t.Fatal(err)
	}
	return got
}

// httpCall makes an HTTP request to srv with token and returns the
// status and body.
func httpCall(t *testing.T, srv *relaytest.Server, method, path, token string, body any) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, srv.HTTPURL+path, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}
