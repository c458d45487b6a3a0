package client

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// Who a client is on the relay: the device of its token and its kind of
// client, as the relay names them in sentBy, answeredBy and changedBy
// (docs/protocol.md, Devices and roles). The relay does not tell a
// connection who it is, so the client learns it from the echo of what it
// sent itself: the copilot:user_message of its prompt, the
// copilot:mode_changed of its switch, the copilot:user_input_closed of its
// answer. Every front end (the window, pilotdesk chat) reads it from here,
// through the fold (conversation.Options.Identity), so that its own
// prompts, answers and switches are told from another's the same way.

// DeviceTokenPrefix starts every device token (relay.CreateDevice): a
// client with another token, or none, is the relay's own device.
const DeviceTokenPrefix = "pdt_"

// maxEchoes bounds what an Identity waits to see echoed: a message the
// relay never echoed (the connection dropped with it) does not stay.
const maxEchoes = 64

// Identity is who a client is on the relay. Safe for concurrent use: the
// client's reader learns, the front ends read.
type Identity struct {
	key string // names the relay and the token (Key)

	mu sync.Mutex // guards the fields below
	// self is who this client is; known says whether it is known: the
	// relay's own token is its own device from the start, a device
	// token's device is learned (or remembered from an earlier run).
	self    protocol.By
	known   bool
	learned bool   // self came from an echo in this run
	echoes  []echo // sent and not yet echoed, oldest first
	onLearn []func(protocol.By)
}

// echo is a message this client sent that the relay echoes with its name:
// its type as the echo has it, the conversation, and what tells it apart
// (the prompt, the mode, the request's id).
type echo struct {
	typ, conv, key string
}

// NewIdentity is who a client with token on the relay at relayURL is,
// naming its kind of client (protocol.Client*): what Config.Dial gives
// its client (Client.Identity). A front end that keeps identities across
// runs reads Key from it before it dials, or tests its keeping with one.
func NewIdentity(relayURL, token, kind string) *Identity { return newIdentity(relayURL, token, kind) }

func newIdentity(relayURL, token, kind string) *Identity {
	sum := sha256.Sum256([]byte(relayURL + "\x00" + token))
	id := &Identity{key: hex.EncodeToString(sum[:16])}
	if !strings.HasPrefix(token, DeviceTokenPrefix) {
		// The relay's own token, or none: the relay's own device. A
		// client that names no kind takes any kind on it as itself
		// until an echo says which the relay gave it.
		self := protocol.By{Device: protocol.OwnDevice}
		if kind != "" {
			self.Client = protocol.ClientKind(kind)
		}
		id.self, id.known = self, true
	}
	return id
}

// Key names this relay and token together without holding the token (a
// digest of both): what a front end files the identity under to remember
// it across runs.
func (id *Identity) Key() string { return id.key }

// Self returns who this client is, and whether that is known. Before a
// device token's first echo (and with nothing remembered) it is not, and
// nothing is taken for this client's own.
func (id *Identity) Self() (protocol.By, bool) {
	id.mu.Lock()
	defer id.mu.Unlock()
	return id.self, id.known
}

// Is reports whether by names this client: its device and its kind (any
// kind while the client's is not known).
func (id *Identity) Is(by protocol.By) bool {
	self, known := id.Self()
	return known && by.Device == self.Device && (self.Client == "" || by.Client == self.Client)
}

// Remember sets who this client was on an earlier run with the same
// relay and token (Key), until an echo of this run says otherwise.
func (id *Identity) Remember(by protocol.By) {
	if by.Device == "" {
		return
	}
	id.mu.Lock()
	defer id.mu.Unlock()
	if !id.learned {
		id.self, id.known = by, true
	}
}

// OnLearn calls fn, from the client's reader goroutine, each time an echo
// teaches who this client is and that differs from what was known: the
// window files it under Key.
func (id *Identity) OnLearn(fn func(protocol.By)) {
	id.mu.Lock()
	defer id.mu.Unlock()
	id.onLearn = append(id.onLearn, fn)
}

// expect records a message this client is sending whose echo names it.
func (id *Identity) expect(e echo) {
	id.mu.Lock()
	defer id.mu.Unlock()
	if len(id.echoes) >= maxEchoes {
		id.echoes = id.echoes[1:]
	}
	id.echoes = append(id.echoes, e)
}

// forget drops the oldest expected echo of typ in conv (key "": any): the
// message was not sent, or the relay refused it.
func (id *Identity) forget(typ, conv, key string) {
	id.mu.Lock()
	defer id.mu.Unlock()
	for i, e := range id.echoes {
		if e.typ == typ && e.conv == conv && (key == "" || e.key == key) {
			id.echoes = append(id.echoes[:i], id.echoes[i+1:]...)
			return
		}
	}
}

// observe learns from ev, an event the relay sent, when it is the echo of
// a message this client sent. It runs on the reader goroutine before ev
// is delivered, so that whoever applies ev already knows.
func (id *Identity) observe(ev Event) {
	var e echo
	var by *protocol.By
	switch d := ev.Data.(type) {
	case *protocol.UserMessage:
		e, by = echo{protocol.TypeUserMessage, d.ConversationID, d.Content}, d.SentBy
	case *protocol.ModeChanged:
		// The relay names no one for its own device: nothing to learn.
		e, by = echo{protocol.TypeModeChanged, d.ConversationID, string(d.Mode)}, d.ChangedBy
	case *protocol.UserInputClosed:
		if d.Reason != protocol.ClosedAnswered && d.Reason != protocol.ClosedRejected {
			return
		}
		e, by = echo{protocol.TypeUserInputClosed, d.ConversationID, d.RequestID}, d.AnsweredBy
	case *protocol.Error:
		// A refused message is never echoed.
		switch d.Type {
		case protocol.TypeSend:
			id.forget(protocol.TypeUserMessage, d.ConversationID, "")
		case protocol.TypeSetMode:
			id.forget(protocol.TypeModeChanged, d.ConversationID, "")
		case protocol.TypeUserInputResponse:
			id.forget(protocol.TypeUserInputClosed, d.ConversationID, "")
		}
		return
	default:
		return
	}
	id.mu.Lock()
	i := -1
	for j, x := range id.echoes {
		if x == e {
			i = j
			break
		}
	}
	if i < 0 {
		id.mu.Unlock()
		return // another's, or one of the history
	}
	id.echoes = append(id.echoes[:i], id.echoes[i+1:]...)
	if by == nil || by.Device == "" || (id.known && *by == id.self) {
		id.learned = id.learned || (by != nil && id.known && *by == id.self)
		id.mu.Unlock()
		return
	}
	id.self, id.known, id.learned = *by, true, true
	fns := append([]func(protocol.By){}, id.onLearn...)
	id.mu.Unlock()
	for _, fn := range fns {
		fn(*by)
	}
}
