package script

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/pilotdesk/pilotdesk/session"
)

// Script is a parsed scenario file. It is read-only once parsed, so one
// Script serves every session of an Agent at the same time.
type Script struct {
	// Name is the file name errors and replies refer to.
	Name  string
	Turns []Turn
}

// Turn is the reply to every prompt its Match matches.
type Turn struct {
	// Match is a case-insensitive substring of the prompt; when HasMatch is
	// false the turn matches every prompt.
	Match    string
	HasMatch bool
	Steps    []Step
}

// matches reports whether the turn replies to a prompt already lower-cased.
// The match is lowered here rather than at parse time so that a Script
// built by hand behaves the same.
func (t *Turn) matches(lowerPrompt string) bool {
	return !t.HasMatch || strings.Contains(lowerPrompt, strings.ToLower(t.Match))
}

// Step is one step of a turn: DeltaStep, SleepStep, ToolStep, AskStep,
// InputStep, UsageStep, ShutdownStep or ErrorStep.
type Step interface{ stepKey() string }

// DeltaStep streams Text (after substitution) as part of the turn's message.
type DeltaStep struct{ Text string }

// SleepStep pauses the turn; an abort ends the pause at once.
type SleepStep struct{ Duration time.Duration }

// ToolStep runs a pretend tool: it asks the host for permission and reports
// Result when the call is allowed.
type ToolStep struct {
	Name      string
	Arguments json.RawMessage // an object, or nil
	Result    string

	// At most one effect on the conversation's folder, carried out only
	// when the call is allowed: Write creates or replaces a file, Remove
	// deletes one, Run runs a shell command whose output is the result.
	Write  *WriteEffect
	Remove string
	Run    string
}

// WriteEffect is a tool step's "write": a file's path, relative to the
// folder, and its whole content.
type WriteEffect struct {
	Path    string
	Content string
}

// AskStep is an ask_user request. Its contents are passed on as written.
type AskStep struct {
	Question      string
	Choices       []string
	AllowFreeform *bool
}

// InputStep is one of the typed input requests. Its contents are
// passed on as written, so a script can reproduce an agent's malformed
// request.
type InputStep struct {
	Type    string
	Prompt  string
	Choices []string
}

// UsageStep reports usage (copilot:quota).
type UsageStep struct{ Usage session.Usage }

// ShutdownStep reports the end of the agent session (copilot:shutdown).
type ShutdownStep struct{ Shutdown session.Shutdown }

// ErrorStep fails the turn with Message.
type ErrorStep struct{ Message string }

func (DeltaStep) stepKey() string    { return "delta" }
func (SleepStep) stepKey() string    { return "sleep" }
func (ToolStep) stepKey() string     { return "tool" }
func (AskStep) stepKey() string      { return "ask" }
func (InputStep) stepKey() string    { return "input" }
func (UsageStep) stepKey() string    { return "usage" }
func (ShutdownStep) stepKey() string { return "shutdown" }
func (ErrorStep) stepKey() string    { return "error" }

// stepKeys are the keys a step may have, in the order docs/script-agent.md
// lists them.
var stepKeys = []string{"delta", "sleep", "tool", "ask", "input", "usage", "error", "shutdown"}

// ParseError is a script that was refused at load. It names the file and,
// when the problem is inside one, the turn (1-based, with its match) and the
// step (1-based); invalid JSON carries the line and column instead.
type ParseError struct {
	File         string
	Line, Column int // 1-based position of invalid JSON; 0 otherwise
	Turn         int // 1-based; 0 when the problem is not inside a turn
	Match        string
	HasMatch     bool // the turn has a match (Match may be empty)
	Step         int  // 1-based; 0 when the problem is not inside a step
	Err          error
}

