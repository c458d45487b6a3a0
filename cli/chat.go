package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/google/uuid"

	"github.com/pilotdesk/pilotdesk/chat"
	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// runChat runs the terminal client (`pilotdesk chat`, docs/cli.md, The
// terminal client) on an embedded relay or, with --connect, a remote one.
//
// Logs: the embedded relay and the client must not write over the REPL.
// With --log-file everything from info up (debug with --verbose) goes to
// that file; without it, info and debug are dropped and warnings and errors
// are shown in the REPL as dim "log:" lines, between its own output (and on
// stderr for what comes after the REPL has ended).
func runChat(ctx context.Context, args []string, env Env) error {
	fs := flag.NewFlagSet("chat", flag.ContinueOnError)
	var cf clientFlags
	cf.register(fs, env.Getenv)
	conversation := fs.String("conversation", "", "resume the conversation with this `ID`: replay it, then go on (default: a new conversation)")
	workspace := fs.String("workspace", "", "start the new conversation in this folder `DIR` (the relay's default folder when not given)")
	worktree := fs.Bool("worktree", false, "with --workspace: work on a branch of its own, in a git worktree of DIR's repository")
	logFile := fs.String("log-file", "", "write the relay's and the client's logs to `FILE` (default: warnings and errors show in the chat, the rest is dropped)")
	if err := parseFlags(fs, args, env.Stdout); err != nil {
		return err
	}
	if err := cf.validate(fromCommandLine); err != nil {
		return err
	}
	var ws *protocol.WorkspaceRequest
	if *workspace != "" {
		abs, err := filepath.Abs(*workspace)
		if err != nil {
			return usageError("--workspace %q: %v", *workspace, err)
		}
		ws = &protocol.WorkspaceRequest{Path: abs}
		if *worktree {
			ws.Isolation = protocol.IsolationWorktree
		}
	} else if *worktree {
		return usageError("--worktree needs --workspace DIR: the folder whose repository the worktree is made of")
	}
	if ws != nil && *conversation != "" {
		return usageError("--workspace is for a new conversation; --conversation resumes one that has its folder already")
	}
	if *conversation != "" {
		if _, err := uuid.Parse(*conversation); err != nil {
			return usageError("--conversation must be a conversation ID (a UUID, as /list shows), not %q", *conversation)
		}
	}

	var sink *chat.LogSink
	var logger *slog.Logger
	if *logFile != "" {
		f, err := os.OpenFile(*logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("opening the log file: %w", err)
		}
		defer f.Close()
		level := slog.LevelInfo
		if cf.relay.Verbose {
			level = slog.LevelDebug
		}
		logger = newLogger(f, level)
	} else {
		sink = chat.NewLogSink()
		logger = slog.New(sink.Handler(slog.LevelWarn))
	}

	tgt, stop, err := cf.startTarget(ctx, logger)
	if err != nil {
		flushLogs(sink, env.Stderr)
		return err
	}
	defer func() {
		stop()
		flushLogs(sink, env.Stderr)
	}()

	ccfg := client.Config{URL: tgt.URL, Token: tgt.Token, Kind: protocol.ClientTerminal, HTTPClient: pinnedClient(tgt.Fingerprint), Logger: logger}
	if tgt.Attached != "" {
		ccfg.Relocate = followRunning(tgt.dataDir)
	}
	conn, err := ccfg.Dial(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if dir := chatDataDir(cf.relay.DataDir, logger); dir != "" {
		// Before the replay: the chat's own earlier prompts are its own.
		chat.NewIdentityFile(filepath.Join(dir, chat.IdentityFileName), logger).Keep(conn.Identity())
	}

	if *conversation == "" && tgt.attachedTo != nil {
		// Attached to a running app: go on where its window is, or in
		// the latest conversation, rather than in a new, empty one.
		*conversation = attachConversation(ctx, tgt.dataDir, *tgt.attachedTo, ccfg, logger)
	}

	term, in, restore, err := chatTerminal(env)
	if err != nil {
		return err
	}
	defer restore()

	name := tgt.Title()
	if !tgt.Embedded && tgt.Attached == "" {
		name = "relay " + name
	}
	return chat.Run(ctx, chat.Config{
		Conn:           conn,
		In:             in,
		Out:            env.Stdout,
		Term:           term,
		ConversationID: *conversation,
		Workspace:      ws,
		Relay:          name,
		Logs:           sink,
	})
}

// followRunning keeps a chat attached to whichever relay runs on dataDir:
// when its relay goes away (the window quit, or restarted its relay on a
// new port; serve stopped and another started) the client re-reads the
// file the relay there leaves (running.go) and moves to the relay it
// names, with its URL and token.
//
// When the file names no relay, the chat goes on saying it is reconnecting
// (then offline) and keeps looking, as it does for a remote relay, rather
// than exiting: the user who quits the window or restarts serve usually
// means to start it again, the chat keeps their place in the conversation
// and picks it up when a relay comes back, and Ctrl-D or /quit ends it
// whenever they want; an exit would lose that for a pause of seconds.
func followRunning(dataDir string) func(context.Context) (client.Endpoint, error) {
	return func(context.Context) (client.Endpoint, error) {
		r, err := readRunning(dataDir)
		if err != nil {
			return client.Endpoint{}, err
		}
		return client.Endpoint{URL: r.URL, Token: r.Token, HTTPClient: pinnedClient(r.Fingerprint)}, nil
	}
}

// chatDataDir is where chat keeps who it was on each relay (its data dir,
// the user's by default, as for --connect, which validates none), or ""
// to keep nothing: with --data-dir :memory: nothing outlives the run.
func chatDataDir(dataDir string, logger *slog.Logger) string {
	switch dataDir {
	case memoryDataDir:
		return ""
	case "":
		dir, err := userDataDir()
		if err != nil {
			logger.Warn("chat: no data dir to keep who this terminal is in", "err", err)
			return ""
		}
		return dir
	}
	return dataDir
}

// chatTerminal looks at the process's terminal when stdin and stdout are
// files; anything else (a test's buffers) gets plain lines.
func chatTerminal(env Env) (chat.Terminal, io.Reader, func(), error) {
	stdin, inOK := env.Stdin.(*os.File)
	stdout, outOK := env.Stdout.(*os.File)
	if !inOK || !outOK {
		return chat.Terminal{}, env.Stdin, func() {}, nil
	}
	return chat.OpenTerminal(stdin, stdout, env.Getenv)
}

// flushLogs prints the log lines the REPL did not show.
func flushLogs(sink *chat.LogSink, w io.Writer) {
	if sink == nil {
		return
	}
	lines, dropped := sink.Take()
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
	if dropped > 0 {
		fmt.Fprintf(w, "(%d more log lines were dropped)\n", dropped)
	}
}
