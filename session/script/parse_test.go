package script

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// specExample is a script with every kind of step (docs/script-agent.md).
const specExample = `{
  "turns": [
    {
      "match": "deploy",
      "steps": [
        {"delta": "Checking the build... "},
        {"sleep": "200ms"},
        {"tool": {"name": "bash", "arguments": {"command": "make deploy"}, "result": "deployed"}},
        {"delta": "The tool was {{tool}}. "},
        {"ask": {"question": "Which environment?", "choices": ["staging", "prod"], "allowFreeform": true}},
        {"input": {"type": "approval", "prompt": "Run the migration?", "choices": ["Run it", "Skip"]}},
        {"delta": "You said {{answer}}."},
        {"usage": {"model": "gpt-5", "cost": 1, "inputTokens": 1200, "outputTokens": 80,
                   "cacheReadTokens": 300, "cacheWriteTokens": 0,
                   "quotaSnapshots": {"premium_interactions": {"entitlementRequests": 300, "usedRequests": 12, "remainingPercentage": 96, "resetDate": "2026-12-01T00:00:00Z"}}}},
        {"shutdown": {"totalPremiumRequests": 1, "modelMetrics": {"gpt-5": {"requests": {"count": 1, "cost": 1}, "usage": {"inputTokens": 1200, "outputTokens": 80}}}}}
      ]
    },
    {"steps": [{"delta": "Echo: {{prompt}}"}]}
  ]
}`

func TestParseSpecExample(t *testing.T) {
	s := mustParse(t, specExample)
	if s.Name != "test.json" || len(s.Turns) != 2 {
		t.Fatalf("got name %q and %d turns, want test.json and 2", s.Name, len(s.Turns))
	}
	deploy := s.Turns[0]
	if !deploy.HasMatch || deploy.Match != "deploy" || len(deploy.Steps) != 9 {
		t.Fatalf("turn 1: match %q (has %v), %d steps", deploy.Match, deploy.HasMatch, len(deploy.Steps))
	}
	if got := deploy.Steps[1].(SleepStep).Duration; got != 200*time.Millisecond {
		t.Errorf("sleep = %v, want 200ms", got)
	}
	tool := deploy.Steps[2].(ToolStep)
	if tool.Name != "bash" || string(tool.Arguments) != `{"command":"make deploy"}` || tool.Result != "deployed" {
		t.Errorf("tool = %+v (arguments %s)", tool, tool.Arguments)
	}
	ask := deploy.Steps[4].(AskStep)
	if ask.Question != "Which environment?" || strings.Join(ask.Choices, "|") != "staging|prod" || ask.AllowFreeform == nil || !*ask.AllowFreeform {
		t.Errorf("ask = %+v", ask)
	}
	in := deploy.Steps[5].(InputStep)
	if in.Type != "approval" || in.Prompt != "Run the migration?" || len(in.Choices) != 2 {
		t.Errorf("input = %+v", in)
	}
	u := deploy.Steps[7].(UsageStep).Usage
	if u.Model != "gpt-5" || *u.Cost != 1 || *u.InputTokens != 1200 || *u.OutputTokens != 80 || *u.CacheReadTokens != 300 || *u.CacheWriteTokens != 0 {
		t.Errorf("usage = %+v", u)
	}
	var quota map[string]map[string]any
	if err := json.Unmarshal(u.QuotaSnapshots, &quota); err != nil || quota["premium_interactions"]["usedRequests"] != 12.0 {
		t.Errorf("quotaSnapshots = %s (%v)", u.QuotaSnapshots, err)
	}
	sd := deploy.Steps[8].(ShutdownStep).Shutdown
	if sd.TotalPremiumRequests != 1 || !json.Valid(sd.ModelMetrics) || !strings.Contains(string(sd.ModelMetrics), `"gpt-5"`) {
		t.Errorf("shutdown = %+v", sd)
	}
	if s.Turns[1].HasMatch {
		t.Errorf("turn 2 has a match, want a catch-all")
	}
}

