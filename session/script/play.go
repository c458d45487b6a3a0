// Package script is the scripted agent (docs/script-agent.md):
// a backend that plays scenarios from a JSON file instead of calling a model.
// It is the offline demo, the engine of deterministic end-to-end tests and a
// way to reproduce a bug report, so it goes through exactly the relay paths
// the Copilot backend uses: tool calls ask Host.Permission, questions go
// through Host.Ask, usage and shutdown are events.
package script

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/pilotdesk/pilotdesk/internal/ctxtime"
	"github.com/pilotdesk/pilotdesk/session"
)

// New returns the scripted agent playing s. One Agent serves any number of
// conversations at once: the Script is read-only and each turn keeps its
// own state.
func New(s *Script) session.Agent {
	closed, closeAgent := context.WithCancel(context.Background())
	return &Agent{script: s, sleep: ctxtime.Sleep, closed: closed, close: closeAgent}
}

// Agent is the scripted backend.
type Agent struct {
	script *Script
	// sleep pauses for d or until ctx is done; tests replace it to play
	// scripts without waiting.
	sleep func(ctx context.Context, d time.Duration) error
	// closed is done once Close was called: it ends the turns under way
	// and refuses new sessions and turns, as the other backends do when
	// their agent process is gone.
	closed context.Context
	close  context.CancelFunc
	// account, for the built-in demo only (NewDemo), makes the usage add
	// up over turns; nil for a script, whose usage steps report what
	// they say.
	account *account
}

// errClosed is what a session of a closed agent answers.
var errClosed = fmt.Errorf("scripted agent: %w", session.ErrClosed)

// Name is the backend's name as the CLI spells it.
func (a *Agent) Name() string { return "script" }

// Label names the backend for people (session.Labeler): the built-in demo
// as the demo, any other scenario by its file's name, so that the list and
// the window say what actually runs ("demo.json (scripted)").
func (a *Agent) Label() string {
	if a.script == nil || a.script.Name == "" || a.script.Name == DemoName {
		return "demo (scripted)"
	}
	return filepath.Base(a.script.Name) + " (scripted)"
}

// Open returns the conversation's scripted session. A script has no state to
// resume, so opts.Resume changes nothing; opts.Model is ignored too (a
// script's usage steps name their model).
func (a *Agent) Open(_ context.Context, conversationID string, opts session.OpenOptions, host session.Host) (session.Session, error) {
	if a.script == nil || len(a.script.Turns) == 0 {
		return nil, errors.New("scripted agent: no script")
	}
	if a.closed.Err() != nil {
		return nil, fmt.Errorf("open %s: %w", conversationID, errClosed)
	}
	if host == nil {
		return nil, fmt.Errorf("scripted agent: open %s: no host", conversationID)
	}
	dir := opts.WorkDir
	if dir == "" {
		dir, _ = os.Getwd()
	}
	return &Session{script: a.script, host: host, sleep: a.sleep, dir: dir, agentClosed: a.closed, account: a.account}, nil
}

// Close ends the turns under way (their Run returns an error) and every
// later Open and Run. Sessions hold no other resources.
func (a *Agent) Close() error {
	a.close()
	return nil
}

// Session is one conversation's scripted session. The relay runs at most one
// turn of a conversation at a time; a turn's state lives in Run, so a
// Session needs no lock.
type Session struct {
	script *Script
	host   session.Host
	sleep  func(ctx context.Context, d time.Duration) error
	dir    string // the folder its tool steps' effects change
	// agentClosed is done once the Agent that opened it was closed.
	agentClosed context.Context
	account     *account // the demo's (Agent.account)
}

// Close ends the session. A script tracks no usage of its own (its shutdown
// steps report what the script says), so nothing is emitted; the relay
// synthesizes copilot:shutdown if it needs one.
func (s *Session) Close(context.Context) error { return nil }

