package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/pilotdesk/pilotdesk/assets"
	"github.com/pilotdesk/pilotdesk/session"
	"github.com/pilotdesk/pilotdesk/session/copilot"
	"github.com/pilotdesk/pilotdesk/session/script"
)

// buildAgent makes the backend --agent names. auto picks the Copilot CLI when
// it can run (found, and signed in or given a provider URL), else the
// built-in demo, and logs which it picked and why.
func buildAgent(ctx context.Context, s relaySettings, logger *slog.Logger) (session.Agent, error) {
	switch s.Agent {
	case "script":
		return scriptAgent(s.Script)
	case "copilot":
		opts := copilotOptions(s, logger)
		probeCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := copilot.Probe(probeCtx, opts); err != nil {
			return nil, fmt.Errorf("the Copilot agent cannot start: %w", err)
		}
		return copilot.New(opts)
	default: // auto
		if s.Script != "" {
			logger.Info("agent: script", "why", "--script was given", "script", s.Script)
			return scriptAgent(s.Script)
		}
		opts := copilotOptions(s, logger)
		probeCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := copilot.Probe(probeCtx, opts); err != nil {
			logger.Info("agent: script (built-in demo)", "why", err.Error())
			return scriptAgent("")
		}
		logger.Info("agent: copilot", "why", "the Copilot CLI is installed and can run a turn")
		return copilot.New(opts)
	}
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

// scriptAgent loads a scenario file, or the built-in demo when path is empty.
func scriptAgent(path string) (session.Agent, error) {
	if path == "" {
		sc, err := script.Parse("built-in demo", assets.DemoScript)
		if err != nil {
			return nil, fmt.Errorf("the built-in demo script is broken: %w", err)
		}
		return script.New(sc), nil
	}
	sc, err := script.Load(path)
	if err != nil {
		return nil, err
	}
	return script.New(sc), nil
}
