package acp

import (
	"context"
	"testing"
	"time"
)

// TestOrdererWaitsForUpdatesRead: a request waits until every
// session/update read before it was handled; an update that never reaches
// the router (the SDK could not decode it) holds one request up for
// orderTimeout at most, and none after it.
func TestOrdererWaitsForUpdatesRead(t *testing.T) {
	t.Parallel()
	var o orderer
	update := []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{}}}` + "\n")
	o.sawLine(update)
	o.sawLine([]byte(`{"jsonrpc":"2.0","id":3,"method":"session/request_permission","params":{"text":"session/update"}}` + "\n"))
	o.sawLine([]byte(`{"jsonrpc":"2.0","id":4,"result":{"text":"\"session/update\""}}` + "\n"))

	done := make(chan struct{})
	go func() { o.wait(context.Background()); close(done) }()
	select {
	case <-done:
		t.Fatal("wait returned before the update read was handled")
	case <-time.After(50 * time.Millisecond):
	}
	o.handledOne()
	select {
	case <-done:
	case <-time.After(orderTimeout / 2):
		t.Fatal("wait did not return once the update was handled")
	}

	// One lost update: the first wait times out, the next does not wait.
	o.sawLine(update)
	started := time.Now()
	o.wait(context.Background())
	if d := time.Since(started); d < orderTimeout/2 {
		t.Errorf("wait returned after %v with an update unhandled", d)
	}
	started = time.Now()
	o.wait(context.Background())
	if d := time.Since(started); d > orderTimeout/2 {
		t.Errorf("a later wait waited %v for the lost update", d)
	}
}
