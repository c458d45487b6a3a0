package relay

import (
	"bytes"
	"context"
	"crypto/ecdh"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/SherClockHolmes/webpush-go"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay/history"
)

// Web Push (docs/push.md): when a question opens or a turn ends, the relay
// pushes a notification to each browser that subscribed with a token whose
// device has no connection open to it, through the browser's push service
// (RFC 8030), signed with the relay's VAPID key (RFC 8292) and encrypted
// for that browser alone (RFC 8291), by github.com/SherClockHolmes/webpush-go.
// The subscriptions are kept per token by the devices' store
// (history.Pushes); a revoked token's go with it, and a push service that
// answers 404 or 410 (the browser unsubscribed) removes its own. On a
// cluster the store keeps them for every relay, with the one VAPID key
// pair they all sign with (history.PushKeys), and the cluster tells each
// relay which tokens have a connection open on the others
// (history.Presence): the owner of a conversation, the only relay that
// makes its events, pushes each once.

// VAPIDKeys is the relay's VAPID key pair (RFC 8292): a P-256 key whose
// public half a browser names when it subscribes (applicationServerKey)
// and whose private half signs each push. Both are base64url without
// padding: the public key as its uncompressed point (65 bytes), the
// private key as its scalar (32 bytes).
type VAPIDKeys struct {
	Public  string `json:"publicKey"`
	Private string `json:"privateKey"`
}

// NewVAPIDKeys makes a key pair.
func NewVAPIDKeys() (VAPIDKeys, error) {
	priv, pub, err := webpush.GenerateVAPIDKeys()
	if err != nil {
		return VAPIDKeys{}, fmt.Errorf("making the VAPID keys: %w", err)
	}
	return VAPIDKeys{Public: pub, Private: priv}, nil
}

// Check says whether the pair is well formed and its halves belong
// together.
func (k VAPIDKeys) Check() error {
	d, err := base64.RawURLEncoding.DecodeString(k.Private)
	if err != nil {
		return fmt.Errorf("the VAPID private key is not base64url: %w", err)
	}
	priv, err := ecdh.P256().NewPrivateKey(d)
	if err != nil {
		return fmt.Errorf("the VAPID private key: %w", err)
	}
	pub, err := base64.RawURLEncoding.DecodeString(k.Public)
	if err != nil {
		return fmt.Errorf("the VAPID public key is not base64url: %w", err)
	}
	if !bytes.Equal(priv.PublicKey().Bytes(), pub) {
		return errors.New("the VAPID public key is not the private key's")
	}
	return nil
}

// DefaultPushContact is the VAPID subject (the "sub" claim: whom a push
// service may contact about this sender) when PushConfig.Contact is "".
const DefaultPushContact = "https://github.com/pilotdesk/pilotdesk"

// PushConfig turns Web Push on (Config.Push).
type PushConfig struct {
	Keys VAPIDKeys
	// Contact is the VAPID subject: a mailto: or https: URL; "":
	// DefaultPushContact.
	Contact string
	// Client posts to the push services; nil: one with a 30 s timeout.
	Client *http.Client
	// Store keeps the subscriptions; nil: the devices' store (Config.Devices
	// or Config.Store), when it keeps them.
	Store history.Pushes
}

// pushTextRunes bounds the conversation's words a push carries (when its
// subscription asked for them).
const pushTextRunes = 200

// pushQueue bounds the pushes waiting to be sent; past it one is dropped,
// and the log says so.
const pushQueue = 64

// pushTimeout bounds one push service's answer.
const pushTimeout = 10 * time.Second

// pusher sends the pushes, one job at a time, on its own goroutine (run),
// which Relay.Close ends.
type pusher struct {
	r       *Relay
	store   history.Pushes
	keys    VAPIDKeys
	contact string
	client  *http.Client
	jobs    chan pushJob
	// done, when set (tests: export_internal_test.go), is called after
	// each job.
	done atomic.Pointer[func(PushReport)]
}

// pushJob is one event to tell of.
type pushJob struct {
	question       bool // a question opened; else a turn ended
	conversationID string
	title          string
	text           string // the question, or the reply's start: only for a subscription that asked
	status         string // the turn's
	ttl            time.Duration
}

