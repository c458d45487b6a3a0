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
// measurement), who has the keyboard focus, and when a window is drawn (the
// DAMAGE extension: one event per frame the program puts on the screen,
// with the server's time). Typing and clicking go through xdotool.
type xconn struct {
	c    net.Conn
	root uint32
	// ids hands out resource ids (the setup's base and mask).
	idBase, idMask, nextID uint32
	// damageOp is the DAMAGE extension's major opcode (0 until
	// watchFrames set it up); damageEvent, its first event, is under mu.
	damageOp byte

	mu          sync.Mutex // guards maps, waiters, frames and damageEvent
	damageEvent byte
	maps        []mapEvent
	notify      chan struct{} // closed and replaced on every MapNotify
	// frames are the server times (ms) of the frames drawn in the
	// watched window, and frameAt when each reached the benchmark.
	frames  []uint32
	frameAt []time.Time

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
		return fmt.Errorf("the X server's setup: %w", err)
	}
	head := make([]byte, 8)
	if _, err := io.ReadFull(x.c, head); err != nil {
		return fmt.Errorf("the X server's setup reply: %w", err)
	}
	body := make([]byte, int(binary.LittleEndian.Uint16(head[6:]))*4)
	if _, err := io.ReadFull(x.c, body); err != nil {
		return fmt.Errorf("the X server's setup reply: %w", err)
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
		return errors.New("the X server's setup reply: too short")
	}
	x.root = binary.LittleEndian.Uint32(body[off:])
	x.idBase, x.idMask = binary.LittleEndian.Uint32(body[4:]), binary.LittleEndian.Uint32(body[8:])
	return nil
}

// newID returns a resource id of this connection's.
func (x *xconn) newID() uint32 {
	x.nextID++
	return x.idBase | (x.nextID & x.idMask)
}

// request sends req and waits for its reply.
func (x *xconn) request(what string, req []byte) ([]byte, error) {
	if _, err := x.c.Write(req); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	select {
	case rep, ok := <-x.replies:
		if !ok {
			return nil, fmt.Errorf("%s: %w", what, <-x.readErr)
		}
		return rep, nil
	case err := <-x.readErr:
		return nil, fmt.Errorf("%s: %w", what, err)
	case <-time.After(5 * time.Second):
		return nil, fmt.Errorf("%s: no reply from the X server", what)
	}
}

// watchFrames records a frame each time window is drawn, from now on
// (DamageCreate at the RawRectangles level: an event per rectangle drawn,
// the last of a drawing without the "more" bit). Under Xvfb a GL window's
// frame is one XShmPutImage of the whole window.
func (x *xconn) watchFrames(window uint32) error {
	if x.damageOp == 0 {
		name := "DAMAGE"
		req := make([]byte, 8+(len(name)+3)&^3)
		req[0] = 98 // QueryExtension
		binary.LittleEndian.PutUint16(req[2:], uint16(len(req)/4))
		binary.LittleEndian.PutUint16(req[4:], uint16(len(name)))
		copy(req[8:], name)
		rep, err := x.request("QueryExtension DAMAGE", req)
		if err != nil {
			return err
		}
		if rep[8] == 0 {
			return errors.New("the X server has no DAMAGE extension")
		}
		op, ev := rep[9], rep[10]
		// DamageQueryVersion 1.1, which the extension requires first.
		req = make([]byte, 12)
		req[0], req[1] = op, 0
		binary.LittleEndian.PutUint16(req[2:], 3)
		binary.LittleEndian.PutUint32(req[4:], 1)
		binary.LittleEndian.PutUint32(req[8:], 1)
		if _, err := x.request("DamageQueryVersion", req); err != nil {
			return err
		}
		x.mu.Lock() // read() sorts events by it
		x.damageOp, x.damageEvent = op, ev
		x.mu.Unlock()
	}
	req := make([]byte, 16)
	req[0], req[1] = x.damageOp, 1 // DamageCreate
	binary.LittleEndian.PutUint16(req[2:], 4)
	binary.LittleEndian.PutUint32(req[4:], x.newID())
	binary.LittleEndian.PutUint32(req[8:], window)
	req[12] = 0 // DamageReportRawRectangles
	if _, err := x.c.Write(req); err != nil {
		return fmt.Errorf("DamageCreate: %w", err)
	}
	_, err := x.inputFocus() // a round trip: the damage object exists
	return err
}

// frameMark returns how many frames were recorded so far, for framesSince.
func (x *xconn) frameMark() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.frames)
}

// framesSince returns the server times (ms) of the frames recorded after
// mark.
func (x *xconn) framesSince(mark int) []uint32 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([]uint32(nil), x.frames[mark:]...)
}

// frameAfter returns when the first frame recorded after mark that reached
// the benchmark at or after t did, if one has.
func (x *xconn) frameAfter(mark int, t time.Time) (time.Time, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, at := range x.frameAt[mark:] {
		if !at.Before(t) {
			return at, true
		}
	}
	return time.Time{}, false
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
		x.mu.Lock()
		damageEvent := x.damageEvent
		x.mu.Unlock()
		if code := pkt[0] & 0x7f; damageEvent != 0 && code == damageEvent {
			// DamageNotify: level (bit 7: more follow), drawable, damage,
			// timestamp.
			if pkt[1]&0x80 == 0 {
				x.mu.Lock()
				x.frames = append(x.frames, binary.LittleEndian.Uint32(pkt[12:]))
				x.frameAt = append(x.frameAt, time.Now())
				x.mu.Unlock()
			}
			continue
		}
		switch code := pkt[0] & 0x7f; code {
		case 0: // an error
			x.readErr <- fmt.Errorf("the X server's error %d (request %d)", pkt[1], pkt[10])
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
