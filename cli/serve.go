package cli

import (
	"context"
	"flag"
	"log/slog"
	"time"
)

// runServe runs the relay alone until ctx ends (SIGINT/SIGTERM).
func runServe(ctx context.Context, args []string, env Env) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var s relaySettings
	s.register(fs, env.Getenv, true)
	if err := parseFlags(fs, args, env.Stdout); err != nil {
		return err
	}
	if err := s.validate(fromCommandLine); err != nil {
		return err
	}
	level := slog.LevelInfo
	if s.Verbose {
		level = slog.LevelDebug
	}
	logger := newLogger(env.Stderr, level)
	// For measuring a relay under load (make bench-nats, tools/load).
	waitPprof, err := servePprof(ctx, env, logger)
	if err != nil {
		return err
	}
	defer waitPprof()
	made := serveToken(&s) // auth.go

	st, err := startStack(ctx, s, logger)
	if err != nil {
		return err
	}
	announceAuth(s, made, st.running, env.Stdout, logger)
	// The token is never logged: only whether there is one.
	logger.Info("relay listening", "url", st.URL, "agent", st.Agent.Name(), "auth", st.Token != "", "version", Version)

	select {
	case <-ctx.Done():
		if s.NATS.URLs != "" && s.NATS.URLs != natsEmbedded && s.NATS.DrainTimeout > 0 {
			// A deploy: clients move, running turns end, conversations
			// go to the other relays (relay.Drain).
			logger.Info("draining: clients move to the other relays; running turns may take up to --drain-timeout", "drainTimeout", s.NATS.DrainTimeout)
			dctx, cancel := context.WithTimeout(context.Background(), s.NATS.DrainTimeout)
			st.Relay.Drain(dctx)
			cancel()
		}
		logger.Info("shutting down: aborting open streams and flushing history")
	case err := <-st.served:
		st.served <- err // Close reads it again
		logger.Error("relay stopped serving", "err", err)
	}
	closeCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := st.Close(closeCtx); err != nil {
		logger.Error("shutdown", "err", err)
		return err
	}
	logger.Info("stopped")
	return nil
}
