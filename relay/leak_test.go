package relay_test

import "testing"

func TestLeakDetectorSeesRelayGoroutines(t *testing.T) {
	e := start(t, nil)
	e.dial()
	if n := len(relayGoroutines()); n == 0 {
		t.Fatal("the leak check sees no relay goroutine while a relay runs")
	} else {
		t.Logf("%d relay goroutines while running; the cleanup checks that none is left", n)
	}
}
