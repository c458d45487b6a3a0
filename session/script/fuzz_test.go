package script

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/pilotdesk/pilotdesk/assets"
	"github.com/pilotdesk/pilotdesk/session"
)

// FuzzParse: no input makes Parse panic; what it refuses it refuses with a
// ParseError naming the file; what it accepts is well-formed and plays
// without panicking.
func FuzzParse(f *testing.F) {
	f.Add(assets.DemoScript)
	for _, s := range []string{
		specExample,
		`{"turns": [{"steps": [{"delta": "Echo: {{prompt}} {{mode}} {{tool}} {{answer}} {{index}} {{error}}"}]}]}`,
		`{"turns": [{"match": "x", "steps": [{"sleep": "0s"}, {"error": "boom"}]}, {"steps": [{"shutdown": {}}]}]}`,
		`{"turns": [{"steps": [{"input": {"type": "choice", "prompt": "p"}}, {"ask": {}}, {"usage": {"quotaSnapshots": {}}}]}]}`,
		`{"turns": [{"steps": [{"tool": {"name": "t", "arguments": {"a": [1, {"b": null}]}, "result": "r"}}]}]}`,
		"\xef\xbb\xbf" + `{"turns": [{"match": null, "steps": [{"delta": "bom"}]}]}`,
		// Refused.
		``, `null`, `[]`, `{}`, `{"turns": []}`, `{"turns": [{}]}`, `{"turns": [{"steps": []}]}`,
		`{"turns": [{"steps": [{}]}]}`, `{"turns": [{"steps": [{"delta": "a", "sleep": "1s"}]}]}`,
		`{"turns": [{"steps": [{"dleta": "a"}]}]}`, `{"turns": [{"steps": [{"sleep": "soon"}]}]}`,
		`{"turns": [{"steps": [{"sleep": "-5ms"}]}]}`, `{"turns": [{"steps": [{"tool": {}}]}]}`,
		`{"turns": [{"steps": [{"usage": {"inputTokens": 1e400}}]}]}`, `{"turns": [{"steps": [{"usage": {"cost": 1e400}}]}]}`,
		`{"turns": [{"steps": [{"delta": "a", "delta": "b"}]}]}`, `{"turns": [{"steps": [{"delta": "x"}]}]} trailing`,
		`{"turns": [{"steps": [{"delta": "\ud800"}]}]}`, "{\"turns\": [{\"steps\": [{\"delta\": \"\xff\"}]}]}",
		`{"turns": [{"steps": [` + strings.Repeat(`[`, 200) + strings.Repeat(`]`, 200) + `]}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz.json", data)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.File != "fuzz.json" || !strings.HasPrefix(err.Error(), "fuzz.json: ") {
				t.Fatalf("error %q (%T) does not name the file", err, err)
			}
			if s != nil {
				t.Fatal("a refused script came back with a value")
			}
			return
		}
		checkWellFormed(t, s)
		again, err := Parse("fuzz.json", data)
		if err != nil || !reflect.DeepEqual(s, again) {
			t.Fatalf("parsing twice differs: %v", err)
		}
		playEveryTurn(t, s)
	})
}

func checkWellFormed(t *testing.T, s *Script) {
	t.Helper()
	if len(s.Turns) == 0 {
		t.Fatal("accepted a script with no turns")
	}
	for i, turn := range s.Turns {
		if len(turn.Steps) == 0 {
			t.Fatalf("turn %d: accepted with no steps", i+1)
		}
		for j, st := range turn.Steps {
			switch st := st.(type) {
			case SleepStep:
				if st.Duration < 0 {
					t.Fatalf("turn %d step %d: negative sleep", i+1, j+1)
				}
			case ToolStep:
				if st.Name == "" || (st.Arguments != nil && !isObject(st.Arguments)) {
					t.Fatalf("turn %d step %d: tool %+v", i+1, j+1, st)
				}
			case UsageStep:
				if st.Usage.QuotaSnapshots != nil && !isObject(st.Usage.QuotaSnapshots) {
					t.Fatalf("turn %d step %d: quota %s", i+1, j+1, st.Usage.QuotaSnapshots)
				}
			case ShutdownStep:
				if st.Shutdown.ModelMetrics != nil && !isObject(st.Shutdown.ModelMetrics) {
					t.Fatalf("turn %d step %d: metrics %s", i+1, j+1, st.Shutdown.ModelMetrics)
				}
			case ErrorStep:
				if st.Message == "" {
					t.Fatalf("turn %d step %d: empty error", i+1, j+1)
				}
			case DeltaStep, AskStep, InputStep:
			default:
				t.Fatalf("turn %d step %d: step %T", i+1, j+1, st)
			}
		}
	}
}

func isObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && m != nil
}

// playEveryTurn plays each turn against a fake host that answers everything,
// with pauses recorded instead of waited for.
func playEveryTurn(t *testing.T, s *Script) {
	t.Helper()
	a := New(s).(*Agent)
	a.sleep = (&sleepRecorder{}).sleep
	for _, turn := range s.Turns {
		host := newFakeHost("plan")
		host.answer = func(context.Context, session.InputRequest) (session.Answer, error) {
			return session.Answer{Text: "ok", Index: 0}, nil
		}
		sess, err := a.Open(context.Background(), "fuzz", session.OpenOptions{}, host)
		if err != nil {
			t.Fatal(err)
		}
		err = sess.Run(context.Background(), session.Turn{Prompt: turn.Match})
		events, _, _ := host.recorded()
		if err != nil {
			continue // an error step
		}
		if text := strings.Join(deltasOf(events), ""); text != "" {
			last, ok := events[len(events)-1].(session.Message)
			if !ok || last.Content != text {
				t.Fatalf("a completed turn did not end with its whole message")
			}
		}
	}
}
