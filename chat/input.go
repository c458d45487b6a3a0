package chat

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
)

// typedInput is what the user types, before the REPL acts on it: in raw
// mode the keys decoded into the line editor, in line mode whole lines
// queued until they can run (drainLines). Like all of repl's state it
// belongs to the loop goroutine.
type typedInput struct {
	keys         keyDecoder
	editor       editor
	enterPending bool     // raw mode: Enter was pressed before the conversation was ready
	partial      []byte   // line mode: an unfinished line
	lines        []string // line mode: lines waiting their turn
	eof          bool
}

// addLines takes line mode's input: each complete line joins the queue,
// the rest waits for its end.
func (t *typedInput) addLines(data []byte) {
	t.partial = append(t.partial, data...)
	for {
		i := strings.IndexByte(string(t.partial), '\n')
		if i < 0 {
			return
		}
		line := strings.TrimSuffix(string(t.partial[:i]), "\r")
		t.partial = t.partial[i+1:]
		t.lines = append(t.lines, line)
	}
}

// ended notes the end of the input: an unfinished line is a line.
func (t *typedInput) ended() {
	t.eof = true
	if len(t.partial) > 0 {
		t.lines = append(t.lines, string(t.partial))
		t.partial = nil
	}
}

// input takes a chunk of what the user typed: keys in raw mode, lines in
// line mode (which drainLines runs once they can).
func (r *repl) input(ctx context.Context, in inputChunk) {
	if in.err != nil {
		if !errors.Is(in.err, io.EOF) && !errors.Is(in.err, os.ErrDeadlineExceeded) {
			r.note(styleError, "Reading the input failed: "+in.err.Error())
		}
		r.typed.ended()
		if r.cfg.Term.Raw {
			r.quit = true
		}
		return
	}
	if !r.cfg.Term.Raw {
		r.typed.addLines(in.data)
		return
	}
	keys := r.typed.keys.feed(in.data)
	for i, k := range keys {
		at := r.ask.open
		r.key(ctx, k)
		if r.quit {
			return
		}
		// A key that answered one question opened the next queued one,
		// which is drawn only after this read: the keys after it were
		// typed without seeing it, and must not answer it.
		if at != nil && r.ask.open != nil && r.ask.open != at {
			if i < len(keys)-1 {
				r.ask.open.hint = typedAheadNote
			}
			return
		}
	}
}

// typedAheadNote says why keys typed past an answer were not used.
const typedAheadNote = "Keys typed before this question showed were not used."

// key handles one key in raw mode.
func (r *repl) key(ctx context.Context, k key) {
	if p := r.ask.open; p != nil {
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
		r.typed.editor.insert(k.r)
	case keyTab:
		r.typed.editor.insert(' ')
	case keyBackspace:
		r.typed.editor.backspace()
	case keyCtrlU:
		r.typed.editor.clear()
	case keyCtrlW:
		r.typed.editor.killWord()
	case keyUp:
		r.typed.editor.older()
	case keyDown:
		r.typed.editor.newer()
	case keyEnter:
		if !r.ready {
			// The conversation is not known yet (its mode, whether a turn
			// runs): the line goes once it is.
			r.typed.enterPending = true
			return
		}
		r.run(ctx, r.typed.editor.submit(true))
	case keyCtrlC:
		switch {
		case r.streaming():
			r.abort(ctx)
		case !r.typed.editor.empty():
			r.typed.editor.clear()
		default:
			r.note(styleDim, "(Press Ctrl+D or type /quit to leave.)")
		}
	case keyCtrlD:
		if r.typed.editor.empty() {
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
		if r.awaitingReply() {
			return
		}
		if len(r.typed.lines) == 0 {
			if r.typed.eof && r.ready && (r.ask.open != nil || !r.streaming()) {
				if r.ask.open != nil {
					r.quitWithOpenQuestion()
				} else {
					r.quit = true
				}
			}
			return
		}
		line := r.typed.lines[0]
		if !r.ready {
			// Lines wait for the conversation (so that a piped /quit
			// shows its history first), but once the connection has
			// dropped before it came, /quit does not: a relay that keeps
			// dropping the connection must not keep the user in.
			if cmd := strings.TrimSpace(line); r.dropped && (cmd == "/quit" || cmd == "/exit") {
				r.typed.lines = r.typed.lines[1:]
				r.echo(r.promptLabel(r.mode), cmd)
				r.quit = true
			}
			return
		}
		if r.confirm != nil {
			r.typed.lines = r.typed.lines[1:]
			r.answerConfirm(ctx, line)
			continue
		}
		if r.ask.open == nil && r.streaming() && !midStreamCommand(line) {
			return
		}
		r.typed.lines = r.typed.lines[1:]
		if p := r.ask.open; p != nil {
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

// awaitingReply: a page /list or /more asked for, or a diff of /diff, has
// not come yet. Piped lines wait for it, so that printf '/diff 1\n/quit\n'
// prints the diff (the /quit, or the input's end, ended the chat before it
// came: nothing was printed); a dropped connection forgets what it asked.
func (r *repl) awaitingReply() bool { return r.listAsked > 0 || r.diffAsked > 0 }