func (e *ParseError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	var where []string
	if e.Line > 0 {
		where = append(where, fmt.Sprintf("line %d, column %d", e.Line, e.Column))
	}
	if e.Turn > 0 {
		t := fmt.Sprintf("turn %d", e.Turn)
		if e.HasMatch {
			t += fmt.Sprintf(" (%q)", e.Match)
		}
		where = append(where, t)
	}
	if e.Step > 0 {
		where = append(where, fmt.Sprintf("step %d", e.Step))
	}
	if len(where) > 0 {
		b.WriteString(": ")
		b.WriteString(strings.Join(where, ", "))
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *ParseError) Unwrap() error { return e.Err }

// Load reads and parses the script file at path. Errors name the file as
// path was given.
func Load(path string) (*Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read script: %w", err)
	}
	return Parse(path, data)
}

// Parse parses a script (docs/script-agent.md). name is the file name its errors
// and replies use. Every problem the format can have is reported here, so a
// script that parses plays without surprises; only the contents of ask and
// input steps are left for the relay to judge.
func Parse(name string, data []byte) (*Script, error) {
	fail := func(err error) error { return &ParseError{File: name, Err: err} }
	// Editors on Windows like to start a UTF-8 file with a byte order mark.
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))

	// Check the syntax of the whole document first: encoding/json reports
	// the byte offset, which becomes a line and column a person can find.
	if err := syntaxCheck(data); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			line, col := position(data, syn.Offset)
			return nil, &ParseError{File: name, Line: line, Column: col, Err: fmt.Errorf("invalid JSON: %s", trimJSONPrefix(syn.Error()))}
		}
		return nil, fail(fmt.Errorf("invalid JSON: %s", trimJSONPrefix(err.Error())))
	}

	top, err := members(data, "the script", "turns")
	if err != nil {
		return nil, fail(err)
	}
	rawTurns, ok := top["turns"]
	if !ok {
		return nil, fail(errors.New(`no "turns": a script is {"turns": [{"match": "...", "steps": [...]}, ...]}`))
	}
	if k := kindOf(rawTurns); k != kindList {
		return nil, fail(fmt.Errorf(`"turns" must be a list, not %s`, k))
	}
	var turns []json.RawMessage
	if err := json.Unmarshal(rawTurns, &turns); err != nil {
		return nil, fail(fmt.Errorf(`"turns": %w`, err))
	}
	if len(turns) == 0 {
		return nil, fail(errors.New(`no turns: "turns" is empty`))
	}

	s := &Script{Name: name, Turns: make([]Turn, 0, len(turns))}
	for i, raw := range turns {
		t, err := parseTurn(raw)
		if err != nil {
			pe := &ParseError{File: name, Turn: i + 1, Match: t.Match, HasMatch: t.HasMatch, Err: err}
			var se *stepError
			if errors.As(err, &se) {
				pe.Step, pe.Err = se.step, se.err
			}
			return nil, pe
		}
		s.Turns = append(s.Turns, t)
	}
	return s, nil
}

// stepError carries the 1-based index of the step a turn error is about.
type stepError struct {
	step int
	err  error
}

func (e *stepError) Error() string { return fmt.Sprintf("step %d: %v", e.step, e.err) }

// parseTurn returns the turn's match even when it fails, so the error can
// name the turn by it.
func parseTurn(raw json.RawMessage) (Turn, error) {
	var t Turn
	if k := kindOf(raw); k != kindObject {
		return t, fmt.Errorf("a turn must be an object, not %s", k)
	}
	keys, m, err := orderedMembers(raw)
	if err != nil {
		return t, err
	}
	// The match first, so that every later error can name the turn by it.
	if v, ok := m["match"]; ok && kindOf(v) != kindNull {
		if t.Match, err = stringValue(v, "match"); err != nil {
			return t, err
		}
		t.HasMatch = true
	}
	if err := checkKeys(keys, "a turn", "match", "steps"); err != nil {
		return t, err
	}
	rawSteps, ok := m["steps"]
	if !ok || kindOf(rawSteps) == kindNull {
		return t, errors.New(`no "steps"`)
	}
	if k := kindOf(rawSteps); k != kindList {
		return t, fmt.Errorf(`"steps" must be a list, not %s`, k)
	}
	var steps []json.RawMessage
	if err := json.Unmarshal(rawSteps, &steps); err != nil {
		return t, fmt.Errorf(`"steps": %w`, err)
	}
	if len(steps) == 0 {
		return t, errors.New(`no steps: "steps" is empty`)
	}
	t.Steps = make([]Step, 0, len(steps))
	for j, rs := range steps {
		st, err := parseStep(rs)
		if err != nil {
			return t, &stepError{step: j + 1, err: err}
		}
		t.Steps = append(t.Steps, st)
	}
	return t, nil
}

