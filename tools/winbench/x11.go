package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// xconn is the least of the X11 protocol the benchmark needs, spoken
// directly on the X server's Unix socket: the moment a top-level window is
// mapped (a MapNotify on the root window, so start-up is timed by an event
// rather than by polling with a tool whose own start would be in the
// measurement), and who has the keyboard focus. Typing and clicking go
// through xdotool.
type xconn struct {
	c    net.Conn
	root uint32

	mu     sync.Mutex // guards maps and waiters
	maps   []mapEvent
	notify chan struct{} // closed and replaced on every MapNotify

	replies chan []byte
	readErr chan error
}

// mapEvent is one top-level window that was mapped, and when.
type mapEvent struct {
	window uint32
	at     time.Time
}

// dialX connects to display :n (Xvfb accepts local connections without
// authorisation) and listens for windows mapped on the root.
func dialX(n int) (*xconn, error) {
	c, err := net.Dial("unix", fmt.Sprintf("/tmp/.X11-unix/X%d", n))
	if err != nil {
		return nil, fmt.Errorf("connecting to the X server :%d: %w", n, err)
	}
	x := &xconn{c: c, notify: make(chan struct{}), replies: make(chan []byte, 4), readErr: make(chan error, 1)}
	if err := x.setup(); err != nil {
		c.Close()
		return nil, err
	}
	go x.read()
	// SubstructureNotify on the root: a MapNotify for each of its children.
	const cwEventMask, substructureNotify = 1 << 11, 1 << 19
	req := make([]byte, 16)
	req[0] = 2 // ChangeWindowAttributes
	binary.LittleEndian.PutUint16(req[2:], 4)
	binary.LittleEndian.PutUint32(req[4:], x.root)
	binary.LittleEndian.PutUint32(req[8:], cwEventMask)
	binary.LittleEndian.PutUint32(req[12:], substructureNotify)
	if _, err := c.Write(req); err != nil {
		c.Close()
		return nil, fmt.Errorf("selecting root events: %w", err)
	}
	// A round trip: once it is answered, the selection is in force.
	if _, err := x.inputFocus(); err != nil {
		c.Close()
		return nil, err
	}
	return x, nil
}

func (x *xconn) Close() error { return x.c.Close() }

// setup does the connection handshake and reads the root window's id.
func (x *xconn) setup() error {
	hello := []byte{'l', 0, 11, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	if _, err := x.c.Write(hello); err != nil {
		return fmt.Errorf("X setup: %w", err)
	}
	head := make([]byte, 8)
	if _, err := io.ReadFull(x.c, head); err != nil {
		return fmt.Errorf("X setup reply: %w", err)
	}
	body := make([]byte, int(binary.LittleEndian.Uint16(head[6:]))*4)
	if _, err := io.ReadFull(x.c, body); err != nil {
		return fmt.Errorf("X setup reply: %w", err)
	}
	if head[0] != 1 {
		return fmt.Errorf("the X server refused the connection: %q", body[:min(len(body), int(head[1]))])
	}
	// body starts at byte 8 of the reply: vendor length at 16, number of
	// formats at 21; the vendor string (padded) and 8 bytes per format
	// precede the first screen, whose first field is its root window.
	vendorLen := int(binary.LittleEndian.Uint16(body[16:]))
	formats := int(body[21])
	off := 32 + (vendorLen+3)&^3 + 8*formats
	if off+4 > len(body) {
		return errors.New("X setup reply: too short")
	}
	x.root = binary.LittleEndian.Uint32(body[off:])
	return nil
}

// read sorts what the server sends: replies to replies, MapNotify events
// to maps; the rest is dropped.
func (x *xconn) read() {
	r := bufio.NewReader(x.c)
	for {
		pkt := make([]byte, 32)
		if _, err := io.ReadFull(r, pkt); err != nil {
			x.readErr <- err
			close(x.replies)
			return
		}
		switch code := pkt[0] & 0x7f; code {
		case 0: // an error
			x.readErr <- fmt.Errorf("X error %d (request %d)", pkt[1], pkt[10])
		case 1: // a reply, maybe longer than 32 bytes
			if extra := binary.LittleEndian.Uint32(pkt[4:]) * 4; extra > 0 {
				more := make([]byte, extra)
				if _, err := io.ReadFull(r, more); err != nil {
					x.readErr <- err
					close(x.replies)
					return
				}
				pkt = append(pkt, more...)
			}
			x.replies <- pkt
		case 19: // MapNotify: event, window, override-redirect
			if pkt[12] != 0 {
				continue // a menu or tooltip, not a top-level window
			}
			x.mu.Lock()
			x.maps = append(x.maps, mapEvent{window: binary.LittleEndian.Uint32(pkt[8:]), at: time.Now()})
			close(x.notify)
			x.notify = make(chan struct{})
			x.mu.Unlock()
		}
	}
}

// mark returns how many windows were mapped so far, for waitMapped.
func (x *xconn) mark() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.maps)
}

// waitMapped waits for the first window mapped after mark.
func (x *xconn) waitMapped(mark int, timeout time.Duration) (mapEvent, error) {
	deadline := time.After(timeout)
	for {
		x.mu.Lock()
		if len(x.maps) > mark {
			ev := x.maps[mark]
			x.mu.Unlock()
			return ev, nil
		}
		ch := x.notify
		x.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			return mapEvent{}, fmt.Errorf("no window was mapped within %s", timeout)
		}
	}
}

// inputFocus asks who has the keyboard focus (GetInputFocus), a round trip.
func (x *xconn) inputFocus() (uint32, error) {
	req := []byte{43, 0, 1, 0}
	if _, err := x.c.Write(req); err != nil {
		return 0, fmt.Errorf("GetInputFocus: %w", err)
	}
	select {
	case rep, ok := <-x.replies:
		if !ok {
			return 0, fmt.Errorf("GetInputFocus: %w", <-x.readErr)
		}
		return binary.LittleEndian.Uint32(rep[8:]), nil
	case err := <-x.readErr:
		return 0, fmt.Errorf("GetInputFocus: %w", err)
	case <-time.After(5 * time.Second):
		return 0, errors.New("GetInputFocus: no reply from the X server")
	}
}

// focus gives window the keyboard focus (SetInputFocus; with no window
// manager nobody else does), or takes it from every window when window is
// 0, and waits until the server has done it.
func (x *xconn) focus(window uint32) error {
	const revertToPointerRoot, pointerRoot = 1, 1
	target := window
	if target == 0 {
		target = pointerRoot
	}
	req := make([]byte, 12)
	req[0] = 42 // SetInputFocus
	req[1] = revertToPointerRoot
	binary.LittleEndian.PutUint16(req[2:], 3)
	binary.LittleEndian.PutUint32(req[4:], target)
	// time 0: CurrentTime
	if _, err := x.c.Write(req); err != nil {
		return fmt.Errorf("SetInputFocus: %w", err)
	}
	_, err := x.inputFocus()
	return err
}

// warp moves the pointer to (px, py) on the root window, so that it rests
// where no window is and no hover effect runs.
func (x *xconn) warp(px, py int16) error {
	req := make([]byte, 24)
	req[0] = 41 // WarpPointer
	binary.LittleEndian.PutUint16(req[2:], 6)
	// src window None (0), dst window root
	binary.LittleEndian.PutUint32(req[8:], x.root)
	binary.LittleEndian.PutUint16(req[20:], uint16(px))
	binary.LittleEndian.PutUint16(req[22:], uint16(py))
	if _, err := x.c.Write(req); err != nil {
		return fmt.Errorf("WarpPointer: %w", err)
	}
	_, err := x.inputFocus()
	return err
}
