package chat

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// frozen is a clock the test moves.
type frozen struct{ ns atomic.Int64 }

func (c *frozen) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *frozen) advance(d time.Duration) { c.ns.Add(int64(d)) }

// The terminal counts down to the relay's expiresAt, corrected by the skew
// it measured from serverTime: its own clock is an hour ahead of the
// relay's here, and it still shows the relay's 3 minutes. In plain mode the
// countdown is printed once with the question, with how many questions
// wait behind it.
func TestCountdownPlain(t *testing.T) {
	clock := &frozen{}
	local := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	clock.ns.Store(local.UnixNano())
	relayNow := local.Add(-time.Hour)
	h := startREPL(t, plain, func(c *Config) { c.Now = clock.now })
	h.subscribed(map[string]any{"streaming": true, "serverTime": protocol.FormatTime(relayNow)})
	h.emit(protocol.TypeUserInputRequest, map[string]any{"requestId": "q1", "question": "Deploy?", "allowFreeform": true,
		"expiresAt": protocol.FormatTime(relayNow.Add(3 * time.Minute)), "queued": 2})
	h.waitFor("Deploy?")
	h.waitFor("2 more questions wait after this one.")
	h.waitFor("Times out in 3:00; then the agent goes on without an answer.")
}

// In a terminal the countdown is redrawn under the question each second,
// from the relay's deadline; without expiresAt there is none.
func TestCountdownLive(t *testing.T) {
	clock := &frozen{}
	local := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	clock.ns.Store(local.UnixNano())
	h := startREPL(t, rawTerm, func(c *Config) { c.Now = clock.now })
	h.subscribed(map[string]any{"streaming": true, "serverTime": protocol.FormatTime(local.Add(5 * time.Second))})
	h.emit(protocol.TypeUserInputRequest, map[string]any{"requestId": "q1", "question": "Deploy?", "allowFreeform": true,
		"expiresAt": protocol.FormatTime(local.Add(5*time.Second + 90*time.Second))})
	h.waitScreen("the countdown", func(s string) bool { return strings.Contains(s, "Times out in 1:30") })
	clock.advance(31 * time.Second)
	h.waitScreen("the countdown to move", func(s string) bool { return strings.Contains(s, "Times out in 0:59") })
	h.typeIn("ok\r")
	h.nextCall("answer")

	h.emit(protocol.TypeUserInputRequest, map[string]any{"requestId": "q2", "question": "Whenever?", "allowFreeform": true})
	screen := h.waitScreen("the second question", func(s string) bool { return strings.Contains(s, "Whenever?") })
	if strings.Contains(screen, "Times out") {
		t.Fatalf("a countdown without expiresAt:\n%s", screen)
	}
}

// Who answered elsewhere is named.
func TestAnsweredFromNamed(t *testing.T) {
	h := startREPL(t, plain, nil)
	h.subscribed(map[string]any{"streaming": true})
	id := h.request(protocol.InputText, "Name?", nil, true)
	h.waitFor("Name?")
	h.emit(protocol.TypeUserInputClosed, map[string]any{"requestId": id, "reason": "answered", "answeredBy": map[string]any{"device": "Pixel", "client": "web"}})
	h.waitFor(`"Name?" was answered from Pixel (web).`)
	h.emit(protocol.TypeUserMessage, map[string]any{"messageId": "u2", "content": "from the phone", "mode": "act", "sentBy": map[string]any{"device": "Pixel", "client": "web"}})
	h.waitFor("(sent from Pixel (web))")
}