func parseStep(raw json.RawMessage) (Step, error) {
	if k := kindOf(raw); k != kindObject {
		return nil, fmt.Errorf("a step must be an object with one key (%s), not %s", strings.Join(stepKeys, ", "), k)
	}
	keys, m, err := orderedMembers(raw)
	if err != nil {
		return nil, err
	}
	switch len(keys) {
	case 0:
		return nil, fmt.Errorf("empty step: a step has exactly one key (%s)", strings.Join(stepKeys, ", "))
	case 1:
	default:
		return nil, fmt.Errorf("a step has exactly one key, this one has %d: %s", len(keys), quoteAll(keys))
	}
	key := keys[0]
	v := m[key]
	switch key {
	case "delta":
		text, err := stringValue(v, "delta")
		return DeltaStep{Text: text}, err
	case "sleep":
		return parseSleep(v)
	case "tool":
		return parseTool(v)
	case "ask":
		return parseAsk(v)
	case "input":
		return parseInput(v)
	case "usage":
		return parseUsage(v)
	case "shutdown":
		return parseShutdown(v)
	case "error":
		text, err := stringValue(v, "error")
		if err == nil && text == "" {
			err = errors.New(`"error" needs the message the turn fails with`)
		}
		return ErrorStep{Message: text}, err
	}
	msg := fmt.Sprintf("unknown step key %q", key)
	if near := nearest(key, stepKeys); near != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", near)
	}
	return nil, fmt.Errorf("%s; a step is one of %s", msg, strings.Join(stepKeys, ", "))
}

func parseSleep(v json.RawMessage) (Step, error) {
	text, err := stringValue(v, "sleep")
	if err != nil {
		return nil, fmt.Errorf(`%w (a duration such as "200ms" or "1.5s")`, err)
	}
	d, err := time.ParseDuration(text)
	if err != nil {
		return nil, fmt.Errorf(`sleep: bad duration %q: want a number with a unit, such as "200ms" or "1.5s"`, text)
	}
	if d < 0 {
		return nil, fmt.Errorf("sleep: bad duration %q: it must not be negative", text)
	}
	return SleepStep{Duration: d}, nil
}

func parseTool(v json.RawMessage) (Step, error) {
	m, err := members(v, `"tool"`, "name", "arguments", "result", "write", "remove", "run")
	if err != nil {
		return nil, err
	}
	var t ToolStep
	raw, ok := m["name"]
	if !ok || kindOf(raw) == kindNull {
		return nil, errors.New(`tool: no "name"`)
	}
	if t.Name, err = stringValue(raw, "name"); err != nil {
		return nil, fmt.Errorf("tool: %w", err)
	}
	if t.Name == "" {
		return nil, errors.New(`tool: "name" is empty`)
	}
	f := &fields{m: m, where: "tool"}
	t.Arguments = field(f, "arguments", optionalObject)
	t.Result = field(f, "result", optionalString)
	t.Write = field(f, "write", optionalWrite)
	t.Remove = field(f, "remove", optionalString)
	t.Run = field(f, "run", optionalString)
	if f.err != nil {
		return nil, f.err
	}
	n := 0
	for _, set := range []bool{t.Write != nil, t.Remove != "", t.Run != ""} {
		if set {
			n++
		}
	}
	if n > 1 {
		return nil, errors.New(`tool: at most one of "write", "remove" and "run"`)
	}
	return t, nil
}

// optionalWrite reads a tool step's "write", which needs a path.
func optionalWrite(m map[string]json.RawMessage, key string) (*WriteEffect, error) {
	raw, ok := m[key]
	if !ok || kindOf(raw) == kindNull {
		return nil, nil
	}
	wm, err := members(raw, `"write"`, "path", "content")
	if err != nil {
		return nil, err
	}
	f := &fields{m: wm, where: "write"}
	w := &WriteEffect{Path: field(f, "path", optionalString), Content: field(f, "content", optionalString)}
	if f.err == nil && w.Path == "" {
		f.err = errors.New(`write: no "path"`)
	}
	return checked(f, w)
}