// TestParseErrors checks that every kind of bad script is refused with a
// message that names the file and, when inside one, the turn and the step.
func TestParseErrors(t *testing.T) {
	// wrap puts one step into turn 2 (match "deploy") at step 3.
	wrap := func(step string) string {
		return `{"turns": [
  {"match": "first", "steps": [{"delta": "x"}]},
  {"match": "deploy", "steps": [{"delta": "a"}, {"sleep": "1ms"}, ` + step + `]}
]}`
	}
	const at = `test.json: turn 2 ("deploy"), step 3: `
	cases := []struct {
		name, src, want string
	}{
		{"unknown step key", wrap(`{"dleta": "hi"}`), at + `unknown step key "dleta" (did you mean "delta"?); a step is one of delta, sleep, tool, ask, input, usage, error, shutdown`},
		{"step with two keys", wrap(`{"delta": "hi", "sleep": "1s"}`), at + `a step has exactly one key, this one has 2: "delta", "sleep"`},
		{"step with no key", wrap(`{}`), at + `empty step: a step has exactly one key (delta, sleep, tool, ask, input, usage, error, shutdown)`},
		{"step given twice", wrap(`{"delta": "a", "delta": "b"}`), at + `key "delta" is given twice`},
		{"step not an object", wrap(`"hello"`), at + `a step must be an object with one key (delta, sleep, tool, ask, input, usage, error, shutdown), not a string`},
		{"bad duration", wrap(`{"sleep": "2 seconds"}`), at + `sleep: bad duration "2 seconds": want a number with a unit, such as "200ms" or "1.5s"`},
		{"duration without unit", wrap(`{"sleep": "200"}`), at + `sleep: bad duration "200": want a number with a unit, such as "200ms" or "1.5s"`},
		{"negative duration", wrap(`{"sleep": "-1s"}`), at + `sleep: bad duration "-1s": it must not be negative`},
		{"duration as number", wrap(`{"sleep": 200}`), at + `"sleep" must be a string, not a number (a duration such as "200ms" or "1.5s")`},
		{"delta not a string", wrap(`{"delta": 42}`), at + `"delta" must be a string, not a number`},
		{"delta null", wrap(`{"delta": null}`), at + `"delta" must be a string, not null`},
		{"tool without name", wrap(`{"tool": {"arguments": {}}}`), at + `tool: no "name"`},
		{"tool with empty name", wrap(`{"tool": {"name": ""}}`), at + `tool: "name" is empty`},
		{"tool name not a string", wrap(`{"tool": {"name": ["bash"]}}`), at + `tool: "name" must be a string, not a list`},
		{"tool not an object", wrap(`{"tool": "bash"}`), at + `"tool" must be an object, not a string`},
		{"tool arguments not an object", wrap(`{"tool": {"name": "bash", "arguments": "ls"}}`), at + `tool: "arguments" must be an object, not a string`},
		{"tool result not a string", wrap(`{"tool": {"name": "bash", "result": 3}}`), at + `tool: "result" must be a string, not a number`},
		{"tool unknown key", wrap(`{"tool": {"name": "bash", "reslt": "ok"}}`), at + `unknown key "reslt" in "tool" (did you mean "result"?); its keys are "name", "arguments", "result", "write", "remove", "run"`},
		{"ask choices not a list", wrap(`{"ask": {"question": "?", "choices": "a,b"}}`), at + `ask: "choices" must be a list of strings, not a string`},
		{"ask choice not a string", wrap(`{"ask": {"question": "?", "choices": ["a", 2]}}`), at + `ask: "choices[1]" must be a string, not a number`},
		{"ask allowFreeform not a boolean", wrap(`{"ask": {"question": "?", "allowFreeform": "yes"}}`), at + `ask: "allowFreeform" must be true or false, not a string`},
		{"ask question not a string", wrap(`{"ask": {"question": 1}}`), at + `ask: "question" must be a string, not a number`},
		{"ask unknown key", wrap(`{"ask": {"question": "?", "choice": ["a"]}}`), at + `unknown key "choice" in "ask" (did you mean "choices"?); its keys are "question", "choices", "allowFreeform"`},
		{"input unknown key", wrap(`{"input": {"type": "text", "question": "?"}}`), at + `unknown key "question" in "input"; its keys are "type", "prompt", "choices"`},
		{"input type not a string", wrap(`{"input": {"type": true}}`), at + `input: "type" must be a string, not true or false`},
		{"usage tokens not whole", wrap(`{"usage": {"inputTokens": 1.5}}`), at + `usage: "inputTokens" must be a whole number, not 1.5`},
		{"usage cost a string", wrap(`{"usage": {"cost": "1"}}`), at + `usage: "cost" must be a number, not a string`},
		{"usage quota a list", wrap(`{"usage": {"quotaSnapshots": []}}`), at + `usage: "quotaSnapshots" must be an object, not a list`},
		{"usage unknown key", wrap(`{"usage": {"modle": "gpt-5"}}`), at + `unknown key "modle" in "usage" (did you mean "model"?); its keys are "model", "cost", "inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens", "quotaSnapshots", "totalNanoAiu", "aiCreditsStatus"`},
		{"shutdown metrics a string", wrap(`{"shutdown": {"modelMetrics": "none"}}`), at + `shutdown: "modelMetrics" must be an object, not a string`},
		{"shutdown total a string", wrap(`{"shutdown": {"totalPremiumRequests": "1"}}`), at + `shutdown: "totalPremiumRequests" must be a number, not a string`},
		{"error empty", wrap(`{"error": ""}`), at + `"error" needs the message the turn fails with`},
		{"error not a string", wrap(`{"error": {"message": "x"}}`), at + `"error" must be a string, not an object`},

		// Problems of a turn.
		{"unknown turn key", `{"turns": [{"match": "a", "steps": [{"delta": "x"}], "stesp": []}]}`, `test.json: turn 1 ("a"): unknown key "stesp" in a turn (did you mean "steps"?); its keys are "match", "steps"`},
		{"turn without match", `{"turns": [{"steps": [{"delta": "x"}]}, {"steps": []}]}`, `test.json: turn 2: no steps: "steps" is empty`},
		{"turn without steps", `{"turns": [{"match": "a"}]}`, `test.json: turn 1 ("a"): no "steps"`},
		{"steps not a list", `{"turns": [{"match": "a", "steps": {"delta": "x"}}]}`, `test.json: turn 1 ("a"): "steps" must be a list, not an object`},
		{"match not a string", `{"turns": [{"match": 7, "steps": [{"delta": "x"}]}]}`, `test.json: turn 1: "match" must be a string, not a number`},
		{"turn not an object", `{"turns": [["delta"]]}`, `test.json: turn 1: a turn must be an object, not a list`},

		// Problems of the whole file.
		{"invalid JSON", "{\n  \"turns\": [\n    {\"steps\": [{\"delta\": \"x\"},]}\n  ]\n}", `test.json: line 3, column 31: invalid JSON: invalid character ']' looking for beginning of value`},
		{"unterminated", `{"turns": [`, `test.json: line 1, column 11: invalid JSON: unexpected end of JSON input`},
		{"trailing data", `{"turns": [{"steps": [{"delta": "x"}]}]} {}`, `test.json: line 1, column 42: invalid JSON: invalid character '{' after top-level value`},
		{"empty file", "  \n", `test.json: invalid JSON: the file is empty`},
		{"not an object", `[{"steps": []}]`, `test.json: the script must be an object, not a list`},
		{"unknown top-level key", `{"turns": [{"steps": [{"delta": "x"}]}], "name": "demo"}`, `test.json: unknown key "name" in the script; its keys are "turns"`},
		{"misspelled turns", `{"turn": []}`, `test.json: unknown key "turn" in the script (did you mean "turns"?); its keys are "turns"`},
		{"no turns key", `{}`, `test.json: no "turns": a script is {"turns": [{"match": "...", "steps": [...]}, ...]}`},
		{"turns empty", `{"turns": []}`, `test.json: no turns: "turns" is empty`},
		{"turns not a list", `{"turns": {"steps": []}}`, `test.json: "turns" must be a list, not an object`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse("test.json", []byte(tc.src))
			if err == nil {
				t.Fatalf("Parse succeeded with %d turns, want error %q", len(s.Turns), tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("error\n got: %s\nwant: %s", err, tc.want)
			}
			var pe *ParseError
			if !errors.As(err, &pe) || pe.File != "test.json" {
				t.Errorf("error %T is not a *ParseError naming the file", err)
			}
		})
	}
}

