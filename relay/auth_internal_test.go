package relay

import (
	"bytes"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// The throttle of wrong tokens: allowed free failures, then a delay that
// doubles with each failure up to authMaxDelay; the burst ends a minute
// after the last failure, or with a right token, and the log says once
// that it began and once that it ended.
func TestAuthThrottleDelays(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	th := authThrottle{allowed: 2}
	addr, other := netip.MustParseAddr("192.0.2.7"), netip.MustParseAddr("192.0.2.8")
	now := time.Unix(1_000_000, 0)
	wait := func(a netip.Addr) time.Duration {
		d, ok := th.throttled(a, now)
		if !ok {
			return 0
		}
		return d
	}
	th.fail(log, addr, now)
	th.fail(log, addr, now)
	if d := wait(addr); d != 0 {
		t.Fatalf("throttled after the allowed failures: %v", d)
	}
	var got []time.Duration
	for range 9 {
		th.fail(log, addr, now)
		got = append(got, wait(addr))
		now = now.Add(wait(addr)) // the attacker waits out each delay
	}
	want := []time.Duration{1, 2, 4, 8, 16, 32, 60, 60, 60}
	for i := range want {
		if got[i] != want[i]*time.Second {
			t.Fatalf("delays %v, want %v seconds", got, want)
		}
	}
	if d := wait(other); d != 0 {
		t.Fatalf("another address is throttled: %v", d)
	}
	if n := strings.Count(logs.String(), "throttling"); n != 1 || !strings.Contains(logs.String(), "remote=192.0.2.7 failures=3") {
		t.Fatalf("the log said it %d times:\n%s", n, logs.String())
	}
	// A minute of quiet ends the burst: the next failure is free again,
	// and the log says how many there were.
	now = now.Add(authBurstGap)
	th.fail(log, addr, now)
	if d := wait(addr); d != 0 || !strings.Contains(logs.String(), `ended" remote=192.0.2.7 failures=11`) {
		t.Fatalf("after a quiet minute: throttled %v, log:\n%s", d, logs.String())
	}
	// A right token ends it too.
	th.fail(log, addr, now)
	th.fail(log, addr, now)
	if d := wait(addr); d != time.Second {
		t.Fatalf("throttled %v, want 1s", d)
	}
	th.succeeded(log, addr)
	if d := wait(addr); d != 0 {
		t.Fatalf("throttled %v after the right token", d)
	}
}

// The table of addresses stays bounded whatever the number of addresses.
func TestAuthThrottleBounded(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.DiscardHandler)
	th := authThrottle{allowed: 1}
	now := time.Unix(1_000_000, 0)
	for i := range authMaxEntries + 1000 {
		a := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		th.fail(log, a, now)
	}
	if n := len(th.byAddr); n > authMaxEntries {
		t.Fatalf("%d addresses held, over %d", n, authMaxEntries)
	}
}

// IPv6 addresses count by their /64; IPv4-mapped ones as IPv4.
func TestAddrKey(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"[2001:db8:1:2:3:4:5:6]:80": "2001:db8:1:2::",
		"[::ffff:10.0.0.1]:80":      "10.0.0.1",
		"[::1]:80":                  "::1",
		"127.0.0.1:5":               "127.0.0.1",
	} {
		ap := netip.MustParseAddrPort(in)
		if got := addrKey(tcpAddr(ap)); got.String() != want {
			t.Errorf("addrKey(%s) = %s, want %s", in, got, want)
		}
	}
}

func tcpAddr(ap netip.AddrPort) *net.TCPAddr { return net.TCPAddrFromAddrPort(ap) }
