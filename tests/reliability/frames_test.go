package reliability

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay/relaytest"
)

// TestChatReplaysBigMessage: a turn of 48 deltas of 64 KiB ends with a
// 3 MiB copilot:message, and a 1.5 MiB delta follows. `pilotdesk chat`,
// which reads frames of at most 1 MiB + 64 KiB, used to drop the
// connection on such a frame and resume into it forever (76 reconnects in
// 40 s, /quit ignored). Now no frame over 1 MiB leaves the relay: the chat
// replays the conversation, shows all of its text once, never reconnects,
// and quits on /quit.
func TestChatReplaysBigMessage(t *testing.T) {
	t.Parallel()
	const token = "big-frames-token-16180339"
	chunk := strings.Repeat("x", 64<<10)
	var steps []any
	for i := range 48 {
		steps = append(steps, map[string]any{"delta": chunk[:len(chunk)-9] + fmt.Sprintf("chunk-%02d\n", i)})
	}
	long := strings.Repeat("<é>", 3<<19/4) // grows when escaped the old way
	steps = append(steps, map[string]any{"delta": "LONG-DELTA-START " + long + " END-OF-BIG-MESSAGE\n"})
	script := writeScript(t, map[string]any{"turns": []any{map[string]any{"steps": steps}}})
	p := startRelay(t, nil, "--agent", "script", "--script", script, "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--token", token)

	id := uuid.NewString()
	cl := relaytest.Dial(t, p.URL, token)
	cl.Send("copilot:send", map[string]any{"conversationId": id, "prompt": "write a lot"})
	idle, frames := cl.WaitForCollect("copilot:idle", nil)
	if idle.Field("status") != protocol.StatusCompleted {
		t.Fatalf("turn: %s", idle.Raw)
	}
	truncated := false
	for _, f := range append(frames, idle) {
		if len(f.Raw) > protocol.MaxFrameBytes {
			t.Fatalf("a %s frame of %d bytes left the relay", f.Type, len(f.Raw))
		}
		if f.Type == "copilot:message" && f.Field("truncated") == true {
			truncated = true
		}
	}
	if !truncated {
		t.Errorf("the 4.5 MB message was not marked truncated")
	}

	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, pilotdesk(t), "chat", "--connect", p.URL, "--token", token, "--conversation", id)
	cmd.Env = append(cmd.Environ(), "NO_COLOR=1", "TERM=dumb")
	cmd.Stdin = strings.NewReader("/quit\n")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("pilotdesk chat did not quit within %s (a reconnect loop?); output ends:\n%s\nstderr:\n%s", timeout, tail(out.String(), 2000), tail(errOut.String(), 2000))
	}
	if err != nil {
		t.Fatalf("pilotdesk chat: %v; stderr:\n%s", err, tail(errOut.String(), 2000))
	}
	text := out.String()
	for _, want := range []string{"chunk-00", "chunk-47", "LONG-DELTA-START", "END-OF-BIG-MESSAGE"} {
		if n := strings.Count(text, want); n != 1 {
			t.Errorf("the replay shows %q %d times, want once", want, n)
		}
	}
	if strings.Count(text, "x") < 48*60000 {
		t.Errorf("the replay shows %d x's, want the whole message", strings.Count(text, "x"))
	}
	for _, bad := range []string{"dropped", "reconnect", "Reconnected"} {
		if strings.Contains(text+errOut.String(), bad) {
			t.Errorf("the chat says %q: it lost the connection", bad)
		}
	}
	t.Logf("pilotdesk chat replayed %d bytes of output and quit in %s", len(text), time.Since(start).Round(time.Millisecond))
}

// tail is the end of s, at most n bytes.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
