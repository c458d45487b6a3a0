// Package chat is the terminal client of the relay (`pilotdesk chat`): a
// REPL that streams a conversation, switches between plan and act, and asks
// the agent's questions (docs/cli.md, Answering questions).
//
// The REPL is one goroutine that owns all of its state. It selects over the
// relay's events (from client/), what the user types, the spinner's ticker
// and the log lines to show. It reads an io.Reader and writes an io.Writer;
// a Terminal says what they can do (raw keys, redrawing, colours), so the
// whole REPL runs in tests without a terminal.
package chat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// Conn is what the REPL needs of a relay connection; *client.Client is one.
type Conn interface {
	Events() <-chan client.Event
	Subscribe(ctx context.Context, conversationID string, sinceSeq int64) error
	Unsubscribe(ctx context.Context, conversationID string) error
	Send(ctx context.Context, conversationID, prompt string, mode protocol.Mode, model string) error
	Abort(ctx context.Context, conversationID string) error
	SetMode(ctx context.Context, conversationID string, mode protocol.Mode) error
	Answer(ctx context.Context, conversationID, requestID, answer string, wasFreeform bool, index *int) error
	Reject(ctx context.Context, conversationID, requestID string) error
	ListPage(ctx context.Context, limit int, cursor string) error
}

var _ Conn = (*client.Client)(nil)

// Config configures Run.
type Config struct {
	Conn Conn
	// In is what the user types: keys when Term.Raw, else lines (a pipe
	// works). When In has a SetReadDeadline method (a terminal opened by
	// OpenTerminal) Run stops its reader on return; otherwise a reader
	// blocked in Read ends when In does.
	In   io.Reader
	Out  io.Writer
	Term Terminal
	// ConversationID resumes that conversation (it is replayed from its
	// start); empty starts a new one.
	ConversationID string
	// Relay names the relay in the banner ("embedded relay, script agent").
	Relay string
	// NewID makes conversation IDs (default: a random UUID).
	NewID func() string
	// Logs, when set, are printed as they arrive.
	Logs *LogSink
	// SpinnerInterval is the spinner's frame time (default 100 ms).
	SpinnerInterval time.Duration
	// SendTimeout bounds each message to the relay (default 10 s).
	SendTimeout time.Duration
	// Now is the clock for "5m ago" in /list (default time.Now).
	Now func() time.Time
	// Workspace is the folder of the new conversation the REPL starts in
	// (nil: the relay's default); ignored with ConversationID.
	Workspace *protocol.WorkspaceRequest
}

// workspaceSender is a Conn that can name a conversation's workspace.
type workspaceSender interface {
	SendIn(ctx context.Context, conversationID, prompt string, mode protocol.Mode, model string, ws *protocol.WorkspaceRequest) error
}

// ErrConnectionClosed is returned by Run when the relay connection ended
// for good.
var ErrConnectionClosed = errors.New("the connection to the relay was closed")

// Run runs the REPL until the user quits (/quit, Ctrl+D, the end of a piped
// input), ctx ends, or the connection closes for good.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Conn == nil || cfg.Out == nil {
		return errors.New("chat: Conn and Out are required")
	}
	if cfg.NewID == nil {
		cfg.NewID = uuid.NewString
	}
	if cfg.SpinnerInterval <= 0 {
		cfg.SpinnerInterval = 100 * time.Millisecond
	}
	if cfg.SendTimeout <= 0 {
		cfg.SendTimeout = 10 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if !cfg.Term.Live {
		// Redrawing needs a terminal to redraw on.
		cfg.Term.Raw, cfg.Term.Spinner = false, false
	}
	r := &repl{
		cfg:  cfg,
		conn: cfg.Conn,
		scr:  newScreen(cfg.Out, cfg.Term),
		mode: protocol.ModeAct,
	}
	if c, ok := cfg.Conn.(interface{ Identity() *client.Identity }); ok {
		r.id = c.Identity()
	}
	r.resetConversation()
	if cfg.ConversationID == "" {
		r.nextWorkspace = cfg.Workspace
	}

	inputs, stopInput := startReader(cfg.In)
	defer stopInput()
	return r.loop(ctx, inputs)
}

// inputChunk is one read of In.
type inputChunk struct {
	data []byte
	err  error // io.EOF at the end
}