// PushReport is what one event's pushes did, by endpoint (tests).
type PushReport struct {
	Sent    []string // accepted by the push service
	Skipped []string // a connection of its device is open
	Removed []string // revoked, or gone (404, 410)
	Failed  []string // the push service refused or did not answer
}

func newPusher(r *Relay, cfg *PushConfig) (*pusher, error) {
	if cfg == nil {
		return nil, nil
	}
	if err := cfg.Keys.Check(); err != nil {
		return nil, fmt.Errorf("relay: push: %w", err)
	}
	store := cfg.Store
	if store == nil {
		store, _ = r.devices.(history.Pushes)
	}
	if store == nil {
		store, _ = r.store.(history.Pushes)
	}
	if store == nil {
		r.log.Warn("relay: Web Push is off: the store keeps no push subscriptions")
		return nil, nil
	}
	keys := cfg.Keys
	if r.cluster != nil {
		// Only the relay that owns a conversation pushes its events (only
		// it makes them), to every device that has no connection open on
		// any relay: it must know of the others' connections, and of
		// every subscription, wherever it was made.
		if r.presence == nil {
			r.log.Warn("relay: Web Push is off: the cluster does not share which devices are connected to each relay")
			return nil, nil
		}
		if _, ok := store.(history.PushKeys); !ok {
			r.log.Warn("relay: Web Push is off: the store does not share the VAPID key pair with the other relays")
			return nil, nil
		}
	}
	if pk, ok := store.(history.PushKeys); ok {
		// The browsers subscribed with the public key of whichever relay
		// they reached: every relay signs with the one pair the store
		// keeps, the first relay's.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		kept, err := pk.VAPIDKeys(ctx, history.VAPIDPair{Public: keys.Public, Private: keys.Private})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("relay: push: the VAPID key pair the relays share: %w", err)
		}
		if kept := (VAPIDKeys{Public: kept.Public, Private: kept.Private}); kept != keys {
			if err := kept.Check(); err != nil {
				return nil, fmt.Errorf("relay: push: the VAPID key pair the relays share: %w", err)
			}
			r.log.Info("relay: push: signing with the VAPID key pair the store keeps for every relay, not this relay's own")
			keys = kept
		}
	}
	p := &pusher{r: r, store: store, keys: keys, contact: cfg.Contact, client: cfg.Client, jobs: make(chan pushJob, pushQueue)}
	if p.contact == "" {
		p.contact = DefaultPushContact
	}
	if p.client == nil {
		p.client = &http.Client{Timeout: 30 * time.Second}
	}
	return p, nil
}

// pushKey is the token a connection or a subscription belongs to: a
// device token's SHA-256, or the relay's own token's.
func (r *Relay) pushKey(id identity) [sha256.Size]byte {
	if id.isDevice() {
		return id.hash
	}
	return r.tokenDigest
}

// pushEventLocked tells the pusher of an event that may call for a push:
// a question opened, a turn ended. It also keeps the latest reply, which a
// turn's end carries to a subscription that asked for the words. It never
// blocks: past pushQueue waiting, the push is dropped.
func (c *conversation) pushEventLocked(msgType string, data any) {
	p := c.r.push
	if p == nil {
		return
	}
	var j pushJob
	switch d := data.(type) {
	case *protocol.Message:
		if msgType == protocol.TypeMessage && strings.TrimSpace(d.Content) != "" {
			c.lastReply = d.Content
		}
		return
	case *protocol.UserInputRequest:
		ttl := c.r.inputTimeout
		if ttl <= 0 {
			ttl = 24 * time.Hour
		}
		j = pushJob{question: true, text: d.Question, ttl: ttl}
	case *protocol.Idle:
		if d.Message == RestartedMessage {
			return // the relay is stopping; nobody waits on this turn
		}
		j = pushJob{status: d.Status, text: c.lastReply, ttl: 24 * time.Hour}
		c.lastReply = ""
	default:
		return
	}
	j.conversationID, j.title = c.id, c.title
	select {
	case p.jobs <- j:
	default:
		c.r.log.Warn("relay: too many pushes waiting; one dropped", "conversationId", c.id, "type", msgType)
	}
}

