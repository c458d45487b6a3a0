package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/pilotdesk/pilotdesk/relay/history/jetstream/natstest"
)

// The anchor (issue #15): nats-server's own core-NATS fan-out, the best Go
// fan-out engine at hand, measured next to the relay in the same run. The
// same number of subscribers (one connection each, in this process) get
// the same number of messages, each as long as the relay's delta frames,
// from one publisher (also in this process), in burst rounds like the
// relay's; the CPU per delivery of the nats-server process is measured the
// same way as the relay process's (schedCPU: the on-CPU time of all of its
// threads, in nanoseconds). The relay's figure is then printed as a ratio
// of nats-server's.

// schedCPU is the time the process's threads have spent on a CPU, from
// /proc/PID/task/*/schedstat (nanoseconds; Linux). Both processes are
// measured with it, so the ratio compares like with like; getrusage would
// do for the relay alone, and /proc/PID/stat counts in 10 ms ticks, too
// coarse for a round of a few hundred milliseconds.
func schedCPU(pid int) (time.Duration, error) {
	if runtime.GOOS != "linux" {
		return 0, errors.New("the anchor's CPU measurement needs Linux (/proc)")
	}
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(tasks) == 0 {
		return 0, fmt.Errorf("read the CPU time of process %d: no /proc/%d/task", pid, pid)
	}
	var total time.Duration
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // a thread that just ended
		}
		fields := strings.Fields(string(b))
		if len(fields) == 0 {
			continue
		}
		ns, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("read %s: %w", f, err)
		}
		total += time.Duration(ns)
	}
	return total, nil
}

// anchorResult is the anchor's figures: the median of its burst rounds.
type anchorResult struct {
	roundResult
	frameBytes int
}

// runAnchor measures nats-server's core fan-out: one node on loopback (the
// tests' natstest, a cluster of one), o.subscribers subscriptions on
// connections of their own, o.deltas messages of frameBytes per round.
func runAnchor(o options, frameBytes int) (anchorResult, error) {
	c, stop, err := natstest.StartProcess(1, "fanoutbench-anchor-*")
	if err != nil {
		return anchorResult{}, fmt.Errorf("start nats-server for the anchor: %w", err)
	}
	defer stop()
	pid := c.Nodes[0].PID()
	connect := func() (*nats.Conn, error) { return c.Connect(0) }

	const subject = "pilotdesk.anchor"
	type sub struct {
		nc   *nats.Conn
		mu   sync.Mutex // guards the fields below, written by the subscription's handler
		lat  []int64
		got  int
		last int64
		done chan struct{}
		want int
	}
	subs := make([]*sub, o.subscribers)
	for i := range subs {
		nc, err := connect()
		if err != nil {
			return anchorResult{}, err
		}
		defer nc.Close()
		s := &sub{nc: nc}
		subs[i] = s
		if _, err := nc.Subscribe(subject, func(m *nats.Msg) {
			now := time.Now().UnixNano()
			emitted := intAfter(m.Data, []byte("t="))
			s.mu.Lock()
			defer s.mu.Unlock()
			s.lat = append(s.lat, now-emitted)
			s.got++
			s.last = now
			if s.got == s.want {
				close(s.done)
			}
		}); err != nil {
			return anchorResult{}, err
		}
		if err := nc.Flush(); err != nil {
			return anchorResult{}, err
		}
	}
	pub, err := connect()
	if err != nil {
		return anchorResult{}, err
	}
	defer pub.Close()
	pad := bytes.Repeat([]byte("x"), frameBytes)

	round := func(n int) (roundResult, error) {
		for _, s := range subs {
			s.mu.Lock()
			s.lat, s.got, s.last, s.want, s.done = make([]int64, 0, n), 0, 0, n, make(chan struct{})
			s.mu.Unlock()
		}
		before, err := schedCPU(pid)
		if err != nil {
			return roundResult{}, err
		}
		first := time.Now().UnixNano()
		for range n {
			msg := fmt.Appendf(make([]byte, 0, frameBytes), "t=%019d;", time.Now().UnixNano())
			if len(msg) < frameBytes {
				msg = append(msg, pad[:frameBytes-len(msg)]...)
			}
			if err := pub.Publish(subject, msg); err != nil {
				return roundResult{}, err
			}
		}
		if err := pub.Flush(); err != nil {
			return roundResult{}, err
		}
		timeout := time.After(2 * time.Minute)
		for i, s := range subs {
			select {
			case <-s.done:
			case <-timeout:
				return roundResult{}, fmt.Errorf("anchor subscriber %d: not every message arrived in 2 minutes", i)
			}
		}
		after, err := schedCPU(pid)
		if err != nil {
			return roundResult{}, err
		}
		var all []int64
		var last int64
		got := 0
		for _, s := range subs {
			s.mu.Lock()
			all = append(all, s.lat...)
			got += s.got
			last = max(last, s.last)
			s.mu.Unlock()
		}
		return deliveries(all, got, n*len(subs), first, last, after-before), nil
	}
	if _, err := round(max(o.deltas/4, 100)); err != nil { // warm-up, as the relay's
		return anchorResult{}, err
	}
	fmt.Printf("nats-server core fan-out (the anchor, process %d): %d messages of %d B to %d subscribers per round\n", pid, o.deltas, frameBytes, o.subscribers)
	fmt.Printf("%-8s %14s %10s %10s %6s %16s\n", "round", "deliveries/s", "p50", "p99", "lost", "nats CPU/deliv")
	var rs []roundResult
	for i := range o.rounds {
		r, err := round(o.deltas)
		if err != nil {
			return anchorResult{}, err
		}
		rs = append(rs, r)
		printAnchorRound(fmt.Sprint(i+1), r)
	}
	med := median(rs)
	printAnchorRound("median", med)
	return anchorResult{roundResult: med, frameBytes: frameBytes}, nil
}

func printAnchorRound(name string, r roundResult) {
	fmt.Printf("%-8s %14.0f %10s %10s %6d %16s\n", name, r.deliveriesPerSec,
		r.p50.Round(10*time.Microsecond), r.p99.Round(10*time.Microsecond), r.lost, r.schedPerDelivery.Round(10*time.Nanosecond))
}
