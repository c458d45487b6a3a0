package relay

import (
	"encoding/binary"
	"errors"
	"testing"
)

func guardFrame(op byte, fin bool, declared uint64) []byte {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	f := []byte{b0, 0x80 | 127}
	f = binary.BigEndian.AppendUint64(f, declared)
	return append(f, 1, 2, 3, 4) // mask key
}

// The guard adds up a fragmented message's frames, counts interleaved
// control frames apart, and follows any split of the stream.
func TestFrameGuard(t *testing.T) {
	t.Parallel()
	payload := func(n int) []byte { return make([]byte, n) }
	var stream []byte
	stream = append(stream, guardFrame(0x1, false, 40)...)
	stream = append(stream, payload(40)...)
	stream = append(stream, guardFrame(0x9, true, 4)...) // a ping between fragments
	stream = append(stream, payload(4)...)
	stream = append(stream, guardFrame(0x0, true, 60)...) // 100 in all: the limit
	stream = append(stream, payload(60)...)
	stream = append(stream, guardFrame(0x1, false, 90)...) // a new message
	stream = append(stream, payload(90)...)
	ok := len(stream)
	stream = append(stream, guardFrame(0x0, true, 11)...) // 101: over
	for _, step := range []int{1, 3, 7, len(stream)} {
		g := frameGuard{limit: 100}
		var err error
		at := 0
		for at < len(stream) && err == nil {
			end := min(at+step, len(stream))
			err = g.scan(stream[at:end])
			at = end
		}
		if !errors.Is(err, errMessageTooBig) || at <= ok {
			t.Errorf("read %d bytes at a time: %v after %d bytes, want errMessageTooBig after %d", step, err, at, ok)
		}
	}
	g := frameGuard{limit: 100}
	if err := g.scan([]byte{0x81, 0x05, 'h'}); !errors.Is(err, errUnmasked) {
		t.Errorf("an unmasked frame: %v", err)
	}
}