func (p *pusher) run() {
	for {
		select {
		case <-p.r.ctx.Done():
			return
		case j := <-p.jobs:
			rep := p.send(j)
			if f := p.done.Load(); f != nil {
				(*f)(rep)
			}
		}
	}
}

// pushPayload is what the service worker (web/static/sw.js) shows.
type pushPayload struct {
	Title          string `json:"title"`
	Body           string `json:"body"`
	ConversationID string `json:"conversationId"`
	Tag            string `json:"tag"`
}

func (j pushJob) payload(withText bool) pushPayload {
	title := j.title
	if strings.TrimSpace(title) == "" {
		title = "New conversation" // conversation.EntryTitle's word (pushwords_test.go)
	}
	p := pushPayload{ConversationID: j.conversationID}
	if j.question {
		p.Title, p.Tag = "Question: "+title, "q-"+j.conversationID
		p.Body = "The agent is waiting for your answer."
	} else {
		p.Title, p.Tag = title, "t-"+j.conversationID
		switch j.status {
		case protocol.StatusCompleted:
			p.Body = "The agent finished its turn."
		case protocol.StatusError:
			p.Body = "The turn ended with an error."
		default:
			p.Body = "The turn was stopped."
		}
	}
	if withText && strings.TrimSpace(j.text) != "" && (j.question || j.status == protocol.StatusCompleted) {
		p.Body = shorten(strings.TrimSpace(j.text), pushTextRunes)
	}
	return p
}

// shorten cuts s to n runes, with an ellipsis when it cut.
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// send pushes j to every subscription whose token is still valid and whose
// device has no connection open.
func (p *pusher) send(j pushJob) (rep PushReport) {
	ctx, cancel := context.WithTimeout(p.r.ctx, time.Minute)
	defer cancel()
	subs, err := p.store.PushSubscriptions(ctx)
	if err != nil {
		p.r.log.Warn("relay: push: could not read the subscriptions", "err", err)
		return rep
	}
	if len(subs) == 0 {
		return rep
	}
	live := map[[sha256.Size]byte]bool{p.r.pushKey(identity{}): true}
	if p.r.devices != nil {
		devs, err := p.r.devices.Devices(ctx)
		if err != nil {
			p.r.log.Warn("relay: push: could not read the device tokens", "err", err)
			return rep
		}
		now := time.Now()
		for _, d := range devs {
			if !d.Expired(now) {
				live[d.Hash] = true
			}
		}
	}
	connected := p.r.connectedKeys()
	if p.r.presence != nil {
		// Connected to another relay of the cluster: that page hears the
		// event from its relay.
		for k := range p.r.presence.Present() {
			connected[k] = true
		}
	}
	for _, s := range subs {
		switch {
		case !live[s.Device]:
			// Its token was revoked (by another process, or on another
			// relay), expired, or was the relay's own token before it
			// changed.
			p.remove(ctx, s.Endpoint, "its token is no longer valid")
			rep.Removed = append(rep.Removed, s.Endpoint)
			continue
		case connected[s.Device]:
			rep.Skipped = append(rep.Skipped, s.Endpoint)
			continue
		}
		switch p.post(ctx, s, j) {
		case pushSent:
			rep.Sent = append(rep.Sent, s.Endpoint)
		case pushGone:
			p.remove(ctx, s.Endpoint, "the push service says the browser unsubscribed")
			rep.Removed = append(rep.Removed, s.Endpoint)
		default:
			rep.Failed = append(rep.Failed, s.Endpoint)
		}
	}
	return rep
}

func (p *pusher) remove(ctx context.Context, endpoint, why string) {
	if err := p.store.RemovePush(ctx, endpoint); err != nil {
		p.r.log.Warn("relay: push: could not remove a subscription", "endpoint", endpoint, "why", why, "err", err)
		return
	}
	p.r.log.Info("relay: push: removed a subscription", "endpoint", endpoint, "why", why)
}

type pushOutcome int

const (
	pushSent pushOutcome = iota
	pushGone
	pushFailed
)

