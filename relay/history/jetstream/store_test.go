package jetstream

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/history/historytest"
)

// embedded starts an in-process node in a temporary dir and connects to it.
func embedded(t *testing.T) (*Embedded, *nats.Conn) {
	t.Helper()
	e, err := StartEmbedded(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Shutdown)
	nc, err := e.Connect("test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return e, nc
}

// TestEmbeddedConformance runs the history conformance suite on one
// in-process node (R1), each store in a namespace of its own.
func TestEmbeddedConformance(t *testing.T) {
	_, nc := embedded(t)
	n := 0
	historytest.Run(t, func(t *testing.T) history.Store {
		n++
		s, err := Open(context.Background(), nc, Options{Replicas: 1, Namespace: fmt.Sprintf("c%d", n)})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
