package relay_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
)

func TestHealthz(t *testing.T) {
	e := start(t, func(c *relay.Config) { c.Token = "tok" })
	resp, err := http.Get(e.srv.HTTPURL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(body) != "ok" {
		t.Fatalf("GET /healthz: %d %q, want 200 ok", resp.StatusCode, body)
	}
}

func TestPingPong(t *testing.T) {
	e := start(t, nil)
	cl := e.dial()
	cl.Send("ping", nil)
	f := cl.Expect("pong")
	if !bytes.Equal(f.Raw, []byte(`{"type":"pong"}`)) {
		t.Fatalf("pong frame %s", f.Raw)
	}
	cl.SendRaw([]byte(`{"type":"ping","data":{}}`))
	cl.Expect("pong")
}

// Every bad frame gets one error with the right code, and the connection
// stays open (docs/protocol.md, Transport).
func TestBadFrames(t *testing.T) {
	e := start(t, nil)
	cl := e.dial()
	cases := []struct {
		name, frame, code, typ string
	}{
		{"not JSON", `{"type":`, protocol.CodeInvalidJSON, ""},
		{"garbage", `hello`, protocol.CodeInvalidJSON, ""},
		{"array", `[1,2]`, protocol.CodeInvalidJSON, ""},
		{"string", `"ping"`, protocol.CodeInvalidJSON, ""},
		{"null", `null`, protocol.CodeInvalidJSON, ""},
		{"no type", `{"data":{}}`, protocol.CodeInvalidMessage, ""},
		{"type not a string", `{"type":5}`, protocol.CodeInvalidMessage, ""},
		{"data not an object", `{"type":"copilot:subscribe","data":[1]}`, protocol.CodeInvalidMessage, "copilot:subscribe"},
		{"data a string", `{"type":"copilot:send","data":"x"}`, protocol.CodeInvalidMessage, "copilot:send"},
		{"unknown type", `{"type":"copilot:dance"}`, protocol.CodeUnknownType, "copilot:dance"},
		{"missing conversationId", `{"type":"copilot:subscribe","data":{}}`, protocol.CodeMissingField, "copilot:subscribe"},
		{"missing prompt", `{"type":"copilot:send","data":{"conversationId":"c"}}`, protocol.CodeMissingField, "copilot:send"},
		{"send without data", `{"type":"copilot:send"}`, protocol.CodeMissingField, "copilot:send"},
		{"missing requestId", `{"type":"copilot:user_input_response","data":{"conversationId":"c","answer":"x"}}`, protocol.CodeMissingField, "copilot:user_input_response"},
		{"conversationId a number", `{"type":"copilot:subscribe","data":{"conversationId":7}}`, protocol.CodeInvalidField, "copilot:subscribe"},
		{"sinceSeq a string", `{"type":"copilot:subscribe","data":{"conversationId":"c","sinceSeq":"3"}}`, protocol.CodeInvalidField, "copilot:subscribe"},
		{"sinceSeq negative", `{"type":"copilot:subscribe","data":{"conversationId":"c","sinceSeq":-1}}`, protocol.CodeInvalidField, "copilot:subscribe"},
		{"prompt a bool", `{"type":"copilot:send","data":{"conversationId":"c","prompt":true}}`, protocol.CodeInvalidField, "copilot:send"},
		{"send bad mode", `{"type":"copilot:send","data":{"conversationId":"c","prompt":"p","mode":"yolo"}}`, protocol.CodeInvalidField, "copilot:send"},
		{"set_mode bad mode", `{"type":"copilot:set_mode","data":{"conversationId":"c","mode":"PLAN"}}`, protocol.CodeInvalidField, "copilot:set_mode"},
		{"set_mode missing mode", `{"type":"copilot:set_mode","data":{"conversationId":"c"}}`, protocol.CodeMissingField, "copilot:set_mode"},
		{"rejected not a bool", `{"type":"copilot:user_input_response","data":{"conversationId":"c","requestId":"r","answer":"a","rejected":"yes"}}`, protocol.CodeInvalidField, "copilot:user_input_response"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cl.SendRaw([]byte(tc.frame))
			f := cl.Expect("error")
			m := dataMap(t, f)
			if m["code"] != tc.code {
				t.Errorf("%s: code %v, want %s", f.Raw, m["code"], tc.code)
			}
			if msg, _ := m["message"].(string); len(msg) < 10 {
				t.Errorf("%s: message too short to act on", f.Raw)
			}
			if tc.typ != "" && m["type"] != tc.typ {
				t.Errorf("%s: type %v, want %s", f.Raw, m["type"], tc.typ)
			}
			// Nothing else happens, and the connection stays open.
			expectQuiet(t, cl)
		})
	}
	// A bad mode changed nothing: the conversation is still in act.
	cl.Send("copilot:subscribe", map[string]any{"conversationId": "c"})
	if m := dataMap(t, cl.Expect("copilot:subscribed")); m["mode"] != "act" || m["seq"] != 0.0 {
		t.Fatalf("after bad frames: %v", m)
	}
	if n := len(e.agent.openCalls()); n != 0 {
		t.Fatalf("a bad send opened %d agent sessions", n)
	}
}