func (p *pusher) post(ctx context.Context, s history.PushSubscription, j pushJob) pushOutcome {
	body, err := json.Marshal(j.payload(s.Text))
	if err != nil {
		p.r.log.Error("relay: push: encode", "err", err)
		return pushFailed
	}
	urgency := webpush.UrgencyNormal
	if j.question {
		urgency = webpush.UrgencyHigh
	}
	pctx, cancel := context.WithTimeout(ctx, pushTimeout)
	defer cancel()
	res, err := webpush.SendNotificationWithContext(pctx, body, &webpush.Subscription{
		Endpoint: s.Endpoint,
		Keys:     webpush.Keys{P256dh: s.P256dh, Auth: s.Auth},
	}, &webpush.Options{
		HTTPClient:      p.client,
		Subscriber:      p.contact,
		VAPIDPublicKey:  p.keys.Public,
		VAPIDPrivateKey: p.keys.Private,
		TTL:             int(j.ttl / time.Second),
		Urgency:         urgency,
		// One record, padded to a multiple of 1 KiB rather than 4 KiB:
		// the length tells little (every payload is under 1 KiB of
		// words), and a phone on a metered line gets a quarter.
		RecordSize: 1024,
	})
	if err != nil {
		p.r.log.Warn("relay: push: could not reach the push service", "endpoint", s.Endpoint, "err", err)
		return pushFailed
	}
	defer res.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(res.Body, 512))
	switch {
	case res.StatusCode >= 200 && res.StatusCode < 300:
		return pushSent
	case res.StatusCode == http.StatusNotFound || res.StatusCode == http.StatusGone:
		return pushGone
	default:
		p.r.log.Warn("relay: push: the push service refused a push", "endpoint", s.Endpoint, "status", res.StatusCode, "answer", strings.TrimSpace(string(msg)))
		return pushFailed
	}
}

// presentLocked counts a connection of id's token opening (delta 1) or
// closing (-1); when the token's first connection opens or its last one
// closes, the cluster is told the tokens connected here (history.Presence),
// so that no relay pushes to a device that has a page open on this one.
// The caller holds r.mu, which orders the sets told.
func (r *Relay) presentLocked(id identity, delta int) {
	if r.presence == nil {
		return
	}
	k := r.pushKey(id)
	n := r.present[k] + delta
	was := r.present[k] > 0
	if n > 0 {
		r.present[k] = n
	} else {
		delete(r.present, k)
	}
	if was == (n > 0) {
		return
	}
	r.presence.SetPresent(slices.Collect(maps.Keys(r.present)))
}

// connectedKeys are the tokens with a connection open on this relay.
func (r *Relay) connectedKeys() map[[sha256.Size]byte]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[[sha256.Size]byte]bool, len(r.conns))
	for c := range r.conns {
		out[r.pushKey(c.id)] = true
	}
	return out
}

// ---- the HTTP endpoints: the key, subscribe, unsubscribe ----

// maxPushBody bounds a subscribe or unsubscribe request's body.
const maxPushBody = 8 << 10

// pushSubscribeRequest is the body of POST /push/subscribe: what the
// browser's PushSubscription.toJSON() gives, and text.
type pushSubscribeRequest struct {
	Endpoint string `json:"endpoint"`
	Keys     struct {
		P256dh string `json:"p256dh"`
		Auth   string `json:"auth"`
	} `json:"keys"`
	Text bool `json:"text"`
}

func (r *Relay) routePush() {
	// GET /token says whether the token presented (Authorization: Bearer)
	// would be let in, and whether the relay needs one: the web client
	// asks before it tries a socket without a token, and to tell a token
	// the relay no longer knows from a relay that is away. An upgrade
	// says as much (101 or 401); this says it with 200, which a browser
	// does not log as an error.
	r.mux.HandleFunc("GET /token", func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		_, ok := r.authenticate(req)
		writePushJSON(w, http.StatusOK, map[string]bool{"valid": ok, "required": r.token})
	})
	r.mux.HandleFunc("GET /push/key", r.pushHandler(func(w http.ResponseWriter, req *http.Request, id identity) {
		writePushJSON(w, http.StatusOK, map[string]string{"publicKey": r.push.keys.Public})
	}))
	r.mux.HandleFunc("POST /push/subscribe", r.pushHandler(r.pushSubscribe))
	r.mux.HandleFunc("POST /push/unsubscribe", r.pushHandler(r.pushUnsubscribe))
}

