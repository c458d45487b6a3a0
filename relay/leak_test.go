package relay_test

import "testing"

func TestLeakDetectorSeesRelayGoroutines(t *testing.T) {
	e := start(t, nil)
	e.dial()
	if n := len(relayGoroutines("")); n == 0 {
		t.Fatal("the leak check sees no relay goroutine while a relay runs")
	} else {
		t.Logf("%d relay goroutines while running; the cleanup checks that none is left", n)
	}
}

// A parallel test's leak check sees the relay goroutines it started, by
// their label, and not those of another test.
func TestLeakDetectorSeesLabelledGoroutines(t *testing.T) {
	parallel(t)
	e := start(t, nil)
	e.dial()
	if n := len(relayGoroutines(t.Name())); n == 0 {
		t.Fatal("the leak check of a parallel test sees no relay goroutine of its own while its relay runs")
	} else {
		t.Logf("%d labelled relay goroutines while running", n)
	}
	if n := len(relayGoroutines(t.Name() + "-another")); n != 0 {
		t.Fatalf("the leak check of another test sees %d of this one's goroutines", n)
	}
}
