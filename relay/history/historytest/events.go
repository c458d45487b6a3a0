package historytest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// The suite's checks of events: their order, replay from a seq, long and
// split histories, streaming, and frames that stay valid.

func testEventsOrderAndSince(t *testing.T, s history.Store) {
	write(t, s, history.Batch{Conversations: []history.Conversation{conv("a", 0), conv("b", 0)}})
	// Interleave two conversations over several batches.
	for from := int64(1); from <= 30; from += 5 {
		write(t, s, history.Batch{Events: append(events("a", from, from+4), events("b", from, from+2)...)})
	}
	all := events("a", 1, 30)
	checkEvents(t, readAll(t, s, "a", 0), all)
	checkEvents(t, readAll(t, s, "a", 1), all[1:])
	checkEvents(t, readAll(t, s, "a", 17), all[17:])
	checkEvents(t, readAll(t, s, "a", 29), all[29:])
	checkEvents(t, readAll(t, s, "a", 30), nil)
	checkEvents(t, readAll(t, s, "a", 1000), nil)
	checkEvents(t, readAll(t, s, "a", -5), all)

	var b []history.Event
	for from := int64(1); from <= 30; from += 5 {
		b = append(b, events("b", from, from+2)...)
	}
	checkEvents(t, readAll(t, s, "b", 0), b)
	checkEvents(t, readAll(t, s, "b", 12), b[8:]) // b's seqs are 1-3, 6-8, 11-13, …: 13 is the ninth
}

func testEventsOutOfOrderWrites(t *testing.T, s history.Store) {
	write(t, s, history.Batch{Conversations: []history.Conversation{conv("a", 0)}, Events: []history.Event{event("a", 5), event("a", 2)}})
	write(t, s, history.Batch{Events: []history.Event{event("a", 3), event("a", 1), event("a", 9)}})
	want := []history.Event{event("a", 1), event("a", 2), event("a", 3), event("a", 5), event("a", 9)}
	checkEvents(t, readAll(t, s, "a", 0), want)
	checkEvents(t, readAll(t, s, "a", 2), want[2:])
}