// pushHandler authenticates a request as an upgrade is (the token in the
// Authorization header), and answers 404 when push is off.
func (r *Relay) pushHandler(h func(http.ResponseWriter, *http.Request, identity)) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		id, ok := r.authenticate(req)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="pilotdesk"`)
			writePushError(w, http.StatusUnauthorized, "a valid token is required (Authorization: Bearer TOKEN)")
			return
		}
		if r.push == nil {
			writePushError(w, http.StatusNotFound, "Web Push is off on this relay")
			return
		}
		h(w, req, id)
	}
}

func (r *Relay) pushSubscribe(w http.ResponseWriter, req *http.Request, id identity) {
	var body pushSubscribeRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, req.Body, maxPushBody)).Decode(&body); err != nil {
		writePushError(w, http.StatusBadRequest, "the body is not a push subscription: "+err.Error())
		return
	}
	if err := history.CheckPushEndpoint(body.Endpoint); err != nil {
		writePushError(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := checkSubscriptionKeys(body.Keys.P256dh, body.Keys.Auth); err != nil {
		writePushError(w, http.StatusBadRequest, err.Error())
		return
	}
	s := history.PushSubscription{Device: r.pushKey(id), Endpoint: body.Endpoint, P256dh: body.Keys.P256dh, Auth: body.Keys.Auth,
		Text: body.Text, CreatedAt: time.Now()}
	if err := r.push.store.SavePush(req.Context(), s); err != nil {
		r.log.Error("relay: push: could not store a subscription", "device", id.device, "err", err)
		writePushError(w, http.StatusInternalServerError, "the subscription could not be stored")
		return
	}
	r.log.Info("relay: push: a browser subscribed", "device", id.device, "text", body.Text)
	w.WriteHeader(http.StatusNoContent)
}

func (r *Relay) pushUnsubscribe(w http.ResponseWriter, req *http.Request, id identity) {
	var body struct {
		Endpoint string `json:"endpoint"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, req.Body, maxPushBody)).Decode(&body); err != nil || body.Endpoint == "" {
		writePushError(w, http.StatusBadRequest, "the body must be {\"endpoint\": URL}")
		return
	}
	subs, err := r.push.store.PushSubscriptions(req.Context())
	if err != nil {
		writePushError(w, http.StatusInternalServerError, "the subscriptions could not be read")
		return
	}
	for _, s := range subs {
		if s.Endpoint != body.Endpoint {
			continue
		}
		if s.Device != r.pushKey(id) {
			writePushError(w, http.StatusForbidden, "this subscription belongs to another token")
			return
		}
		if err := r.push.store.RemovePush(req.Context(), s.Endpoint); err != nil {
			writePushError(w, http.StatusInternalServerError, "the subscription could not be removed")
			return
		}
		r.log.Info("relay: push: a browser unsubscribed", "device", id.device)
	}
	w.WriteHeader(http.StatusNoContent)
}

// checkSubscriptionKeys says what is wrong with a subscription's keys: a
// P-256 public key (the uncompressed point) and a 16-byte secret, in
// base64url.
func checkSubscriptionKeys(p256dh, auth string) error {
	pub, err := decodeB64URL(p256dh)
	if err != nil {
		return fmt.Errorf("keys.p256dh is not base64url: %w", err)
	}
	if _, err := ecdh.P256().NewPublicKey(pub); err != nil {
		return fmt.Errorf("keys.p256dh is not a P-256 public key: %w", err)
	}
	a, err := decodeB64URL(auth)
	if err != nil {
		return fmt.Errorf("keys.auth is not base64url: %w", err)
	}
	if len(a) != 16 {
		return fmt.Errorf("keys.auth is %d bytes, not 16", len(a))
	}
	return nil
}

func decodeB64URL(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}

func writePushJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writePushError(w http.ResponseWriter, status int, msg string) {
	writePushJSON(w, status, map[string]string{"error": msg})
}