// A frame over 1 MiB gets too_large and nothing else; the connection
// survives. A frame of exactly 1 MiB is read (and judged as JSON).
func TestTooLarge(t *testing.T) {
	e := start(t, nil)
	cl := e.dial()
	big := make([]byte, protocol.MaxFrameBytes+1)
	copy(big, `{"type":"copilot:send","data":{"conversationId":"c","prompt":"`)
	for i := 60; i < len(big); i++ {
		big[i] = 'a'
	}
	cl.SendRaw(big)
	f := cl.Expect("error")
	if m := dataMap(t, f); m["code"] != protocol.CodeTooLarge {
		t.Fatalf("got %s, want too_large", f.Raw)
	}
	expectQuiet(t, cl)

	// Far over the limit, several times: still one error each.
	huge := bytes.Repeat([]byte("x"), 5<<20)
	cl.SendRaw(huge)
	cl.SendRaw(huge)
	for range 2 {
		if m := dataMap(t, cl.Expect("error")); m["code"] != protocol.CodeTooLarge {
			t.Fatalf("got %v, want too_large", m)
		}
	}
	expectQuiet(t, cl)

	exact := bytes.Repeat([]byte(" "), protocol.MaxFrameBytes)
	copy(exact, `{"type":"ping"}`)
	cl.SendRaw(exact)
	cl.Expect("pong")
	if n := len(e.agent.openCalls()); n != 0 {
		t.Fatalf("the oversized send reached the agent")
	}
}

func TestBinaryFrame(t *testing.T) {
	e := start(t, nil)
	cl := e.dial()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := cl.Conn.Write(ctx, websocket.MessageBinary, []byte(`{"type":"ping"}`)); err != nil {
		t.Fatal(err)
	}
	f := cl.Expect("error")
	if m := dataMap(t, f); m["code"] != protocol.CodeInvalidMessage {
		t.Fatalf("binary frame: %s", f.Raw)
	}
	expectQuiet(t, cl)
}

func httpStatusOfDial(t *testing.T, url string, header http.Header) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: header})
	if err == nil {
		conn.CloseNow()
		return http.StatusSwitchingProtocols
	}
	if resp == nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	return resp.StatusCode
}

func TestAuth(t *testing.T) {
	const token = "s3cret-token-value"
	e := start(t, func(c *relay.Config) { c.Token = token })
	url := e.srv.URL
	cases := []struct {
		name   string
		url    string
		header http.Header
		want   int
	}{
		{"no token", url, nil, http.StatusUnauthorized},
		{"wrong bearer", url, http.Header{"Authorization": {"Bearer nope"}}, http.StatusUnauthorized},
		{"prefix of the token", url, http.Header{"Authorization": {"Bearer " + token[:5]}}, http.StatusUnauthorized},
		{"token plus more", url, http.Header{"Authorization": {"Bearer " + token + "x"}}, http.StatusUnauthorized},
		{"not bearer", url, http.Header{"Authorization": {"Basic " + token}}, http.StatusUnauthorized},
		{"wrong query", relaytest.WithToken(url, "nope"), nil, http.StatusUnauthorized},
		{"bearer", url, http.Header{"Authorization": {"Bearer " + token}}, http.StatusSwitchingProtocols},
		{"bearer lower case", url, http.Header{"Authorization": {"bearer " + token}}, http.StatusSwitchingProtocols},
		{"query", relaytest.WithToken(url, token), nil, http.StatusSwitchingProtocols},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := httpStatusOfDial(t, tc.url, tc.header); got != tc.want {
				t.Fatalf("status %d, want %d", got, tc.want)
			}
		})
	}
	// A 401 is a plain HTTP answer: no upgrade.
	resp, err := http.Get(e.srv.HTTPURL + "/ws")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("plain GET /ws: %d", resp.StatusCode)
	}
	// The token never reaches the logs, not even inside a URL.
	cl, err := relaytest.DialConn(relaytest.WithToken(url, token), "")
	if err != nil {
		t.Fatal(err)
	}
	cl.CloseNow()
	if strings.Contains(e.logs.all(), token) {
		t.Fatalf("the token was logged:\n%s", e.logs.all())
	}
}