func TestParseErrorFields(t *testing.T) {
	_, err := Parse("demo.json", []byte(`{"turns": [{"steps": [{"delta": "x"}]}, {"match": "deploy", "steps": [{"delta": "a"}, {"sleep": "1s"}, {"dleta": "b"}]}]}`))
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is not a *ParseError", err, err)
	}
	if pe.File != "demo.json" || pe.Turn != 2 || !pe.HasMatch || pe.Match != "deploy" || pe.Step != 3 || pe.Line != 0 {
		t.Errorf("ParseError = %+v", pe)
	}
	const want = `demo.json: turn 2 ("deploy"), step 3: unknown step key "dleta" (did you mean "delta"?)`
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q does not start with %q", err, want)
	}
}

// TestParseLeavesRequestsToTheRelay: a malformed ask or input request is the
// relay's to judge (docs/script-agent.md), so a script can reproduce an agent's
// mistakes.
func TestParseLeavesRequestsToTheRelay(t *testing.T) {
	s := mustParse(t, `{"turns": [{"steps": [
		{"input": {"type": "choice", "prompt": "Pick one"}},
		{"input": {"type": "approval", "prompt": "Three?", "choices": ["a", "b", "c"]}},
		{"input": {"type": "bogus"}},
		{"input": {}},
		{"ask": {}},
		{"ask": {"question": "", "choices": [], "allowFreeform": false}},
		{"ask": {"question": "q", "choices": null, "allowFreeform": null}}
	]}]}`)
	steps := s.Turns[0].Steps
	if in := steps[0].(InputStep); in.Type != "choice" || in.Choices != nil {
		t.Errorf("choice without choices = %+v", in)
	}
	if in := steps[2].(InputStep); in.Type != "bogus" {
		t.Errorf("bogus type = %+v", in)
	}
	if a := steps[5].(AskStep); a.AllowFreeform == nil || *a.AllowFreeform || a.Choices == nil || len(a.Choices) != 0 {
		t.Errorf("explicit empty ask = %+v", a)
	}
	if a := steps[6].(AskStep); a.AllowFreeform != nil || a.Choices != nil {
		t.Errorf("null fields should read as absent: %+v", a)
	}
}

func TestParseAcceptsByteOrderMarkAndNulls(t *testing.T) {
	s := mustParse(t, "\xef\xbb\xbf"+`{"turns": [{"match": null, "steps": [{"tool": {"name": "t", "arguments": null, "result": null}}, {"usage": {"cost": null}}]}]}`)
	if s.Turns[0].HasMatch {
		t.Errorf("a null match should read as no match")
	}
	if tool := s.Turns[0].Steps[0].(ToolStep); tool.Arguments != nil || tool.Result != "" {
		t.Errorf("tool = %+v", tool)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	if err := os.WriteFile(good, []byte(specExample), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Load(good)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if s.Name != good || len(s.Turns) != 2 {
		t.Errorf("Load: name %q, %d turns", s.Name, len(s.Turns))
	}

	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"turns": [{"steps": [{"sleep": "soon"}]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Load(bad)
	if err == nil || !strings.HasPrefix(err.Error(), bad+": turn 1, step 1: sleep: bad duration") {
		t.Errorf("Load(bad) = %v", err)
	}

	_, err = Load(filepath.Join(dir, "missing.json"))
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("Load(missing) = %v, want a not-exist error naming the file", err)
	}
}
