package reliability

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestIdleKeepAliveClosed: a connection that asks GET /healthz and then
// sends nothing is closed within about a minute (the server's IdleTimeout).
// Before issue #33 such connections stayed open for good, and 20,050 of
// them used every file descriptor the relay had.
func TestIdleKeepAliveClosed(t *testing.T) {
	// The minute starts before the test waits for its turn among the
	// parallel tests: the relay, the request and the watch of the
	// connection are set up first, so the relay's timer runs while the
	// other tests do.
	p := startRelay(t, nil, "--listen", "127.0.0.1:0", "--agent", "script", "--data-dir", ":memory:", "--token", "idle-test-token-0123456789")
	conn, err := net.DialTimeout("tcp", p.Addr, timeout)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: "+p.Addr+"\r\nConnection: keep-alive\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	start := time.Now()
	_ = conn.SetReadDeadline(time.Now().Add(90 * time.Second))
	type end struct {
		after time.Duration // since the response
		err   error
	}
	ended := make(chan end, 1)
	go func() {
		_, err := br.ReadByte()
		ended <- end{time.Since(start), err}
	}()
	t.Parallel()
	e := <-ended
	if ne, ok := e.err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the idle keep-alive connection was still open %v after its response", e.after.Round(time.Second))
	}
	if e.after > 70*time.Second {
		t.Errorf("closed %v after the response, want within 60 s", e.after.Round(time.Second))
	}
}
