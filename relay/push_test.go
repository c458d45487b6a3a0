package relay_test

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
	"github.com/pilotdesk/pilotdesk/session"
)

// pushService is a loopback push service (RFC 8030) over TLS: it keeps
// what each endpoint was sent, and answers 410 Gone for endpoints under
// /gone/.
type pushService struct {
	srv *httptest.Server
	mu  sync.Mutex
	got map[string][]*http.Request // by path; Body replaced by its bytes in bodies
	raw map[string][][]byte
}

func newPushService(t *testing.T) *pushService {
	s := &pushService{got: map[string][]*http.Request{}, raw: map[string][][]byte{}}
	s.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.got[r.URL.Path] = append(s.got[r.URL.Path], r)
		s.raw[r.URL.Path] = append(s.raw[r.URL.Path], body)
		s.mu.Unlock()
		if strings.HasPrefix(r.URL.Path, "/gone/") {
			w.WriteHeader(http.StatusGone)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *pushService) received(path string) ([]*http.Request, [][]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got[path]), slices.Clone(s.raw[path])
}

// browser is a browser's side of a subscription: its keys.
type browser struct {
	endpoint string
	priv     *ecdh.PrivateKey
	auth     []byte
}

func newBrowser(t *testing.T, svc *pushService, path string) *browser {
	priv, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	auth := make([]byte, 16)
	rand.Read(auth)
	return &browser{endpoint: svc.srv.URL + path, priv: priv, auth: auth}
}

func (b *browser) subscription(text bool) map[string]any {
	return map[string]any{"endpoint": b.endpoint, "expirationTime": nil, "text": text, "keys": map[string]string{
		"p256dh": base64.RawURLEncoding.EncodeToString(b.priv.PublicKey().Bytes()),
		"auth":   base64.RawURLEncoding.EncodeToString(b.auth),
	}}
}

// decrypt opens an aes128gcm message (RFC 8188) encrypted for the browser
// (RFC 8291), as the browser does.
func (b *browser) decrypt(t *testing.T, body []byte) []byte {
	t.Helper()
	if len(body) < 21 {
		t.Fatalf("a body of %d bytes", len(body))
	}
	salt, rs, idlen := body[:16], binary.BigEndian.Uint32(body[16:20]), int(body[20])
	if idlen != 65 || len(body) < 21+idlen {
		t.Fatalf("keyid of %d bytes", idlen)
	}
	asPublic, ciphertext := body[21:21+idlen], body[21+idlen:]
	if len(body) > int(rs) {
		t.Fatalf("a body of %d bytes in records of %d: more than one record", len(body), rs)
	}
	as, err := ecdh.P256().NewPublicKey(asPublic)
	if err != nil {
		t.Fatalf("the sender's key: %v", err)
	}
	secret, err := b.priv.ECDH(as)
	if err != nil {
		t.Fatal(err)
	}
	info := append(append([]byte("WebPush: info\x00"), b.priv.PublicKey().Bytes()...), asPublic...)
	ikm, err := hkdf.Key(sha256.New, secret, b.auth, string(info), 32)
	if err != nil {
		t.Fatal(err)
	}
	cek, err := hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: aes128gcm\x00", 16)
	if err != nil {
		t.Fatal(err)
	}
	nonce, err := hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: nonce\x00", 12)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := aes.NewCipher(cek)
	gcm, _ := cipher.NewGCM(block)
	plain, err := gcm.Open(nil, nonce, ciphertext, nil)
	if err != nil {
		t.Fatalf("the push does not decrypt with the subscription's keys: %v", err)
	}
	plain = bytes.TrimRight(plain, "\x00")
	if len(plain) == 0 || plain[len(plain)-1] != 2 {
		t.Fatalf("the last record lacks its delimiter 0x02: %q", plain)
	}
	return plain[:len(plain)-1]
}

// checkVAPID checks a push's Authorization header (RFC 8292): the relay's
// public key, and a JWT it signed (ES256) for the push service's origin.
func checkVAPID(t *testing.T, r *http.Request, keys relay.VAPIDKeys, origin string) {
	t.Helper()
	h := r.Header.Get("Authorization")
	var jwt, k string
	for _, part := range strings.Split(strings.TrimPrefix(h, "vapid "), ",") {
		part = strings.TrimSpace(part)
		if v, ok := strings.CutPrefix(part, "t="); ok {
			jwt = v
		}
		if v, ok := strings.CutPrefix(part, "k="); ok {
			k = v
		}
	}
	if !strings.HasPrefix(h, "vapid ") || jwt == "" || k != keys.Public {
		t.Fatalf("Authorization %q: want vapid t=JWT, k=%s", h, keys.Public)
	}
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		t.Fatalf("JWT %q", jwt)
	}
	var hdr struct{ Alg, Typ string }
	var claims struct {
		Aud string `json:"aud"`
		Exp int64  `json:"exp"`
		Sub string `json:"sub"`
	}
	for i, v := range []any{&hdr, &claims} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil || json.Unmarshal(b, v) != nil {
			t.Fatalf("JWT part %d: %q", i, parts[i])
		}
	}
	if hdr.Alg != "ES256" || claims.Aud != origin || claims.Sub == "" ||
		claims.Exp <= time.Now().Unix() || claims.Exp > time.Now().Add(24*time.Hour).Unix() {
		t.Fatalf("JWT header %+v, claims %+v; want ES256 for %s, expiring within 24 hours", hdr, claims, origin)
	}
	pub, _ := base64.RawURLEncoding.DecodeString(keys.Public)
	key, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), pub)
	if err != nil {
		t.Fatalf("the relay's public key %q: %v", keys.Public, err)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		t.Fatalf("JWT signature of %d bytes: %v", len(sig), err)
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if !ecdsa.Verify(key, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		t.Fatal("the VAPID JWT is not signed by the relay's key")
	}
}

// pushEnv is a relay with devices and Web Push to a loopback push service.
type pushEnv struct {
	*env
	devs    *history.Memory
	svc     *pushService
	keys    relay.VAPIDKeys
	reports chan relay.PushReport
}

func startPush(t *testing.T) *pushEnv {
	t.Helper()
	keys, err := relay.NewVAPIDKeys()
	if err != nil {
		t.Fatal(err)
	}
	svc := newPushService(t)
	e, devs := startDevices(t, func(c *relay.Config) {
		c.Push = &relay.PushConfig{Keys: keys, Client: svc.srv.Client()}
	})
	p := &pushEnv{env: e, devs: devs, svc: svc, keys: keys, reports: make(chan relay.PushReport, 16)}
	e.srv.Relay.OnPush(func(r relay.PushReport) { p.reports <- r })
	return p
}

// call makes an HTTP request to the relay with token and returns the
// status and body.
func (p *pushEnv) call(method, path, token string, body any) (int, string) {
	p.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, p.srv.HTTPURL+path, rd)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func (p *pushEnv) subscribe(token string, b *browser, text bool) {
	p.t.Helper()
	if code, body := p.call("POST", "/push/subscribe", token, b.subscription(text)); code != http.StatusNoContent {
		p.t.Fatalf("subscribe: %d %s", code, body)
	}
}

func (p *pushEnv) report() relay.PushReport {
	p.t.Helper()
	select {
	case r := <-p.reports:
		for _, l := range []*[]string{&r.Sent, &r.Skipped, &r.Removed, &r.Failed} {
			slices.Sort(*l)
		}
		return r
	case <-time.After(wait):
		p.t.Fatalf("no push within %s", wait)
		return relay.PushReport{}
	}
}

func (p *pushEnv) endpoints() []string {
	p.t.Helper()
	subs, err := p.devs.PushSubscriptions(context.Background())
	if err != nil {
		p.t.Fatal(err)
	}
	var out []string
	for _, s := range subs {
		out = append(out, s.Endpoint)
	}
	slices.Sort(out)
	return out
}

type pushed struct {
	Title, Body, ConversationID, Tag string
}

// only returns the one push the browser's endpoint got, decrypted, after
// checking its headers and its VAPID signature.
func (p *pushEnv) only(b *browser, n int) pushed {
	p.t.Helper()
	path := strings.TrimPrefix(b.endpoint, p.svc.srv.URL)
	reqs, bodies := p.svc.received(path)
	if len(reqs) != n {
		p.t.Fatalf("%s got %d pushes, want %d", path, len(reqs), n)
	}
	r := reqs[n-1]
	checkVAPID(p.t, r, p.keys, p.svc.srv.URL)
	if r.Header.Get("Content-Encoding") != "aes128gcm" || r.Header.Get("TTL") == "" || r.Header.Get("TTL") == "0" {
		p.t.Fatalf("headers %v", r.Header)
	}
	var got pushed
	plain := b.decrypt(p.t, bodies[n-1])
	if err := json.Unmarshal(plain, &got); err != nil {
		p.t.Fatalf("payload %q: %v", plain, err)
	}
	return got
}

