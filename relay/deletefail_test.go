package relay_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// brokenDeleteStore is a memory store whose Delete fails, as SQLite's does
// when the history is damaged beyond what a delete can remove.
type brokenDeleteStore struct{ *history.Memory }

func (brokenDeleteStore) Delete(context.Context, string) error {
	return errors.New("history: delete events of \"c\": database disk image is malformed (11)")
}

// A delete that the store cannot do is answered: the connection that asked
// gets error code limit naming the cause, also when it is no subscriber
// (which used to get nothing at all), and the subscribers copilot:error;
// the conversation stays.
func TestDeleteFailureAnswered(t *testing.T) {
	e := startFull(t, brokenDeleteStore{history.NewMemory()})
	sub, _ := e.subscribe("c")
	ft := e.startTurn(sub, "c", "hello", nil)
	ft.finish(nil)
	sub.WaitFor("copilot:idle", nil)

	owner := e.dial()
	owner.Send("copilot:delete", map[string]any{"conversationId": "c"})
	f := owner.Expect("error")
	m := dataMap(t, f)
	if m["code"] != "limit" || m["type"] != "copilot:delete" || m["conversationId"] != "c" ||
		!strings.Contains(m["message"].(string), "could not be deleted") || !strings.Contains(m["message"].(string), "malformed") {
		t.Fatalf("the answer to a failed delete: %s", f.Raw)
	}
	if f := sub.Expect("copilot:error"); !strings.Contains(string(f.Raw), "could not be deleted") {
		t.Fatalf("the subscriber got %s", f.Raw)
	}
	owner.Send("copilot:list", nil)
	if f := owner.Expect("copilot:conversations"); !strings.Contains(string(f.Data), `"conversationId":"c"`) {
		t.Fatalf("the conversation is gone from the list after a failed delete: %s", f.Raw)
	}
}