func testEventsStopOnError(t *testing.T, s history.Store) {
	write(t, s, history.Batch{Conversations: []history.Conversation{conv("a", 0)}, Events: events("a", 1, 10)})
	stop := errors.New("stop here")
	var got []int64
	err := s.Events(context.Background(), "a", 0, func(e history.Event) error {
		got = append(got, e.Seq)
		if e.Seq == 4 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Fatalf("Events returned %v, want fn's error", err)
	}
	if fmt.Sprint(got) != "[1 2 3 4]" {
		t.Fatalf("fn saw %v after returning an error at 4", got)
	}
}

// testEventsLongHistory reads more events than any sensible page, from the
// start and from the middle, and with big frames.
func testEventsLongHistory(t *testing.T, s history.Store) {
	const n = 2345
	write(t, s, history.Batch{Conversations: []history.Conversation{conv("long", 0)}})
	all := events("long", 1, n)
	for i := 0; i < n; i += 400 {
		write(t, s, history.Batch{Events: all[i:min(i+400, n)]})
	}
	checkEvents(t, readAll(t, s, "long", 0), all)
	checkEvents(t, readAll(t, s, "long", 1234), all[1234:])

	big := history.Event{ConversationID: "long", Seq: n + 1, Type: "copilot:tool_output", Frame: bytes.Repeat([]byte("0123456789abcdef"), 256<<10/16)}
	big2 := big
	big2.Seq, big2.Frame = n+2, bytes.Repeat([]byte("z"), 3<<20)
	write(t, s, history.Batch{Events: []history.Event{big, big2}})
	checkEvents(t, readAll(t, s, "long", n-1), []history.Event{all[n-1], big, big2})
}

// testEventsWriteFromCallback writes while a replay is running: a store
// must not hold anything across fn that keeps a writer out (the relay
// replays to a slow client while conversations stream).
func testEventsWriteFromCallback(t *testing.T, s history.Store) {
	const n = 1500
	write(t, s, history.Batch{Conversations: []history.Conversation{conv("a", 0), conv("b", 0)}, Events: events("a", 1, n)})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var next int64 = 1
	err := s.Events(ctx, "a", 0, func(e history.Event) error {
		if e.Seq%100 == 0 {
			if err := s.Write(ctx, history.Batch{Events: []history.Event{event("b", next)}}); err != nil {
				return fmt.Errorf("write from fn at seq %d: %w", e.Seq, err)
			}
			next++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checkEvents(t, readAll(t, s, "b", 0), events("b", 1, n/100))
}

func testEventsFramesStayValid(t *testing.T, s history.Store) {
	write(t, s, history.Batch{Conversations: []history.Conversation{conv("a", 0)}, Events: events("a", 1, 600)})
	kept := readAll(t, s, "a", 0) // fn may keep what it is given
	write(t, s, history.Batch{Events: events("a", 601, 1200)})
	_ = readAll(t, s, "a", 0)
	checkEvents(t, kept, events("a", 1, 600))
}

// testEventsInStretches reads a history the way the relay replays to a
// slow client: fn stops the read now and then, and the next read starts
// after the last event it took, with writes in between. Every event comes
// once, in order.
func testEventsInStretches(t *testing.T, s history.Store) {
	const n = 1000
	write(t, s, history.Batch{Conversations: []history.Conversation{conv("a", 0)}, Events: events("a", 1, n/2)})
	pause := errors.New("pause")
	var got []history.Event
	var since int64
	for calls := 0; ; calls++ {
		if calls > n {
			t.Fatalf("%d reads and still not done: got up to seq %d", calls, since)
		}
		took := 0
		err := s.Events(context.Background(), "a", since, func(e history.Event) error {
			got = append(got, e)
			since = e.Seq
			if took++; took == 37 {
				return pause
			}
			return nil
		})
		if calls == 3 {
			write(t, s, history.Batch{Events: events("a", n/2+1, n)})
		}
		if err == nil {
			break
		}
		if !errors.Is(err, pause) {
			t.Fatalf("Events: %v", err)
		}
	}
	checkEvents(t, got, events("a", 1, n))
}

// testEventsStream checks that a store streams: a read that stops after its
// first event, in a history of 24 MiB, allocates a few pages at most, not
// the history. The relay depends on it: each replay reads in short
// stretches, and a store that loaded everything per read would cost every
// replaying client the whole conversation.
func testEventsStream(t *testing.T, s history.Store) {
	const n, size = 384, 64 << 10
	write(t, s, history.Batch{Conversations: []history.Conversation{conv("big", 0)}})
	frame := bytes.Repeat([]byte("s"), size)
	for from := int64(1); from <= n; from += 32 {
		var b history.Batch
		for seq := from; seq < from+32; seq++ {
			b.Events = append(b.Events, history.Event{ConversationID: "big", Seq: seq, Type: "copilot:delta", Frame: frame})
		}
		write(t, s, b)
	}
	stop := errors.New("enough")
	read := func(since int64) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		err := s.Events(context.Background(), "big", since, func(history.Event) error { return stop })
		runtime.ReadMemStats(&after)
		if !errors.Is(err, stop) {
			t.Fatalf("Events: %v", err)
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	// What a read allocates is read off the process's counter, which the
	// tests running beside this one (t.Parallel) add to: the least of a
	// few reads is this read's own. A store that loads the history
	// allocates all of it every time.
	least := func(since int64) uint64 {
		alloc := read(since)
		for range 4 {
			alloc = min(alloc, read(since))
		}
		return alloc
	}
	for _, since := range []int64{0, n / 2} {
		if alloc := least(since); alloc > 8<<20 {
			t.Errorf("a read from seq %d that stops after one event allocated %d MiB of a %d MiB history", since, alloc>>20, n*size>>20)
		}
	}
}
