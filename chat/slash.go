package chat

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// The REPL's slash commands (/help lists them); the checkpoints' own are
// in checkpoints.go.

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
  /undo         undo the last restore: put back what it changed
  /delete       delete this conversation and its history (asks first)
  /abort        stop the running turn (Ctrl+C does too)
  /quit         leave (Ctrl+D does too)`

// command runs a slash command, already echoed.
func (r *repl) command(ctx context.Context, text string) {
	fields, problem := commandWords(text)
	if problem != "" {
		r.note(styleWarn, problem)
		return
	}
	if r.checkpointCommand(ctx, text, fields) {
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
		cursor, ok := r.list.ask(fields[0] == "/more")
		if !ok {
			r.note(styleDim, "Nothing more to list: /list starts from the most recent again.")
			return
		}
		r.listAsked++
		r.request(ctx, "list the conversations", func(c context.Context) error {
			err := r.conn.ListPage(c, listPageSize, cursor)
			if err != nil {
				r.listAsked-- // no page will answer
			}
			return err
		})
	case "/switch":
		if len(fields) != 2 {
			r.note(styleWarn, "Usage: /switch N (a number from /list) or /switch ID.")
			return
		}
		id, problem := r.list.pick(fields[1])
		if problem != "" {
			r.note(styleWarn, problem)
			return
		}
		if err := r.switchTo(ctx, id); err != nil {
			r.note(styleError, err.Error())
		}
	case "/run":
		r.runPlan(ctx, strings.Join(fields[1:], ""))
	case "/delete":
		if r.turnBlocks("/delete") {
			return
		}
		r.askDelete()
	case "/abort":
		r.abort(ctx)
	case "/quit", "/exit":
		r.quit = true
	case "/help":
		for _, l := range strings.Split(helpText, "\n") {
			r.note(styleDim, l)
		}
	default:
		r.note(styleWarn, fmt.Sprintf("Unknown command %s. Commands: /plan /act /new /list /more /switch N /run /changes /diff N /restore N /undo /delete /abort /quit /help.", sanitize(fields[0])))
	}
}

// commandWords splits a command line into its words at spaces, where a
// word that starts with a quote (" or ') runs to the same quote followed
// by a space or the end of the line, quotes left out: `/new "~/my
// project"`, `/diff 2 'my file.txt'`. A quote inside a word is a letter
// (don't.txt), and a backslash is one too, so a Windows path stays as
// typed. An unclosed quote is a problem said in words.
func commandWords(text string) ([]string, string) {
	var words []string
	for rest := strings.TrimLeft(text, " \t"); rest != ""; rest = strings.TrimLeft(rest, " \t") {
		if q := rest[0]; q == '"' || q == '\'' {
			end := -1
			for i := 1; i < len(rest); i++ {
				if rest[i] == q && (i+1 == len(rest) || rest[i+1] == ' ' || rest[i+1] == '\t') {
					end = i
					break
				}
			}
			if end < 0 {
				return nil, fmt.Sprintf("The quote %c before %q is not closed: put the same quote after the name.", q, sanitize(rest[1:]))
			}
			words = append(words, rest[1:end])
			rest = rest[end+1:]
			continue
		}
		end := strings.IndexAny(rest, " \t")
		if end < 0 {
			end = len(rest)
		}
		words = append(words, rest[:end])
		rest = rest[end:]
	}
	return words, ""
}

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
			dir, err := expandHome(a)
			if err != nil {
				return nil, fmt.Sprintf("The folder %q: %v.", sanitize(a), err)
			}
			abs, err := filepath.Abs(dir)
			if err != nil {
				return nil, fmt.Sprintf("The folder %q: %v.", sanitize(a), err)
			}
			ws = &protocol.WorkspaceRequest{Path: abs}
		default:
			return nil, `Usage: /new [DIR] [--worktree]; a DIR with spaces in quotes: /new "~/my project".`
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

// expandHome turns a leading ~ (alone, or before a separator) into the
// user's home folder, as a shell would have: /new reads its folder from
// the prompt line, where no shell expands it, and `/new ~/src/api` would
// otherwise name a folder "~" inside the current one (docs/workspaces.md
// gives that very example). ~user is left as it is.
func expandHome(dir string) (string, error) {
	rest, ok := strings.CutPrefix(dir, "~")
	if !ok || (rest != "" && !os.IsPathSeparator(rest[0])) {
		return dir, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no home folder for ~: %w", err)
	}
	return home + rest, nil
}

// runPlan sends the chosen steps of the last plan (all when which is
// empty, else "2" or "1,3") as a turn in Act, and switches to Act.
func (r *repl) runPlan(ctx context.Context, which string) {
	if len(r.plan) == 0 {
		r.note(styleWarn, "No plan to run: a turn in Plan mode whose tool calls were denied makes one.")
		return
	}
	if r.turnBlocks("/run") {
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