// Run plays the first turn whose match is in the prompt, or carries out
// the numbered steps a prompt asks for (steps.go).
//
// A shutdown step only reports the end of the agent session: a script holds
// no process, so the session stays usable, the rest of the turn plays, and a
// later turn on the same conversation simply works, as if the relay had
// opened a fresh session.
func (s *Session) Run(ctx context.Context, turn session.Turn) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.agentClosed.Err() != nil {
		return errClosed
	}
	// The turn also ends when its agent is closed: it then fails with
	// errClosed, not with the cancellation the user's abort would give.
	turnCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.agentClosed, cancel)
	defer stop()
	defer func() {
		if err != nil && ctx.Err() == nil && s.agentClosed.Err() != nil {
			err = errClosed
		}
	}()
	return s.run(turnCtx, turn)
}

// run plays the turn (Run's body, under the turn's context).
func (s *Session) run(ctx context.Context, turn session.Turn) error {
	p := &player{
		host:      s.host,
		sleep:     s.sleep,
		prompt:    turn.Prompt,
		messageID: uuid.NewString(),
		dir:       s.dir,
		account:   s.account,
	}
	var t *Turn
	if steps, ok := numberedSteps(turn.Prompt); ok {
		head, _, _ := strings.Cut(strings.TrimSpace(turn.Prompt), "\n")
		if t = s.script.stepsTurn(head); t == nil {
			if err := p.carryOut(ctx, s.script, steps); err != nil {
				return err
			}
			p.finish()
			return nil
		}
	} else {
		t = s.script.match(turn.Prompt)
	}
	if t == nil {
		p.emitDelta(s.script.noReply(turn.Prompt))
		p.finish()
		return nil
	}
	for _, step := range t.Steps {
		// An abort between steps ends the turn before the next step shows.
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := p.play(ctx, step); err != nil {
			return err
		}
	}
	p.finish()
	return nil
}

// match returns the first turn matching prompt, or nil.
func (s *Script) match(prompt string) *Turn {
	lower := strings.ToLower(prompt)
	for i := range s.Turns {
		if s.Turns[i].matches(lower) {
			return &s.Turns[i]
		}
	}
	return nil
}

// noReply is the reply to a prompt no turn matches. It lists what the
// script does answer, so the user can try again.
func (s *Script) noReply(prompt string) string {
	var matches []string
	for _, t := range s.Turns {
		if t.HasMatch && !slices.Contains(matches, t.Match) {
			matches = append(matches, t.Match)
		}
	}
	return fmt.Sprintf("The script %s has no reply for %q. It answers prompts containing %s.",
		s.Name, prompt, quoteAll(matches))
}

// player plays one turn and keeps the state substitutions read.
type player struct {
	host      session.Host
	sleep     func(ctx context.Context, d time.Duration) error
	prompt    string
	messageID string
	message   strings.Builder // every delta of the turn
	dir       string          // the folder tool effects change; {{workspace}}
	account   *account        // the demo's, or nil
	reported  bool            // a usage step has played

	tool   string // {{tool}}
	answer string // {{answer}}
	index  string // {{index}}
	errTag string // {{error}}
}

func (p *player) play(ctx context.Context, step Step) error {
	switch st := step.(type) {
	case DeltaStep:
		p.emitDelta(p.substitute(st.Text))
	case SleepStep:
		return p.sleep(ctx, st.Duration)
	case ToolStep:
		return p.runTool(ctx, st)
	case AskStep:
		return p.ask(ctx, session.InputRequest{
			Question:      st.Question,
			Choices:       slices.Clone(st.Choices),
			AllowFreeform: clonePtr(st.AllowFreeform),
		})
	case InputStep:
		return p.ask(ctx, session.InputRequest{
			Question:  st.Prompt,
			Choices:   slices.Clone(st.Choices),
			InputType: st.Type,
		})
	case UsageStep:
		p.emitUsage(st.Usage)
	case ShutdownStep:
		p.host.Emit(session.Shutdown{
			TotalPremiumRequests: st.Shutdown.TotalPremiumRequests,
			ModelMetrics:         slices.Clone(st.Shutdown.ModelMetrics),
			NanoAIU:              clonePtr(st.Shutdown.NanoAIU),
		})
	case ErrorStep:
		// The text goes out unwrapped: the relay shows err.Error() as the
		// copilot:error message, and the script chose those words.
		return errors.New(st.Message)
	default:
		return fmt.Errorf("scripted agent: unknown step %T", step)
	}
	return nil
}

