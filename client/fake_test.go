package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// fakeRelay is a small, controllable relay for the client's edge cases
// (epoch changes, sloppy replays, silent connections) that the real relay
// cannot be made to produce on demand. The end-to-end tests use the real one.
type fakeRelay struct {
	t     *testing.T
	srv   *httptest.Server
	token string

	mu       sync.Mutex
	epoch    string
	logs     map[string][]json.RawMessage // conversation → frames, index = seq-1
	conns    map[*websocket.Conn]*fakeConn
	received []protocol.Envelope
	// silent makes the relay ignore pings and send nothing.
	silent bool
	// sloppy makes replays start two events early, as a relay that errs on
	// the side of repeating would.
	sloppy bool
	// hold, when set, keeps copilot:subscribed back after a replay until
	// it is closed (or the connection ends).
	hold chan struct{}
	// starting, when set, is the clientId copilot:subscribed names as a
	// send it is setting up (starting).
	starting string
	recvCh   chan protocol.Envelope
	joined   chan struct{} // one value per accepted connection
}

type fakeConn struct {
	subs map[string]bool
}

func newFakeRelay(t *testing.T, token string) *fakeRelay {
	f := &fakeRelay{
		t:      t,
		token:  token,
		epoch:  "epoch-1",
		logs:   map[string][]json.RawMessage{},
		conns:  map[*websocket.Conn]*fakeConn{},
		recvCh: make(chan protocol.Envelope, 1024),
		joined: make(chan struct{}, 64),
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		f.dropAll()
		f.srv.Close()
	})
	return f
}

func (f *fakeRelay) url() string { return "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/ws" }

func (f *fakeRelay) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	token := f.token
	f.mu.Unlock()
	if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	fc := &fakeConn{subs: map[string]bool{}}
	f.mu.Lock()
	f.conns[conn] = fc
	f.mu.Unlock()
	select {
	case f.joined <- struct{}{}:
	default:
	}
	defer func() {
		f.mu.Lock()
		delete(f.conns, conn)
		f.mu.Unlock()
		conn.CloseNow()
	}()
	ctx := r.Context()
	for {
		_, frame, err := conn.Read(ctx)
		if err != nil {
			return
		}
		var env protocol.Envelope
		if err := json.Unmarshal(frame, &env); err != nil {
			f.t.Errorf("fake relay: bad frame %s: %v", frame, err)
			return
		}
		f.mu.Lock()
		f.received = append(f.received, env)
		silent := f.silent
		f.mu.Unlock()
		f.recvCh <- env
		if silent {
			continue
		}
		switch env.Type {
		case protocol.TypePing:
			_ = conn.Write(ctx, websocket.MessageText, []byte(`{"type":"pong"}`))
		case protocol.TypeSubscribe:
			var sub protocol.Subscribe
			_ = json.Unmarshal(env.Data, &sub)
			f.mu.Lock()
			fc.subs[sub.ConversationID] = true
			var replay []json.RawMessage
			log := f.logs[sub.ConversationID]
			// As the relay does: a client holding another epoch's copy
			// gets the whole history, marked reset.
			reset := sub.Epoch != "" && sub.Epoch != f.epoch
			if reset {
				zero := int64(0)
				sub.SinceSeq = &zero
			}
			if sub.SinceSeq != nil {
				from := int(*sub.SinceSeq)
				if f.sloppy {
					from = max(from-2, 0)
				}
				if from < len(log) {
					replay = append(replay, log[from:]...)
				}
			}
			sd := protocol.Subscribed{
				ConversationID: sub.ConversationID, Mode: protocol.ModeAct, Seq: int64(len(log)), Epoch: f.epoch, Reset: reset,
			}
			if f.starting != "" {
				sd.Starting = &protocol.Starting{ClientID: f.starting}
			}
			subscribed, _ := protocol.Encode(protocol.TypeSubscribed, sd)
			// Write under the lock so that live events cannot slip in
			// between the replay and copilot:subscribed.
			for _, fr := range replay {
				_ = conn.Write(ctx, websocket.MessageText, fr)
			}
			if hold := f.hold; hold != nil {
				f.mu.Unlock()
				select {
				case <-hold:
				case <-ctx.Done():
					return
				}
				f.mu.Lock()
			}
			_ = conn.Write(ctx, websocket.MessageText, subscribed)
			f.mu.Unlock()
		}
	}
}

// emit appends an event to a conversation's log and sends it to its
// subscribers. data must embed protocol.Header; its Seq is filled in.
func (f *fakeRelay) emit(conv, msgType string, data map[string]any) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	seq := int64(len(f.logs[conv]) + 1)
	data["conversationId"] = conv
	data["seq"] = seq
	frame, err := protocol.Encode(msgType, data)
	if err != nil {
		f.t.Fatal(err)
	}
	f.logs[conv] = append(f.logs[conv], frame)
	for conn, fc := range f.conns {
		if fc.subs[conv] {
			_ = conn.Write(context.Background(), websocket.MessageText, frame)
		}
	}
	return seq
}

// resetHistory simulates a relay that lost its data: a new epoch and an
// empty log per conversation.
func (f *fakeRelay) resetHistory(epoch string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.epoch = epoch
	f.logs = map[string][]json.RawMessage{}
}

// waitJoined waits until the relay has registered one more connection.
func (f *fakeRelay) waitJoined(t *testing.T) {
	t.Helper()
	select {
	case <-f.joined:
	case <-time.After(waitFor):
		t.Fatal("no client connected to the fake relay")
	}
}

func (f *fakeRelay) dropAll() {
	f.mu.Lock()
	conns := make([]*websocket.Conn, 0, len(f.conns))
	for c := range f.conns {
		conns = append(conns, c)
	}
	f.mu.Unlock()
	for _, c := range conns {
		c.CloseNow()
	}
}

func (f *fakeRelay) setSilent(v bool) {
	f.mu.Lock()
	f.silent = v
	f.mu.Unlock()
}

// receivedFrames returns a copy of every frame the fake relay received.
func (f *fakeRelay) receivedFrames() []protocol.Envelope {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.received)
}