func TestNoTokenMeansNoAuth(t *testing.T) {
	e := start(t, nil)
	if got := httpStatusOfDial(t, e.srv.URL, nil); got != http.StatusSwitchingProtocols {
		t.Fatalf("status %d", got)
	}
}

func TestCrossOrigin(t *testing.T) {
	e := start(t, func(c *relay.Config) { c.OriginPatterns = []string{"app.example.com"} })
	cases := []struct {
		origin string
		want   int
	}{
		{"http://evil.example.com", http.StatusForbidden},
		{"https://app.example.com", http.StatusSwitchingProtocols},
		{e.srv.HTTPURL, http.StatusSwitchingProtocols}, // same origin
	}
	for _, tc := range cases {
		if got := httpStatusOfDial(t, e.srv.URL, http.Header{"Origin": {tc.origin}}); got != tc.want {
			t.Errorf("origin %s: status %d, want %d", tc.origin, got, tc.want)
		}
	}
}

func TestRequiresToken(t *testing.T) {
	cases := map[string]bool{
		"127.0.0.1:7420":    false,
		"127.1.2.3:0":       false,
		"localhost:7420":    false,
		"LOCALHOST:1":       false,
		"[::1]:7420":        false,
		"::1":               false,
		"127.0.0.1":         false,
		":7420":             true,
		"0.0.0.0:7420":      true,
		"[::]:7420":         true,
		"192.168.1.5:7420":  true,
		"example.com:7420":  true,
		"localhost.evil:80": true,
		"":                  true,
	}
	for addr, want := range cases {
		if got := relay.RequiresToken(addr); got != want {
			t.Errorf("RequiresToken(%q) = %v, want %v", addr, got, want)
		}
	}
}