// emitUsage reports u; the demo's account first adds it to what was used.
func (p *player) emitUsage(u session.Usage) {
	p.reported = true
	u = cloneUsage(u)
	if p.account != nil {
		u = p.account.charge(u)
	}
	p.host.Emit(u)
}

// emitDelta streams text as part of the turn's message. An empty delta
// (say "{{answer}}" after a timeout) carries nothing and is not sent.
func (p *player) emitDelta(text string) {
	if text == "" {
		return
	}
	p.message.WriteString(text)
	p.host.Emit(session.Delta{MessageID: p.messageID, Content: text})
}

// finish sends the turn's deltas as one whole message, if there were any.
func (p *player) finish() {
	if p.account != nil && !p.reported && p.account.template != nil {
		// The demo's turn was a model call too.
		p.emitUsage(*p.account.template)
	}
	if p.message.Len() == 0 {
		return
	}
	p.host.Emit(session.Message{MessageID: p.messageID, Content: p.message.String()})
}

// runTool reports the call, asks the host (the mode decides) and reports the
// outcome, in the order the Copilot CLI does: tool start, then permission.
func (p *player) runTool(ctx context.Context, st ToolStep) error {
	id := "call_" + uuid.NewString()
	args := slices.Clone(st.Arguments)
	p.host.Emit(session.ToolStart{ToolCallID: id, ToolName: st.Name, Arguments: args})
	d := p.host.Permission(ctx, session.PermissionRequest{
		ToolCallID: id,
		ToolName:   st.Name,
		Kind:       "tool",
		Arguments:  slices.Clone(args),
	})
	if err := ctx.Err(); err != nil {
		// Aborted while asking: the tool never ran. Close its card so no
		// window shows it running forever, then end the turn.
		p.host.Emit(session.ToolEnd{ToolCallID: id, Success: false, Result: "aborted"})
		return err
	}
	if d.Allow {
		p.tool = "approved"
		result, err := p.effect(ctx, st)
		if err != nil {
			p.host.Emit(session.ToolEnd{ToolCallID: id, Success: false, Result: err.Error()})
			return nil
		}
		p.host.Emit(session.ToolEnd{ToolCallID: id, Success: true, Result: result})
		return nil
	}
	p.tool = "denied"
	reason := cmp.Or(d.Reason, "denied")
	p.host.Emit(session.ToolEnd{ToolCallID: id, Success: false, Denied: true, Result: reason})
	return nil
}

// ask puts a question through the host. A timeout or an invalid request
// fails only that request and the turn goes on; a rejection or an abort ends
// the turn.
func (p *player) ask(ctx context.Context, req session.InputRequest) error {
	ans, err := p.host.Ask(ctx, req)
	switch {
	case err == nil:
		p.answer, p.index, p.errTag = ans.Text, strconv.Itoa(ans.Index), ""
		return nil
	case ctx.Err() != nil:
		// Aborted, or rejected and the relay has already cancelled the
		// turn: either way the turn ends as the context says.
		return ctx.Err()
	case errors.Is(err, session.ErrTimeout):
		p.answer, p.index, p.errTag = "", "-1", "timeout"
		return nil
	case errors.Is(err, session.ErrInvalidRequest):
		p.answer, p.index, p.errTag = "", "-1", "invalid"
		return nil
	default:
		// ErrRejected before the relay cancelled the context, or a failure
		// of the host itself: the turn ends with it.
		return fmt.Errorf("scripted agent: input request %q: %w", req.Question, err)
	}
}

// substitute fills in a delta's placeholders. One pass: text that a
// substitution brings in (the prompt, an answer) is not expanded again.
func (p *player) substitute(text string) string {
	if !strings.Contains(text, "{{") {
		return text
	}
	return strings.NewReplacer(
		"{{prompt}}", p.prompt,
		"{{mode}}", p.host.Mode(),
		"{{tool}}", p.tool,
		"{{answer}}", p.answer,
		"{{index}}", p.index,
		"{{error}}", p.errTag,
		"{{workspace}}", p.dir,
	).Replace(text)
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
