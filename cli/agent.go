package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/pilotdesk/pilotdesk/session"
	"github.com/pilotdesk/pilotdesk/session/acp"
	"github.com/pilotdesk/pilotdesk/session/copilot"
	"github.com/pilotdesk/pilotdesk/session/script"
	"github.com/pilotdesk/pilotdesk/settings"
)

// buildAgent makes the backend --agent names. auto picks the Copilot CLI when
// it can run (found, and signed in or given a provider URL), else the
// built-in demo, and logs which it picked and why. demoReason is set when
// auto fell back to the demo because the Copilot CLI cannot run: why, for a
// person (the window's first-run notice).
func buildAgent(ctx context.Context, s relaySettings, logger *slog.Logger) (_ session.Agent, demoReason string, _ error) {
	switch s.Agent {
	case "script":
		a, err := scriptAgent(s, logger)
		return a, "", err
	case settings.AgentACP:
		a, err := acpAgent(ctx, s, logger)
		return a, "", err
	case "copilot":
		a, err := startCopilot(ctx, s, logger)
		if err != nil {
			return nil, "", fmt.Errorf("the Copilot agent cannot start: %w", err)
		}
		return a, "", nil
	default: // auto
		if s.Script != "" {
			logger.Info("agent: script", "why", "--script was given", "script", s.Script)
			a, err := scriptAgent(s, logger)
			return a, "", err
		}
		a, err := startCopilot(ctx, s, logger)
		if err != nil {
			logger.Info("agent: script (built-in demo)", "why", err.Error())
			s.Script = ""
			a, err2 := scriptAgent(s, logger)
			return a, whyDemo(s, err), err2
		}
		logger.Info("agent: copilot", "why", "the Copilot CLI is installed and can run a turn")
		return a, "", nil
	}
}

// startCopilot starts the Copilot CLI and checks, within 30 s, that it can
// run a turn; the CLI the check starts serves the first turn too.
func startCopilot(ctx context.Context, s relaySettings, logger *slog.Logger) (*copilot.Agent, error) {
	probeCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return copilot.Start(probeCtx, copilotOptions(s, logger))
}

// whyDemo words an agent's start failure for the first-run notice. For
// the Copilot CLI that --agent auto probed, the three failures a new user
// meets most (not installed, not signed in, too old) get a plain
// sentence, because the notice goes on to say how to install the CLI and
// sign in: the backend's own words there repeated that install hint with
// a command-line flag the window has no use for. Any other failure (a file
// that may not be run, an ACP agent's) is said in the backend's own
// words, those the relay logs and serve prints, which name the file or
// setting at fault and what to do.
func whyDemo(s relaySettings, err error) string {
	if s.Agent == settings.AgentAuto {
		switch {
		case errors.Is(err, session.ErrAgentNotFound) && s.CopilotPath != "":
			return fmt.Sprintf("No GitHub Copilot CLI was found at %s.", s.CopilotPath)
		case errors.Is(err, session.ErrAgentNotFound):
			return "No GitHub Copilot CLI was found on this computer."
		case errors.Is(err, session.ErrNotSignedIn):
			return "The GitHub Copilot CLI is installed but not signed in."
		case errors.Is(err, session.ErrProtocolMismatch):
			return "The installed GitHub Copilot CLI is a version pilotdesk cannot talk to (update it)."
		}
	}
	msg := strings.TrimSpace(err.Error())
	if r, size := utf8.DecodeRuneInString(msg); r != utf8.RuneError {
		msg = string(unicode.ToUpper(r)) + msg[size:]
	}
	if !strings.HasSuffix(msg, ".") {
		msg += "."
	}
	return msg
}

func copilotOptions(s relaySettings, logger *slog.Logger) copilot.Options {
	workDir := s.WorkDir
	if workDir == "" {
		workDir, _ = os.Getwd()
	}
	return copilot.Options{
		Path:         s.CopilotPath,
		Model:        s.Model,
		WorkDir:      workDir,
		ProviderURL:  s.ProviderURL,
		ProviderType: s.ProviderType,
		ProviderKey:  s.ProviderKey,
		Logger:       logger,
	}
}

// acpAgent starts the ACP agent --acp-command names (`auto` never picks
// it) and checks it answers initialize, so that a missing or broken agent
// stops the relay at start rather than at the first prompt. Each
// conversation's ACP session id is kept in the data dir, so a restarted
// relay resumes it.
func acpAgent(ctx context.Context, s relaySettings, logger *slog.Logger) (session.Agent, error) {
	a, err := acp.New(acpOptions(s, logger))
	if err != nil {
		return nil, err
	}
	probeCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := a.Probe(probeCtx); err != nil {
		a.Close()
		return nil, fmt.Errorf("the ACP agent cannot start: %w", err)
	}
	logger.Info("agent: acp", "command", s.ACPCommand)
	return a, nil
}

// acpOptions are the ACP backend's options for the relay's settings.
func acpOptions(s relaySettings, logger *slog.Logger) acp.Options {
	sessionMap := ""
	if s.DataDir != memoryDataDir {
		sessionMap = filepath.Join(s.DataDir, "acp-sessions.json")
	}
	// The settings spell "never" and "no bound" 0, which acp.Options
	// reads as its defaults: a negative value turns them off there.
	idleClose, maxOpen := s.ACPIdleClose, s.ACPMaxSessions
	if idleClose == 0 {
		idleClose = -1
	}
	if maxOpen == 0 {
		maxOpen = -1
	}
	return acp.Options{
		Command:       s.ACPCommand,
		WorkDir:       s.WorkDir,
		Env:           settings.ACPProviderEnv(s.ACPCommand, s.ProviderURL, s.ProviderKey, s.Model),
		Logger:        logger,
		SessionMap:    sessionMap,
		ClientVersion: Version,
		IdleClose:     idleClose,
		MaxOpen:       maxOpen,
	}
}

// demoAccountFile, in the data dir, keeps the built-in demo's premium
// requests used.
const demoAccountFile = "demo-account.json"

// scriptAgent loads the scenario file s.Script, or the built-in demo when
// it is empty, whose premium requests used are kept in the data dir
// (demoAccountFile) so that they add up across restarts.
func scriptAgent(s relaySettings, logger *slog.Logger) (session.Agent, error) {
	path := s.Script
	if path == "" {
		sc, err := script.Demo()
		if err != nil {
			return nil, fmt.Errorf("the built-in demo script is broken: %w", err)
		}
		opts := script.DemoOptions{Logger: logger}
		if s.DataDir != "" && s.DataDir != memoryDataDir {
			opts.AccountFile = filepath.Join(s.DataDir, demoAccountFile)
		}
		return script.NewDemo(sc, opts), nil
	}
	sc, err := script.Load(path)
	if err != nil {
		return nil, err
	}
	return script.New(sc), nil
}