// The heartbeat: inbound messages of any kind keep a connection open;
// outbound ones do not; silence closes it with a clear reason, and drops its
// subscriptions, while the conversation's stream goes on.
func TestHeartbeat(t *testing.T) {
	// 3 s: a connection that sends every 100 ms is closed only if a busy
	// machine holds its writer or the relay's reader that long.
	const timeout = 3 * time.Second
	e := start(t, func(c *relay.Config) { c.HeartbeatTimeout = timeout })

	chatty := e.dial() // sends something every 100 ms, half of it invalid
	silent, _ := e.subscribe("hb")
	sender, _ := e.subscribe("hb")
	// The silent subscriber pings too until the turn's first delta has
	// reached it, and falls silent then: the turn starting and its delta
	// arriving may take longer than a timeout on a busy machine.
	quiet := make(chan struct{})
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for i := 0; ; i++ {
			frame := []byte(`{"type":"ping"}`)
			if i%2 == 0 {
				frame = []byte(`not json`)
			}
			_ = chatty.Conn.Write(context.Background(), websocket.MessageText, frame)
			_ = sender.Conn.Write(context.Background(), websocket.MessageText, []byte(`{"type":"ping"}`))
			select {
			case <-quiet:
			default:
				_ = silent.Conn.Write(context.Background(), websocket.MessageText, []byte(`{"type":"ping"}`))
			}
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()

	// The silent subscriber receives a stream (outbound traffic) and is
	// still closed; the stream is not aborted by it.
	ft := e.startTurn(sender, "hb", "go", nil)
	ft.delta("m1", "first ")
	silent.WaitFor("copilot:delta", nil)
	close(quiet)
	code, reason := silent.WaitClosed()
	if code != relay.CloseHeartbeat || !strings.Contains(reason, "heartbeat") {
		t.Fatalf("closed with %d %q, want %d and a heartbeat reason", code, reason, relay.CloseHeartbeat)
	}
	if ft.Ctx.Err() != nil {
		t.Fatal("a viewer timing out aborted the stream")
	}
	ft.delta("m1", "second")
	ft.finish(nil)
	idle := sender.WaitFor("copilot:idle", nil)
	if dataMap(t, idle)["status"] != "completed" {
		t.Fatalf("idle %s", idle.Raw)
	}

	// The chatty connection outlives more than two timeouts.
	time.Sleep(timeout)
	close(stop)
	<-stopped
	if err := chatty.Err(); err != nil {
		t.Fatalf("a connection sending messages was closed: %v", err)
	}
	sync_(t, chatty)
}

func TestConnectionLimit(t *testing.T) {
	e := start(t, func(c *relay.Config) { c.MaxConnections = 2 })
	a, b := e.dial(), e.dial()
	sync_(t, a)
	sync_(t, b)
	c := e.dial()
	f := c.Expect("error")
	if m := dataMap(t, f); m["code"] != protocol.CodeLimit {
		t.Fatalf("third connection got %s", f.Raw)
	}
	if code, _ := c.WaitClosed(); code != websocket.StatusTryAgainLater {
		t.Fatalf("close code %d", code)
	}
	// The first two are unaffected; when one leaves, a new one fits.
	sync_(t, a)
	b.Close()
	deadline := time.Now().Add(wait)
	for {
		d := e.dial()
		d.Send("ping", nil)
		f := d.Next()
		if f.Type == "pong" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no room after a connection left: %s", f.Raw)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestSubscriptionLimit(t *testing.T) {
	e := start(t, func(c *relay.Config) { c.MaxSubscriptions = 2 })
	cl := e.dial()
	for _, id := range []string{"a", "b"} {
		cl.Send("copilot:subscribe", map[string]any{"conversationId": id})
		cl.Expect("copilot:subscribed")
	}
	cl.Send("copilot:subscribe", map[string]any{"conversationId": "c"})
	f := cl.Expect("error")
	if m := dataMap(t, f); m["code"] != protocol.CodeLimit || m["conversationId"] != "c" {
		t.Fatalf("third subscription got %s", f.Raw)
	}
	// A send to a new conversation would subscribe too.
	cl.Send("copilot:send", map[string]any{"conversationId": "d", "prompt": "hi"})
	if m := dataMap(t, cl.Expect("error")); m["code"] != protocol.CodeLimit {
		t.Fatalf("send over the limit: %v", m)
	}
	// Resubscribing to one it has is fine; unsubscribing makes room.
	cl.Send("copilot:subscribe", map[string]any{"conversationId": "a"})
	cl.Expect("copilot:subscribed")
	cl.Send("copilot:unsubscribe", map[string]any{"conversationId": "b"})
	cl.Send("copilot:subscribe", map[string]any{"conversationId": "c"})
	cl.Expect("copilot:subscribed")
}

// A text frame that is not valid UTF-8 closes the connection with 1007
// (RFC 6455, 8.1; docs/protocol.md, Transport): it is never read as JSON,
// where the invalid bytes would become U+FFFD and two different byte
// strings would name one conversation.
func TestInvalidUTF8Closes1007(t *testing.T) {
	e := start(t, nil)
	cl := e.dial()
	cl.SendRaw([]byte("{\"type\":\"copilot:subscribe\",\"data\":{\"conversationId\":\"ab\xffcd\"}}"))
	code, reason := cl.WaitClosed()
	if code != websocket.StatusInvalidFramePayloadData {
		t.Fatalf("closed with %d %q, want 1007", code, reason)
	}
	if !strings.Contains(reason, "UTF-8") {
		t.Errorf("close reason %q does not say why", reason)
	}
	// Nothing was subscribed: no reply came before the close.
	if f, ok := cl.TryNext(0); ok {
		t.Fatalf("the invalid frame was answered: %s", f.Raw)
	}
	// A binary frame is not text: it keeps its invalid_message answer.
	bin := e.dial()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := bin.Conn.Write(ctx, websocket.MessageBinary, []byte("\xff")); err != nil {
		t.Fatal(err)
	}
	if m := dataMap(t, bin.Expect("error")); m["code"] != protocol.CodeInvalidMessage {
		t.Fatalf("binary frame: %v", m)
	}
}