// A question and a turn's end are pushed to each subscribed device with
// no connection open, encrypted for its browser and signed with the
// relay's VAPID key; the words of the conversation only to a subscription
// that asked for them. A connected device is not pushed, a revoked one
// neither (its subscription went with it), and a push service's 410 Gone
// removes its subscription.
func TestPushQuestionAndTurnEnd(t *testing.T) {
	parallel(t)
	p := startPush(t)
	pixel := newBrowser(t, p.svc, "/sub/pixel")
	tablet := newBrowser(t, p.svc, "/sub/tablet")
	laptop := newBrowser(t, p.svc, "/sub/laptop")
	old := newBrowser(t, p.svc, "/sub/old")
	gone := newBrowser(t, p.svc, "/gone/x")

	p.subscribe(p.device("Pixel", protocol.RoleController, time.Time{}), pixel, false)
	p.subscribe(p.device("Tablet", protocol.RoleViewer, time.Time{}), tablet, true) // a viewer may subscribe
	laptopToken := p.device("Laptop", protocol.RoleController, time.Time{})
	p.subscribe(laptopToken, laptop, false)
	p.subscribe(p.device("Old", protocol.RoleController, time.Time{}), old, false)
	p.subscribe(p.device("Gone", protocol.RoleController, time.Time{}), gone, false)
	if err := p.srv.Relay.RevokeDevice(context.Background(), "Old"); err != nil {
		t.Fatal(err)
	}
	if got := p.endpoints(); slices.Contains(got, old.endpoint) || len(got) != 4 {
		t.Fatalf("after revoking Old: %v", got)
	}

	laptopConn := p.dialAs(laptopToken, "web") // the laptop is connected:
	sync_(t, laptopConn)                       // its reader answers, so the relay counts it
	window := p.dialAs(ownToken, "window")
	window.Send("copilot:send", map[string]any{"conversationId": "c1", "prompt": "deploy the release"})
	window.WaitFor("copilot:user_message", nil)
	ft := p.agent.nextTurn(t)
	res := ft.ask(session.InputRequest{Question: "Ship `v2.4` to production?"})
	ask := window.WaitFor("copilot:user_input_request", nil)

	rep := p.report()
	want := relay.PushReport{Sent: []string{pixel.endpoint, tablet.endpoint}, Skipped: []string{laptop.endpoint}, Removed: []string{gone.endpoint}}
	if fmt.Sprint(rep) != fmt.Sprint(want) {
		t.Fatalf("pushes %+v, want %+v", rep, want)
	}
	if got := p.only(pixel, 1); got != (pushed{Title: "Question: deploy the release", Body: "The agent is waiting for your answer.", ConversationID: "c1", Tag: "q-c1"}) {
		t.Fatalf("Pixel got %+v", got)
	}
	if got := p.only(tablet, 1); got.Body != "Ship `v2.4` to production?" || got.Tag != "q-c1" {
		t.Fatalf("Tablet (words on) got %+v", got)
	}
	if r, _ := p.svc.received("/sub/pixel"); r[0].Header.Get("Urgency") != "high" {
		t.Fatalf("a question's Urgency %q", r[0].Header.Get("Urgency"))
	}
	for _, b := range []*browser{laptop, old} {
		if r, _ := p.svc.received(strings.TrimPrefix(b.endpoint, p.svc.srv.URL)); len(r) != 0 {
			t.Fatalf("%s was pushed", b.endpoint)
		}
	}
	if got := p.endpoints(); slices.Contains(got, gone.endpoint) {
		t.Fatalf("410 Gone left the subscription: %v", got)
	}

	window.Send("copilot:user_input_response", map[string]any{"conversationId": "c1", "requestId": ask.Field("requestId"), "answer": "yes"})
	waitAsk(t, res)
	ft.Host.Emit(session.Message{MessageID: "m1", Content: "Deployed v2.4."})
	ft.finish(nil)
	rep = p.report()
	if want := []string{pixel.endpoint, tablet.endpoint}; !slices.Equal(rep.Sent, want) {
		t.Fatalf("turn end pushes %+v, want sent to %v", rep, want)
	}
	if got := p.only(pixel, 2); got != (pushed{Title: "deploy the release", Body: "The agent finished its turn.", ConversationID: "c1", Tag: "t-c1"}) {
		t.Fatalf("Pixel got %+v", got)
	}
	if got := p.only(tablet, 2); got.Body != "Deployed v2.4." {
		t.Fatalf("Tablet (words on) got %+v", got)
	}
	if r, _ := p.svc.received("/sub/pixel"); r[1].Header.Get("Urgency") != "normal" || r[1].Header.Get("TTL") != strconv.Itoa(24*3600) {
		t.Fatalf("a turn end's headers %v", r[1].Header)
	}
}