// startReader reads In on its own goroutine (a read cannot be selected on).
// The returned stop ends it: at once when In can take a read deadline,
// else when In's Read returns.
func startReader(in io.Reader) (<-chan inputChunk, func()) {
	ch := make(chan inputChunk)
	done := make(chan struct{})
	exited := make(chan struct{})
	if in == nil {
		in = strings.NewReader("")
	}
	go func() {
		defer close(exited)
		for {
			buf := make([]byte, 4096)
			n, err := in.Read(buf)
			if n > 0 {
				select {
				case ch <- inputChunk{data: buf[:n]}:
				case <-done:
					return
				}
			}
			if err != nil {
				select {
				case ch <- inputChunk{err: err}:
				case <-done:
				}
				return
			}
		}
	}()
	stop := func() {
		close(done)
		if d, ok := in.(interface{ SetReadDeadline(time.Time) error }); ok {
			if d.SetReadDeadline(time.Now()) == nil {
				<-exited
			}
		}
	}
	return ch, stop
}

// repl is the REPL's state. Only the loop goroutine touches it.
type repl struct {
	cfg  Config
	conn Conn
	scr  *screen
	// id is who this terminal is on the relay, as its client learns it
	// (client.Identity); nil for a Conn that does not say (terminalSelf).
	id *client.Identity

	conv string
	// workspace is the folder the current conversation's sends name (set
	// for a new conversation from Config.Workspace or /new DIR; nil: none
	// named); nextWorkspace is the one the next new conversation takes.
	workspace, nextWorkspace *protocol.WorkspaceRequest
	mode                     protocol.Mode
	syncing                  bool // replaying the conversation (our own subscribe), until copilot:subscribed
	ready                    bool // copilot:subscribed arrived: the conversation's state is known

	// The turn.
	running     bool     // the relay says a turn runs
	sendPending bool     // we sent a prompt the relay has not echoed yet
	waiting     bool     // expecting the agent's output and nothing came yet: the spinner runs
	echoed      []string // our prompts already printed, to skip when the relay echoes them
	lastMsgID   string
	// fold is the conversation's state, folded from its events by package
	// conversation (the same fold as the window's); the REPL prints what
	// each event changed in it.
	fold       *conversation.State
	errorShown bool      // a copilot:error of this turn was printed
	agent      agentRows // the agent's reasoning and plan (agentrows.go)
	// plan is the last plan turn's steps, for /run.
	plan []conversation.PlanStep
	// The credit budget's warning and refusal, each said once.
	budgetWarned, budgetSpentShown bool
	// budgetAfterTurn is the relay's budget that changed while a turn ran,
	// said once the turn has ended (budgetChanged).
	budgetAfterTurn *protocol.Budget

	// Input requests.
	prompt   *prompt                      // the open one
	queued   []*protocol.UserInputRequest // more, in order (the relay sends one at a time)
	answered *prompt                      // the last one answered here, until the relay closes it
	// replayed holds the questions of a replay until the replay says how
	// they ended: an answered one is then printed as it was, the one still
	// open becomes the prompt (copilot:subscribed's pendingInput).
	replayed map[string]*protocol.UserInputRequest

	list     []protocol.ConversationInfo // the last /list and its /more pages, for /switch N
	listNext string                      // the cursor of the page /more asks for; "" when there is none
	// confirm is the checkpoint /restore asks to confirm (y/N): the next
	// line answers it (checkpoints.go).
	confirm    string
	listAppend bool // the page asked for is /more's: it continues list

	// What the user types.
	keys         keyDecoder
	editor       editor
	enterPending bool     // raw mode: Enter was pressed before the conversation was ready
	partial      []byte   // line mode: an unfinished line
	lines        []string // line mode: lines waiting their turn
	eof          bool

	connDown bool
	// dropped: the connection dropped while the conversation was not ready
	// yet, as it does again and again with a relay that cannot send it; /quit
	// then need not wait for it.
	dropped bool
	// closedBy is why the client stopped for good (client.ErrRevoked),
	// or nil: Run returns it with ErrConnectionClosed.
	closedBy error
	spin     int
	quit     bool
}

func (r *repl) resetConversation() {
	r.syncing, r.ready, r.dropped = false, false, false
	r.running, r.sendPending, r.waiting = false, false, false
	r.echoed = nil
	r.lastMsgID = ""
	r.fold = nil
	r.plan = nil
	r.confirm = ""
	r.errorShown = false
	r.prompt, r.queued, r.answered = nil, nil, nil
	r.replayed = map[string]*protocol.UserInputRequest{}
}

// streaming reports whether a turn runs (or is about to).
func (r *repl) streaming() bool { return r.running || r.sendPending }

func (r *repl) loop(ctx context.Context, inputs <-chan inputChunk) error {
	events := r.conn.Events()
	r.banner()
	if err := r.subscribe(ctx, r.cfg.ConversationID); err != nil {
		r.scr.flush()
		return err
	}
	var ticker, clock *time.Ticker
	defer func() {
		if ticker != nil {
			ticker.Stop()
		}
		if clock != nil {
			clock.Stop()
		}
	}()
	for !r.quit {
		r.printLogs()
		r.render()
		if err := r.scr.flush(); err != nil {
			return err
		}
		// The spinner ticks only while it shows.
		var tick <-chan time.Time
		if r.statusLine() != "" {
			if ticker == nil {
				ticker = time.NewTicker(r.cfg.SpinnerInterval)
			}
			tick = ticker.C
		} else if ticker != nil {
			ticker.Stop()
			ticker = nil
		}
		// The countdown of an open question ticks each second.
		var second <-chan time.Time
		if r.countdownShows() {
			if clock == nil {
				clock = time.NewTicker(time.Second)
			}
			second = clock.C
		} else if clock != nil {
			clock.Stop()
			clock = nil
		}
		select {
		case <-ctx.Done():
			r.finish()
			return nil
		case ev, ok := <-events:
			if !ok {
				r.finish()
				if r.closedBy != nil {
					return fmt.Errorf("%w: %w", ErrConnectionClosed, r.closedBy)
				}
				return ErrConnectionClosed
			}
			r.event(ctx, ev)
		case in := <-inputs:
			r.input(ctx, in)
		case <-tick:
			r.spin++
		case <-second: // render redraws the countdown
		case <-r.cfg.Logs.ready():
		}
		if !r.cfg.Term.Raw {
			r.drainLines(ctx)
		} else if r.enterPending && r.ready && r.prompt == nil {
			r.enterPending = false
			r.run(ctx, r.editor.submit(true))
		}
	}
	r.printLogs()
	r.finish()
	return nil
}

// finish leaves the screen tidy: no footer, the cursor on a fresh line.
func (r *repl) finish() {
	r.scr.showFooter(nil)
	r.scr.endLine()
	_ = r.scr.flush()
}

func (r *repl) banner() {
	title := "pilotdesk chat"
	if r.cfg.Relay != "" {
		title += " · " + r.cfg.Relay
	}
	r.scr.line(r.scr.style(styleBold, title))
	r.scr.line(r.scr.style(styleDim, "Type a prompt, or /help for commands. Ctrl+C aborts a turn, Ctrl+D quits."))
}

// subscribe follows a conversation from its start (id empty: a new one).
func (r *repl) subscribe(ctx context.Context, id string) error {
	fresh := id == ""
	if fresh {
		id = r.cfg.NewID()
	}
	r.resetConversation()
	r.conv = id
	r.syncing = true
	r.workspace = nil
	if fresh {
		r.workspace, r.nextWorkspace = r.nextWorkspace, nil
	}
	if fresh {
		r.note(styleDim, "New conversation "+id)
		if ws := r.workspace; ws != nil {
			how := ""
			if ws.Worktree() {
				how = ", on a branch of its own (a git worktree)"
			}
			r.note(styleDim, "Folder: "+sanitize(ws.Path)+how)
		}
	} else {
		r.note(styleDim, "Conversation "+id)
	}
	sctx, cancel := context.WithTimeout(ctx, r.cfg.SendTimeout)
	defer cancel()
	if err := r.conn.Subscribe(sctx, id, 0); err != nil {
		return fmt.Errorf("subscribing to conversation %s: %w", id, err)
	}
	return nil
}

// note prints a line of the REPL's own, in a style.
func (r *repl) note(style, text string) {
	r.scr.line(r.scr.style(style, text))
}

// send runs f with the send timeout.
func (r *repl) send(ctx context.Context, f func(ctx context.Context) error) error {
	sctx, cancel := context.WithTimeout(ctx, r.cfg.SendTimeout)
	defer cancel()
	return f(sctx)
}

// printLogs prints the log lines that arrived.
func (r *repl) printLogs() {
	if r.cfg.Logs == nil {
		return
	}
	lines, dropped := r.cfg.Logs.Take()
	for _, l := range lines {
		r.note(styleDim, "log: "+sanitize(l))
	}
	if dropped > 0 {
		r.note(styleDim, fmt.Sprintf("log: %d more lines were dropped", dropped))
	}
}

// promptLabel is the main prompt: the mode, then "> ".
func (r *repl) promptLabel(mode protocol.Mode) string {
	if mode == protocol.ModePlan {
		return r.scr.style(styleWarn, "plan") + "> "
	}
	return r.scr.style(styleOK, string(protocol.ModeAct)) + "> "
}

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// statusLine is the spinner's line, or "" when none shows.
func (r *repl) statusLine() string {
	if !r.cfg.Term.Spinner || r.syncing || r.prompt != nil || !r.streaming() {
		return ""
	}
	frame := r.scr.style(styleInfo, spinnerFrames[r.spin%len(spinnerFrames)])
	if tool, ok := r.runningTool(); ok {
		return frame + r.scr.style(styleDim, " running "+oneLine(tool.Title)+"…")
	}
	if r.waiting {
		return frame + r.scr.style(styleDim, " thinking…")
	}
	if r.scr.writing() {
		// A markdown block streams: it shows above, in the footer.
		return frame + r.scr.style(styleDim, " writing…")
	}
	return ""
}

// render draws the footer: the open question, or the spinner and the
// prompt line.
func (r *repl) render() {
	if !r.cfg.Term.Live {
		return
	}
	var lines []string
	switch {
	case r.prompt != nil && r.cfg.Term.Raw:
		lines = r.promptFooter(r.prompt)
	case r.prompt != nil:
	default:
		// The markdown block under way (mdview.go).
		lines = append(lines, r.scr.previewLines()...)
		if s := r.statusLine(); s != "" {
			lines = append(lines, s)
		}
		// While a turn streams the prompt line shows only once the user
		// types (a /plan, say); otherwise the text streams unobstructed.
		if r.cfg.Term.Raw && r.ready && (!r.streaming() || !r.editor.empty()) {
			lines = append(lines, r.promptLabel(r.mode)+sanitize(r.editor.String()))
		}
	}
	r.scr.showFooter(lines)
}

// ---- input ----

func (r *repl) input(ctx context.Context, in inputChunk) {
	if in.err != nil {
		if !errors.Is(in.err, io.EOF) && !errors.Is(in.err, os.ErrDeadlineExceeded) {
			r.note(styleError, "Reading the input failed: "+in.err.Error())
		}
		r.eof = true
		if r.cfg.Term.Raw {
			r.quit = true
		}
		if len(r.partial) > 0 {
			r.lines = append(r.lines, string(r.partial))
			r.partial = nil
		}
		return
	}
	if !r.cfg.Term.Raw {
		r.partial = append(r.partial, in.data...)
		for {
			i := strings.IndexByte(string(r.partial), '\n')
			if i < 0 {
				break
			}
			line := strings.TrimSuffix(string(r.partial[:i]), "\r")
			r.partial = r.partial[i+1:]
			r.lines = append(r.lines, line)
		}
		return
	}
	for _, k := range r.keys.feed(in.data) {
		r.key(ctx, k)
		if r.quit {
			return
		}
	}
}

// key handles one key in raw mode.
func (r *repl) key(ctx context.Context, k key) {
	if p := r.prompt; p != nil {
		switch k.kind {
		case keyRune:
			p.input.insert(k.r)
			p.highlight = -1
		case keyBackspace:
			p.input.backspace()
		case keyCtrlU:
			p.input.clear()
		case keyCtrlW:
			p.input.killWord()
		case keyUp, keyDown:
			p.move(k.kind == keyDown)
		case keyEnter:
			if r.questionCommand(ctx, p.input.String()) {
				p.input.clear()
				return
			}
			r.resolve(ctx, p, p.enter())
		case keyCtrlC:
			// Ctrl+C during a question rejects it (docs/cli.md, Answering questions).
			r.resolve(ctx, p, outcome{valid: true, reject: true, shown: "Reject (Ctrl+C)"})
		case keyCtrlD:
			if p.input.empty() {
				r.quitWithOpenQuestion()
			}
		}
		return
	}
	switch k.kind {
	case keyRune:
		r.editor.insert(k.r)
	case keyTab:
		r.editor.insert(' ')
	case keyBackspace:
		r.editor.backspace()
	case keyCtrlU:
		r.editor.clear()
	case keyCtrlW:
		r.editor.killWord()
	case keyUp:
		r.editor.older()
	case keyDown:
		r.editor.newer()
	case keyEnter:
		if !r.ready {
			// The conversation is not known yet (its mode, whether a turn
			// runs): the line goes once it is.
			r.enterPending = true
			return
		}
		r.run(ctx, r.editor.submit(true))
	case keyCtrlC:
		switch {
		case r.streaming():
			r.abort(ctx)
		case !r.editor.empty():
			r.editor.clear()
		default:
			r.note(styleDim, "(Press Ctrl+D or type /quit to leave.)")
		}
	case keyCtrlD:
		if r.editor.empty() {
			r.quit = true
		}
	}
}

// drainLines runs the queued lines of line mode in order. A line waits
// while it cannot run yet: a prompt or a command that changes the
// conversation waits for the turn to end, an answer for the question. So
// `printf 'deploy\na\n/quit\n' | pilotdesk chat` answers the question
// with "a" and quits once the turn is over.
func (r *repl) drainLines(ctx context.Context) {
	for !r.quit {
		if len(r.lines) == 0 {
			if r.eof && r.ready && (r.prompt != nil || !r.streaming()) {
				if r.prompt != nil {
					r.quitWithOpenQuestion()
				} else {
					r.quit = true
				}
			}
			return
		}
		line := r.lines[0]
		if !r.ready {
			// Lines wait for the conversation (so that a piped /quit
			// shows its history first), but once the connection has
			// dropped before it came, /quit does not: a relay that keeps
			// dropping the connection must not keep the user in.
			if cmd := strings.TrimSpace(line); r.dropped && (cmd == "/quit" || cmd == "/exit") {
				r.lines = r.lines[1:]
				r.echo(r.promptLabel(r.mode), cmd)
				r.quit = true
			}
			return
		}
		if r.confirm != "" {
			r.lines = r.lines[1:]
			r.confirmRestore(ctx, line)
			continue
		}
		if r.prompt == nil && r.streaming() && !midStreamCommand(line) {
			return
		}
		r.lines = r.lines[1:]
		if p := r.prompt; p != nil {
			r.echo(r.glyph(p), line)
			if r.questionCommand(ctx, line) {
				continue
			}
			o := p.interpret(line)
			if !o.valid {
				r.note(styleWarn, p.hint)
				continue
			}
			r.resolve(ctx, p, o)
			continue
		}
		r.run(ctx, line)
	}
}

// questionCommand runs the commands that make sense while a question is
// open, /quit and /abort (no one answers a question with those), and
// reports whether line was one.
func (r *repl) questionCommand(ctx context.Context, line string) bool {
	switch strings.TrimSpace(line) {
	case "/quit", "/exit":
		r.quitWithOpenQuestion()
		return true
	case "/abort":
		r.abort(ctx)
		return true
	}
	return false
}

// echo prints what was typed (in raw mode the prompt line, in line mode
// the line read), so the transcript shows the user's side.
func (r *repl) echo(label, typed string) { r.scr.line(label + sanitize(typed)) }

// midStreamCommand reports whether a line may run while a turn streams.
func midStreamCommand(line string) bool {
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return false
	}
	switch fields[0] {
	case "/plan", "/act", "/abort", "/help":
		return true
	}
	return false
}

// run runs a submitted line: a command or a prompt.
func (r *repl) run(ctx context.Context, line string) {
	text := strings.TrimSpace(line)
	if text == "" {
		return
	}
	if strings.HasPrefix(text, "/") {
		r.echo(r.promptLabel(r.mode), text)
		r.command(ctx, text)
		return
	}
	if r.streaming() {
		r.note(styleWarn, "A turn is running: wait for it to end, or /abort it. Your prompt was not sent.")
		return
	}
	r.echo(r.promptLabel(r.mode), line)
	r.sendTurn(ctx, line)
}

// sendTurn sends prompt as a turn in the REPL's mode, already printed (the
// relay's echo of it is skipped); false when it could not be sent, which
// it says.
func (r *repl) sendTurn(ctx context.Context, prompt string) bool {
	mode := r.mode
	r.echoed = append(r.echoed, prompt)
	r.sendPending = true
	r.startTurn()
	send := func(c context.Context) error { return r.conn.Send(c, r.conv, prompt, mode, "") }
	if ws, ok := r.conn.(workspaceSender); ok && r.workspace != nil {
		w := r.workspace // every send of the conversation repeats it
		send = func(c context.Context) error { return ws.SendIn(c, r.conv, prompt, mode, "", w) }
	}
	if err := r.send(ctx, send); err != nil {
		r.echoed = r.echoed[:len(r.echoed)-1]
		r.sendPending, r.waiting = false, false
		r.note(styleError, "Not sent: "+err.Error())
		return false
	}
	return true
}

// runPlan sends the chosen steps of the last plan (all when which is
// empty, else "2" or "1,3") as a turn in Act, and switches to Act.
func (r *repl) runPlan(ctx context.Context, which string) {
	if len(r.plan) == 0 {
		r.note(styleWarn, "No plan to run: a turn in Plan mode whose tool calls were denied makes one.")
		return
	}
	if r.streaming() {
		r.note(styleWarn, "A turn is running: wait for it to end, or /abort it, then /run.")
		return
	}
	steps := r.plan
	if which != "" {
		steps = nil
		for _, f := range strings.Split(which, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 || n > len(r.plan) {
				r.note(styleWarn, fmt.Sprintf("There is no step %q: the plan has steps 1 to %d.", sanitize(f), len(r.plan)))
				return
			}
			steps = append(steps, r.plan[n-1])
		}
	}
	prompt := conversation.PlanPrompt(steps)
	r.mode = protocol.ModeAct // a send carries the mode its turn runs in
	if !r.sendTurn(ctx, prompt) {
		return
	}
	r.note(styleOK, fmt.Sprintf("Act mode: running %d step(s) of the plan.", len(steps)))
}

// startTurn resets what the REPL tracks per turn.
func (r *repl) startTurn() {
	r.errorShown = false
	r.waiting = !r.syncing
	r.lastMsgID = ""
}

// listPageSize is how many conversations /list and /more show at a time:
// a screenful, where the relay's own page (200) would scroll away.
const listPageSize = 50

const helpText = `Commands:
  /plan, /act   switch the mode (also while a turn runs): plan denies every tool, act runs them
  /new [DIR] [--worktree]  start a new conversation (in folder DIR, on a branch of its own with --worktree)
  /list         list the relay's conversations (the most recent first)
  /more         list the next ones, after /list
  /switch N     open conversation N of the last /list (or /switch ID)
  /run [N,…]    carry out the last plan in Act (all its steps, or those numbered)
  /changes      list the turns that changed files, numbered, with their files
  /diff N [PATH]  show turn N's diff (of one file with PATH)
  /restore N    put the files back as they were before turn N (asks first; can be undone)
  /abort        stop the running turn (Ctrl+C does too)
  /quit         leave (Ctrl+D does too)`

func (r *repl) command(ctx context.Context, text string) {
	fields := strings.Fields(text)
	if r.checkpointCommand(ctx, fields) {
		return
	}
	switch fields[0] {
	case "/plan", "/act":
		mode := protocol.Mode(strings.TrimPrefix(fields[0], "/"))
		prev := r.mode
		r.mode = mode // the next prompt carries it even before the relay confirms
		if err := r.send(ctx, func(c context.Context) error { return r.conn.SetMode(c, r.conv, mode) }); err != nil {
			r.mode = prev
			r.note(styleError, "Mode not changed: "+err.Error())
		}
	case "/new":
		ws, problem := workspaceArg(fields[1:])
		if problem != "" {
			r.note(styleWarn, problem)
			return
		}
		r.nextWorkspace = ws
		if err := r.switchTo(ctx, ""); err != nil {
			r.nextWorkspace = nil
			r.note(styleError, err.Error())
		}
	case "/list", "/more":
		cursor := ""
		if fields[0] == "/more" {
			if r.listNext == "" {
				r.note(styleDim, "Nothing more to list: /list starts from the most recent again.")
				return
			}
			cursor = r.listNext
		}
		r.listAppend = cursor != ""
		if err := r.send(ctx, func(c context.Context) error { return r.conn.ListPage(c, listPageSize, cursor) }); err != nil {
			r.note(styleError, "Could not list the conversations: "+err.Error())
		}
	case "/switch":
		if len(fields) != 2 {
			r.note(styleWarn, "Usage: /switch N (a number from /list) or /switch ID.")
			return
		}
		id, problem := r.pickConversation(fields[1])
		if problem != "" {
			r.note(styleWarn, problem)
			return
		}
		if err := r.switchTo(ctx, id); err != nil {
			r.note(styleError, err.Error())
		}
	case "/run":
		r.runPlan(ctx, strings.Join(fields[1:], ""))
	case "/abort":
		r.abort(ctx)
	case "/quit", "/exit":
		r.quit = true
	case "/help":
		for _, l := range strings.Split(helpText, "\n") {
			r.note(styleDim, l)
		}
	default:
		r.note(styleWarn, fmt.Sprintf("Unknown command %s. Commands: /plan /act /new /list /more /switch N /run /changes /diff N /restore N /abort /quit /help.", sanitize(fields[0])))
	}
}

// pickConversation reads /switch's argument: a number from the last /list
// or a conversation ID. problem says what is wrong with it, for the user.
func (r *repl) pickConversation(arg string) (id, problem string) {
	if isNumber(arg) {
		if r.list == nil {
			return "", "Run /list first, then /switch N with a number from it."
		}
		n, err := strconv.Atoi(arg)
		if err != nil || n < 1 || n > len(r.list) {
			return "", fmt.Sprintf("There is no conversation %s: /list shows %d.", arg, len(r.list))
		}
		return r.list[n-1].ConversationID, ""
	}
	if _, err := uuid.Parse(arg); err != nil {
		return "", fmt.Sprintf("%q is neither a number from /list nor a conversation ID.", arg)
	}
	return arg, ""
}

// switchTo leaves the current conversation (its turn, if any, goes on in
// the relay) and follows another one, replaying it; id "" starts a new one.
// workspaceArg reads /new's arguments: a folder, made absolute, and
// --worktree; a problem is said in words.
func workspaceArg(args []string) (*protocol.WorkspaceRequest, string) {
	var ws *protocol.WorkspaceRequest
	worktree := false
	for _, a := range args {
		switch {
		case a == "--worktree":
			worktree = true
		case ws == nil && !strings.HasPrefix(a, "-"):
			abs, err := filepath.Abs(a)
			if err != nil {
				return nil, fmt.Sprintf("The folder %q: %v.", sanitize(a), err)
			}
			ws = &protocol.WorkspaceRequest{Path: abs}
		default:
			return nil, "Usage: /new [DIR] [--worktree]."
		}
	}
	if worktree {
		if ws == nil {
			return nil, "--worktree needs a folder: /new DIR --worktree."
		}
		ws.Isolation = protocol.IsolationWorktree
	}
	return ws, ""
}

func (r *repl) switchTo(ctx context.Context, id string) error {
	if id != "" && id == r.conv {
		r.note(styleDim, "Already in that conversation.")
		return nil
	}
	if r.prompt != nil {
		r.closePrompt("The question stays open in the conversation you left.")
	}
	old := r.conv
	if err := r.send(ctx, func(c context.Context) error { return r.conn.Unsubscribe(c, old) }); err != nil {
		return fmt.Errorf("leaving the conversation: %w", err)
	}
	r.scr.endLine()
	return r.subscribe(ctx, id)
}

func (r *repl) abort(ctx context.Context) {
	if err := r.send(ctx, func(c context.Context) error { return r.conn.Abort(c, r.conv) }); err != nil {
		r.note(styleError, "Could not abort: "+err.Error())
	}
}

// quitWithOpenQuestion quits, saying that the question stays open: another
// window can still answer it.
func (r *repl) quitWithOpenQuestion() {
	r.closePrompt("Leaving the question unanswered; another window can still answer it.")
	r.quit = true
}
