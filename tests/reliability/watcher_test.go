package reliability

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/relaytest"
)

// watcher is a client that records every conversation event it receives and
// checks, as they come, that each conversation's seqs run without gap and
// without repeat from where its subscription began.
type watcher struct {
	t    *testing.T
	name string
	cl   *relaytest.Client

	// per conversation: the last seq received (-1: not known yet, the
	// copilot:subscribed frame will say), and every event by seq.
	last   map[string]int64
	events map[string]map[int64][]byte
	order  map[string][]int64
	// subscribed frames by conversation, the latest last.
	subscribed map[string][]map[string]any
}

func newWatcher(t *testing.T, name, url, token string) *watcher {
	t.Helper()
	return &watcher{
		t:          t,
		name:       name,
		cl:         relaytest.Dial(t, url, token),
		last:       map[string]int64{},
		events:     map[string]map[int64][]byte{},
		order:      map[string][]int64{},
		subscribed: map[string][]map[string]any{},
	}
}

// subscribe sends copilot:subscribe, with sinceSeq when since >= 0, and
// waits for copilot:subscribed (recording any replayed event on the way).
// It returns the copilot:subscribed data.
func (w *watcher) subscribe(conv string, since int64) map[string]any {
	w.t.Helper()
	data := map[string]any{"conversationId": conv}
	if since >= 0 {
		data["sinceSeq"] = since
		w.last[conv] = since
	} else {
		w.last[conv] = -1
	}
	w.cl.Send("copilot:subscribe", data)
	f := w.until("copilot:subscribed of "+conv, func(f relaytest.Frame) bool {
		return f.Type == "copilot:subscribed" && f.Field("conversationId") == conv
	})
	return dataOf(w.t, f)
}

// next reads one frame (up to d) and records it.
func (w *watcher) next(d time.Duration) (relaytest.Frame, bool) {
	w.t.Helper()
	f, ok := w.cl.TryNext(d)
	if !ok {
		return f, false
	}
	w.record(f)
	return f, true
}

func (w *watcher) record(f relaytest.Frame) {
	w.t.Helper()
	conv, _ := f.Field("conversationId").(string)
	switch f.Type {
	case "copilot:subscribed":
		m := dataOf(w.t, f)
		w.subscribed[conv] = append(w.subscribed[conv], m)
		seq := int64(m["seq"].(float64))
		switch last := w.last[conv]; {
		case last < 0: // no sinceSeq: live events follow seq
			w.last[conv] = seq
		case last < seq:
			w.t.Errorf("%s: the replay of %s ended at seq %d but copilot:subscribed says %d: %d event(s) missing", w.name, conv, last, seq, seq-last)
			w.last[conv] = seq
		case last > seq:
			w.t.Errorf("%s: copilot:subscribed of %s says seq %d after events up to %d", w.name, conv, seq, last)
		}
		return
	case "error", "pong", "copilot:conversations":
		return
	}
	seq := f.Seq()
	if conv == "" || seq < 1 {
		w.t.Errorf("%s: %s is not a conversation event with a seq: %s", w.name, f.Type, f.Raw)
		return
	}
	last, known := w.last[conv]
	switch {
	case !known || last < 0:
		w.t.Errorf("%s: event before copilot:subscribed: %s", w.name, f.Raw)
	case seq <= last:
		w.t.Errorf("%s: %s seq %d came again (already had up to %d): %s", w.name, conv, seq, last, f.Raw)
	case seq > last+1:
		w.t.Errorf("%s: %s jumped from seq %d to %d: %d event(s) missing", w.name, conv, last, seq, seq-last-1)
	}
	if seq > last {
		w.last[conv] = seq
	}
	if w.events[conv] == nil {
		w.events[conv] = map[int64][]byte{}
	}
	if prev, again := w.events[conv][seq]; again {
		// A subscribe from an earlier seq replays it: same bytes.
		if string(prev) != string(f.Raw) {
			w.t.Errorf("%s: %s seq %d came back different:\n%s\n%s", w.name, conv, seq, prev, f.Raw)
		}
		return
	}
	w.events[conv][seq] = f.Raw
	w.order[conv] = append(w.order[conv], seq)
}

// until reads frames until pred matches one, and returns it.
func (w *watcher) until(what string, pred func(relaytest.Frame) bool) relaytest.Frame {
	w.t.Helper()
	return w.untilWithin(what, timeout, pred)
}

// untilWithin is until with a bound of its own, for what the relay itself
// may take longer than timeout to do.
func (w *watcher) untilWithin(what string, d time.Duration, pred func(relaytest.Frame) bool) relaytest.Frame {
	w.t.Helper()
	deadline := time.Now().Add(d)
	for {
		f, ok := w.next(time.Until(deadline))
		if !ok {
			w.t.Fatalf("%s: no %s within %s (connection: %v)", w.name, what, d, w.cl.Err())
		}
		if pred(f) {
			return f
		}
	}
}

// count is how many events of conv the watcher has.
func (w *watcher) count(conv string) int { return len(w.events[conv]) }

// drain records what is left after the relay died, until the connection
// has ended.
func (w *watcher) drain() {
	w.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if _, ok := w.next(time.Until(deadline)); ok {
			continue
		}
		if w.cl.Err() == nil {
			w.t.Fatalf("%s: the connection is still open %s after the relay was killed", w.name, timeout)
		}
		return
	}
}

// typeOf decodes a raw frame's type.
func typeOf(raw []byte) string {
	var env struct{ Type string }
	_ = json.Unmarshal(raw, &env)
	return env.Type
}

// seen merges what several watchers received of conv, checking that they
// received the very same bytes for a seq.
func seen(t *testing.T, conv string, ws ...*watcher) map[int64][]byte {
	t.Helper()
	all := map[int64][]byte{}
	for _, w := range ws {
		for seq, raw := range w.events[conv] {
			if prev, ok := all[seq]; ok && string(prev) != string(raw) {
				t.Errorf("two clients got different frames for %s seq %d:\n%s\n%s", conv, seq, prev, raw)
			}
			all[seq] = raw
		}
	}
	return all
}

func maxSeq(events map[int64][]byte) int64 {
	var last int64
	for seq := range events {
		last = max(last, seq)
	}
	return last
}