// The endpoints: the key and subscribing need a valid token; a bad
// subscription is refused with the reason; a token unsubscribes its own
// browser and no other's; a relay without push answers 404.
func TestPushEndpoints(t *testing.T) {
	parallel(t)
	p := startPush(t)
	if code, _ := p.call("GET", "/push/key", "", nil); code != http.StatusUnauthorized {
		t.Fatalf("no token: %d", code)
	}
	if code, _ := p.call("GET", "/push/key", "wrong", nil); code != http.StatusUnauthorized {
		t.Fatalf("a wrong token: %d", code)
	}
	viewer := p.device("Viewer", protocol.RoleViewer, time.Time{})
	for token, want := range map[string]string{"": `{"required":true,"valid":false}`, "wrong": `{"required":true,"valid":false}`,
		viewer: `{"required":true,"valid":true}`, ownToken: `{"required":true,"valid":true}`} {
		if code, body := p.call("GET", "/token", token, nil); code != http.StatusOK || strings.TrimSpace(body) != want {
			t.Errorf("GET /token with %q: %d %s, want %s", token, code, body, want)
		}
	}
	code, body := p.call("GET", "/push/key", viewer, nil)
	var key struct{ PublicKey string }
	if code != http.StatusOK || json.Unmarshal([]byte(body), &key) != nil || key.PublicKey != p.keys.Public {
		t.Fatalf("key: %d %s", code, body)
	}

	b := newBrowser(t, p.svc, "/sub/b")
	for _, tc := range []struct {
		name string
		mod  func(map[string]any)
		want string
	}{
		{"http endpoint", func(m map[string]any) { m["endpoint"] = "http://push.example/x" }, "not an https URL"},
		{"no endpoint", func(m map[string]any) { delete(m, "endpoint") }, "no endpoint"},
		{"bad p256dh", func(m map[string]any) { m["keys"].(map[string]string)["p256dh"] = "AAAA" }, "not a P-256 public key"},
		{"short auth", func(m map[string]any) { m["keys"].(map[string]string)["auth"] = "AAAA" }, "not 16"},
	} {
		sub := b.subscription(false)
		tc.mod(sub)
		if code, body := p.call("POST", "/push/subscribe", viewer, sub); code != http.StatusBadRequest || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %s, want 400 saying %q", tc.name, code, body, tc.want)
		}
	}
	if got := p.endpoints(); len(got) != 0 {
		t.Fatalf("a bad subscription was kept: %v", got)
	}

	p.subscribe(viewer, b, false)
	other := p.device("Other", protocol.RoleOwner, time.Time{})
	if code, _ := p.call("POST", "/push/unsubscribe", other, map[string]string{"endpoint": b.endpoint}); code != http.StatusForbidden {
		t.Fatalf("another token unsubscribed it: %d", code)
	}
	if code, _ := p.call("POST", "/push/unsubscribe", viewer, map[string]string{"endpoint": b.endpoint}); code != http.StatusNoContent {
		t.Fatalf("unsubscribe: %d", code)
	}
	if got := p.endpoints(); len(got) != 0 {
		t.Fatalf("after unsubscribing: %v", got)
	}

	off := relaytest.Start(t, relay.Config{Token: ownToken})
	req, _ := http.NewRequest("GET", off.HTTPURL+"/push/key", nil)
	req.Header.Set("Authorization", "Bearer "+ownToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Fatalf("a relay without push: %d", res.StatusCode)
	}
}