// parseAsk checks only the types of the fields (each must fit the request);
// whether the request makes sense is the relay's judgement.
func parseAsk(v json.RawMessage) (Step, error) {
	f, err := stepFields(v, "ask", "question", "choices", "allowFreeform")
	if err != nil {
		return nil, err
	}
	return checked[Step](f, AskStep{
		Question:      field(f, "question", optionalString),
		Choices:       field(f, "choices", optionalStrings),
		AllowFreeform: field(f, "allowFreeform", optionalBool),
	})
}

// parseInput, like parseAsk, checks types only: an unknown type or a choice
// without choices reaches the relay as written.
func parseInput(v json.RawMessage) (Step, error) {
	f, err := stepFields(v, "input", "type", "prompt", "choices")
	if err != nil {
		return nil, err
	}
	return checked[Step](f, InputStep{
		Type:    field(f, "type", optionalString),
		Prompt:  field(f, "prompt", optionalString),
		Choices: field(f, "choices", optionalStrings),
	})
}

func parseUsage(v json.RawMessage) (Step, error) {
	f, err := stepFields(v, "usage", "model", "cost", "inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens", "quotaSnapshots", "totalNanoAiu", "aiCreditsStatus")
	if err != nil {
		return nil, err
	}
	return checked[Step](f, UsageStep{Usage: session.Usage{
		Model:            field(f, "model", optionalString),
		Cost:             field(f, "cost", optionalNumber),
		InputTokens:      field(f, "inputTokens", optionalInteger),
		OutputTokens:     field(f, "outputTokens", optionalInteger),
		CacheReadTokens:  field(f, "cacheReadTokens", optionalInteger),
		CacheWriteTokens: field(f, "cacheWriteTokens", optionalInteger),
		QuotaSnapshots:   field(f, "quotaSnapshots", optionalObject),
		NanoAIU:          field(f, "totalNanoAiu", optionalNumber),
		AICreditsStatus:  field(f, "aiCreditsStatus", optionalString),
	}})
}

func parseShutdown(v json.RawMessage) (Step, error) {
	f, err := stepFields(v, "shutdown", "totalPremiumRequests", "modelMetrics", "totalNanoAiu")
	if err != nil {
		return nil, err
	}
	var s session.Shutdown
	if total := field(f, "totalPremiumRequests", optionalNumber); total != nil {
		s.TotalPremiumRequests = *total
	}
	s.ModelMetrics = field(f, "modelMetrics", optionalObject)
	s.NanoAIU = field(f, "totalNanoAiu", optionalNumber)
	return checked[Step](f, ShutdownStep{Shutdown: s})
}

// fields reads the members of one object of a script in a row: the first
// error is kept, with where it is ("ask", "write") before it, and every
// read after it gives the zero value, so that a parser checks once, at
// the end (checked), and the error is the first field's in its order.
type fields struct {
	m     map[string]json.RawMessage
	where string
	err   error
}

// stepFields checks that a step's value is an object of the keys allowed,
// and returns its fields; where is the step's key.
func stepFields(v json.RawMessage, where string, allowed ...string) (*fields, error) {
	m, err := members(v, `"`+where+`"`, allowed...)
	if err != nil {
		return nil, err
	}
	return &fields{m: m, where: where}, nil
}

// field reads f's key with get, one of the optional* readers.
func field[T any](f *fields, key string, get func(map[string]json.RawMessage, string) (T, error)) T {
	var v T
	if f.err != nil {
		return v
	}
	v, err := get(f.m, key)
	if err != nil {
		f.err = fmt.Errorf("%s: %w", f.where, err)
	}
	return v
}

// checked returns v, what was read from f, or f's first error.
func checked[T any](f *fields, v T) (T, error) {
	if f.err != nil {
		var zero T
		return zero, f.err
	}
	return v, nil
}
