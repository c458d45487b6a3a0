package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// peerHandler is a Handler with scripted behaviour.
type peerHandler struct {
	mu            sync.Mutex
	notifications []string
	onRequest     func(ctx context.Context, method string, params json.RawMessage, reply Replier)
}

func (h *peerHandler) Notification(method string, params json.RawMessage) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.notifications = append(h.notifications, method+" "+string(params))
}

func (h *peerHandler) Request(ctx context.Context, method string, params json.RawMessage, reply Replier) {
	if h.onRequest == nil {
		reply(nil, ErrMethodNotFound)
		return
	}
	h.onRequest(ctx, method, params, reply)
}

// pair connects two Conns back to back. Closing the returned func ends both.
func pair(t *testing.T, a, b Handler) (*Conn, *Conn) {
	t.Helper()
	ar, bw := io.Pipe()
	br, aw := io.Pipe()
	ca := NewConn(ar, aw, a, Options{})
	cb := NewConn(br, bw, b, Options{})
	t.Cleanup(func() {
		aw.Close()
		bw.Close()
		ca.Wait()
		cb.Wait()
	})
	return ca, cb
}

func TestCallBothWays(t *testing.T) {
	server := &peerHandler{onRequest: func(ctx context.Context, method string, params json.RawMessage, reply Replier) {
		switch method {
		case "add":
			var p struct{ A, B int }
			if err := json.Unmarshal(params, &p); err != nil {
				reply(nil, &Error{Code: CodeInvalidParams, Message: err.Error()})
				return
			}
			reply(map[string]int{"sum": p.A + p.B}, nil)
		case "fail":
			reply(nil, errors.New("it broke"))
		default:
			reply(nil, ErrMethodNotFound)
		}
	}}
	client := &peerHandler{onRequest: func(ctx context.Context, method string, params json.RawMessage, reply Replier) {
		reply("pong from client", nil)
	}}
	c, s := pair(t, client, server)
	ctx := context.Background()

	var res struct{ Sum int }
	if err := c.Call(ctx, "add", map[string]int{"A": 2, "B": 3}, &res); err != nil || res.Sum != 5 {
		t.Fatalf("add: %v %v", res, err)
	}
	err := c.Call(ctx, "nope", nil, nil)
	if !IsMethodNotFound(err) {
		t.Errorf("unknown method: %v, want method not found", err)
	}
	var rpcErr *Error
	if err := c.Call(ctx, "fail", nil, nil); !errors.As(err, &rpcErr) || rpcErr.Code != CodeServerError || rpcErr.Message != "it broke" {
		t.Errorf("fail: %v", err)
	}
	// The server calls the client: its ids start at 1 too, and must not be
	// confused with the client's own.
	var got string
	if err := s.Call(ctx, "ping", nil, &got); err != nil || got != "pong from client" {
		t.Errorf("server to client: %q %v", got, err)
	}
	if err := c.Notify("hello", map[string]int{"x": 1}); err != nil {
		t.Fatal(err)
	}
	// A call after the notification proves the notification was read.
	_ = c.Call(ctx, "add", map[string]int{}, nil)
	server.mu.Lock()
	defer server.mu.Unlock()
	if len(server.notifications) != 1 || server.notifications[0] != `hello {"x":1}` {
		t.Errorf("notifications = %q", server.notifications)
	}
}

func TestConcurrentCallsAndSlowReplies(t *testing.T) {
	release := make(chan struct{})
	server := &peerHandler{onRequest: func(ctx context.Context, method string, params json.RawMessage, reply Replier) {
		if method == "slow" {
			go func() { // answering later must not stop the reader
				<-release
				reply("slow done", nil)
			}()
			return
		}
		var n int
		_ = json.Unmarshal(params, &n)
		reply(n*2, nil)
	}}
	c, _ := pair(t, &peerHandler{}, server)
	ctx := context.Background()
	slow := make(chan error, 1)
	go func() {
		var s string
		slow <- c.Call(ctx, "slow", nil, &s)
	}()
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out int
			if err := c.Call(ctx, "double", i, &out); err != nil || out != 2*i {
				t.Errorf("double(%d) = %d, %v", i, out, err)
			}
		}()
	}
	wg.Wait()
	close(release)
	if err := <-slow; err != nil {
		t.Errorf("slow: %v", err)
	}
}

func TestCallContextAndClose(t *testing.T) {
	server := &peerHandler{onRequest: func(ctx context.Context, method string, params json.RawMessage, reply Replier) {
		go func() {
			<-ctx.Done() // never answers while the connection lives
			reply(nil, ctx.Err())
		}()
	}}
	c, _ := pair(t, &peerHandler{}, server)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := c.Call(ctx, "wait", nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Call with an expired context: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Call(context.Background(), "wait", nil, nil) }()
	time.Sleep(20 * time.Millisecond) // let the call register; either order is correct
	c.Close(nil)
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("pending call after Close: %v, want ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a pending call outlived Close")
	}
	if err := c.Call(context.Background(), "x", nil, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Call after Close: %v", err)
	}
}

func TestStreamEndFailsPendingCalls(t *testing.T) {
	r, w := io.Pipe()
	out := &strings.Builder{}
	c := NewConn(r, writerFunc(func(b []byte) (int, error) { out.Write(b); return len(b), nil }), &peerHandler{}, Options{})
	done := make(chan error, 1)
	go func() { done <- c.Call(context.Background(), "x", nil, nil) }()
	// Bad framing makes the stream unusable: the call fails with ErrClosed
	// and Err tells why.
	go w.Write([]byte("Content-Length: zz\r\n\r\n"))
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("call: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("call not failed")
	}
	var fe *FrameError
	if !errors.As(c.Err(), &fe) {
		t.Errorf("Err = %v, want a FrameError", c.Err())
	}
	w.Close()
	c.Wait()
}

func TestInvalidMessagesAreSkipped(t *testing.T) {
	r, w := io.Pipe()
	h := &peerHandler{}
	c := NewConn(r, io.Discard, h, Options{})
	go func() {
		w.Write([]byte(frame(`{oops`) + frame(`[1]`) + frame(`{"jsonrpc":"2.0","id":5,"result":{}}`) + frame(`{"jsonrpc":"2.0","method":"after"}`)))
		w.Close()
	}()
	<-c.Done()
	c.Wait()
	if c.Err() != io.EOF {
		t.Errorf("Err = %v, want io.EOF", c.Err())
	}
	if len(h.notifications) != 1 || !strings.HasPrefix(h.notifications[0], "after") {
		t.Errorf("notifications = %q: the valid message after the bad ones is lost", h.notifications)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }
