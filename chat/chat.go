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
	// Now is the clock for "5 min ago" in /list (default time.Now).
	Now func() time.Time
	// Workspace is the folder of the new conversation the REPL starts in
	// (nil: the relay's default); ignored with ConversationID.
	Workspace *protocol.WorkspaceRequest
}

// watcher is a Conn that can follow the relay's list (client.Watch).
type watcher interface {
	Watch(ctx context.Context, on bool) error
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
	r, err := newREPL(cfg)
	if err != nil {
		return err
	}
	inputs, stopInput := startReader(r.cfg.In)
	defer stopInput()
	return r.loop(ctx, inputs)
}

// newREPL checks cfg and fills in its defaults.
func newREPL(cfg Config) (*repl, error) {
	if cfg.Conn == nil || cfg.Out == nil {
		return nil, errors.New("chat: Conn and Out are required")
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
	return r, nil
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

	// listAsked counts the pages /list and /more asked for that have not
	// come: only those are shown (the list's notices bring pages too).
	listAsked int
	// diffAsked counts the diffs /diff asked for that have not come: line
	// mode's next line waits for them (drainLines, awaitingReply).
	diffAsked int

	// folderUnsaid: the new conversation's folder is said once the relay
	// took it, at the echo of its first prompt (folderTaken), not at
	// /new: the relay checks it at that send and may refuse it.
	folderUnsaid bool

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
	// budget says the credit budget's warning and refusal, each once
	// (budget.go).
	budget budgetNotes

	// ask holds the agent's questions (ask.go).
	ask questions

	list conversationList // the last /list and its /more pages, for /switch N (list.go)
	// confirm is the y/N question /restore or /delete asked, or nil: the
	// next line answers it (confirm.go).
	confirm *confirmation

	// typed is what the user types (input.go).
	typed typedInput

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
	r.confirm = nil
	r.errorShown = false
	r.ask = questions{replayed: map[string]*protocol.UserInputRequest{}}
}

// streaming reports whether a turn runs (or is about to).
func (r *repl) streaming() bool { return r.running || r.sendPending }

// turnBlocks says, while a turn runs, that command waits for its end (a
// restore or a plan run under the agent's feet, a delete of what it still
// writes), and reports whether one runs.
func (r *repl) turnBlocks(command string) bool {
	if !r.streaming() {
		return false
	}
	r.note(styleWarn, "A turn is running: wait for it to end, or /abort it, then "+command+".")
	return true
}

func (r *repl) loop(ctx context.Context, inputs <-chan inputChunk) error {
	events := r.conn.Events()
	r.banner()
	if err := r.subscribe(ctx, r.cfg.ConversationID); err != nil {
		r.scr.flush()
		return err
	}
	if w, ok := r.conn.(watcher); ok {
		// The list's notices keep the fold's entry of the conversation
		// as of its last turn (its folder, whether its worktree holds
		// ignored files), which /delete's confirmation says; a
		// subscription's is as of when it began. Without them it says
		// less, nothing worse.
		_ = r.send(ctx, func(c context.Context) error { return w.Watch(c, true) })
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
		// What the user typed at the screen as drawn goes to it before an
		// event changes it: keys read while the loop was busy are taken
		// first, not at random beside an event as a select would. So keys
		// typed into a question that another window answers meanwhile go
		// with it, and never to the question or prompt drawn next, which
		// the user had not seen.
		select {
		case in := <-inputs:
			r.input(ctx, in)
		default:
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
		}
		if !r.cfg.Term.Raw {
			r.drainLines(ctx)
		} else if r.typed.enterPending && r.ready && r.ask.open == nil {
			r.typed.enterPending = false
			r.run(ctx, r.typed.editor.submit(true))
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
	r.folderUnsaid = fresh && r.workspace != nil
	if fresh {
		r.note(styleDim, "New conversation "+id)
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

// folderTaken says the new conversation's folder once: the relay echoed
// its first prompt, so it fixed the folder the send named (a folder it
// refuses gets an error, and no echo).
func (r *repl) folderTaken() {
	if !r.folderUnsaid {
		return
	}
	r.folderUnsaid = false
	ws := r.workspace
	how := ""
	if ws.Worktree() {
		how = ", on a branch of its own (a git worktree)"
	}
	r.scr.endLine()
	r.note(styleDim, "Folder: "+sanitize(ws.Path)+how)
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

// request sends f, a command's request to the relay, and says when it
// failed that the terminal could not do what the command does: "Could not
// restore: …".
func (r *repl) request(ctx context.Context, what string, f func(ctx context.Context) error) {
	if err := r.send(ctx, f); err != nil {
		r.note(styleError, "Could not "+what+": "+err.Error())
	}
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
	if !r.cfg.Term.Spinner || r.syncing || r.ask.open != nil || !r.streaming() {
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
	case r.ask.open != nil && r.cfg.Term.Raw:
		lines = r.promptFooter(r.ask.open)
	case r.ask.open != nil:
	default:
		// The markdown block under way (mdview.go).
		lines = append(lines, r.scr.previewLines()...)
		if s := r.statusLine(); s != "" {
			lines = append(lines, s)
		}
		// While a turn streams the prompt line shows only once the user
		// types (a /plan, say); otherwise the text streams unobstructed.
		if r.cfg.Term.Raw && r.ready && (!r.streaming() || !r.typed.editor.empty()) {
			label := r.promptLabel(r.mode)
			if r.confirm != nil {
				// The line answers "Restore? [y/N]": a prompt's label
				// there said that it would go to the agent.
				label = r.scr.style(styleWarn, "y/N") + "> "
			}
			lines = append(lines, label+sanitize(r.typed.editor.String()))
		}
	}
	r.scr.showFooter(lines)
}

// run runs a submitted line: a command or a prompt.
func (r *repl) run(ctx context.Context, line string) {
	// A line typed under "Restore? [y/N]" or "Delete? [y/N]" answers it
	// (Enter alone: no). Line mode answers in drainLines; a terminal's
	// Enter comes here, and sent the "y" to the agent as a prompt, the
	// files never restored.
	if r.confirm != nil {
		r.answerConfirm(ctx, line)
		return
	}
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

// startTurn resets what the REPL tracks per turn.
func (r *repl) startTurn() {
	r.errorShown = false
	r.waiting = !r.syncing
	r.lastMsgID = ""
}

// switchTo leaves the current conversation (its turn, if any, goes on in
// the relay) and follows another one, replaying it; id "" starts a new one.
func (r *repl) switchTo(ctx context.Context, id string) error {
	if id != "" && id == r.conv {
		r.note(styleDim, "Already in that conversation.")
		return nil
	}
	if r.ask.open != nil {
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
	r.request(ctx, "abort", func(c context.Context) error { return r.conn.Abort(c, r.conv) })
}

// quitWithOpenQuestion quits, saying that the question stays open: another
// window can still answer it.
func (r *repl) quitWithOpenQuestion() {
	r.closePrompt("Leaving the question unanswered; another window can still answer it.")
	r.quit = true
}
