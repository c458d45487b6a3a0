package cli

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/history/sqlite"
	"github.com/pilotdesk/pilotdesk/session"
)

// stack is a running relay with its agent and history store: what `serve`
// runs, and what the window and the terminal client embed.
type stack struct {
	Relay  *relay.Relay
	Agent  session.Agent
	Store  history.Store
	URL    string // ws://… or wss://…
	Token  string
	logger *slog.Logger

	server   *http.Server
	served   chan error
	unlock   func()
	stopJobs context.CancelFunc
	jobsDone chan struct{}
}

// startStack opens the history store, builds the agent, starts the relay
// and listens on s.Listen. Everything it started is stopped again if a later
// step fails.
func startStack(ctx context.Context, s relaySettings, logger *slog.Logger) (_ *stack, err error) {
	st := &stack{Token: s.Token, logger: logger}
	defer func() {
		if err != nil {
			st.Close(context.Background())
		}
	}()

	if s.Token == "" && relay.RequiresToken(s.Listen) && !s.InsecureNoAuth {
		return nil, usageError("refusing to listen on %s without a token: anyone who can reach it could run commands through the agent. Set --token (or PILOTDESK_TOKEN), listen on 127.0.0.1, or pass --insecure-no-auth", s.Listen)
	}

	if s.DataDir == memoryDataDir {
		st.Store = history.NewMemory()
	} else {
		unlock, err := lockDataDir(s.DataDir)
		if err != nil {
			return nil, err
		}
		st.unlock = unlock
		store, err := sqlite.Open(ctx, s.DataDir, sqlite.Options{})
		if err != nil {
			return nil, fmt.Errorf("opening the history in %s: %w", s.DataDir, err)
		}
		st.Store = store
		logger.Info("history", "dir", s.DataDir)
	}

	agent, err := buildAgent(ctx, s, logger)
	if err != nil {
		return nil, err
	}
	st.Agent = agent

	inputTimeout := s.InputTimeout
	if inputTimeout == 0 {
		inputTimeout = -1 // the relay's "wait forever"
	}
	r, err := relay.New(relay.Config{
		Agent:            agent,
		Store:            st.Store,
		Token:            s.Token,
		HeartbeatTimeout: s.HeartbeatTimeout,
		InputTimeout:     inputTimeout,
		Logger:           logger,
	})
	if err != nil {
		return nil, fmt.Errorf("starting the relay: %w", err)
	}
	st.Relay = r

	jobsCtx, stopJobs := context.WithCancel(context.Background())
	st.stopJobs, st.jobsDone = stopJobs, make(chan struct{})
	go func() {
		defer close(st.jobsDone)
		st.retention(jobsCtx, s.HistoryMaxAge)
	}()

	ln, err := net.Listen("tcp", s.Listen)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("cannot listen on %s: the port is in use (is another pilotdesk running? pick another with --listen)", s.Listen)
		}
		return nil, fmt.Errorf("cannot listen on %s: %w", s.Listen, err)
	}
	scheme := "ws"
	st.server = &http.Server{
		Handler:           r.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	if s.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(s.TLSCert, s.TLSKey)
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("loading the TLS certificate %s and key %s: %w", s.TLSCert, s.TLSKey, err)
		}
		st.server.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		ln = tls.NewListener(ln, st.server.TLSConfig)
		scheme = "wss"
	}
	st.URL = fmt.Sprintf("%s://%s/ws", scheme, ln.Addr())
	st.served = make(chan error, 1)
	go func() { st.served <- st.server.Serve(ln) }()
	return st, nil
}

// retention drops conversations untouched for longer than maxAge, at start
// and then hourly.
func (st *stack) retention(ctx context.Context, maxAge time.Duration) {
	pruner, ok := st.Store.(interface {
		DeleteOlderThan(context.Context, time.Time) (int, error)
	})
	if maxAge <= 0 || !ok {
		return
	}
	for {
		n, err := pruner.DeleteOlderThan(ctx, time.Now().Add(-maxAge))
		switch {
		case err != nil && ctx.Err() == nil:
			st.logger.Error("history retention", "err", err)
		case n > 0:
			st.logger.Info("history retention: dropped old conversations", "count", n, "maxAge", maxAge)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Hour):
		}
	}
}

// Close stops serving, aborts open streams, flushes the history and stops
// the agent. It is safe on a partly started stack.
func (st *stack) Close(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	var errs []error
	if st.Relay != nil {
		// The relay closes its WebSocket connections (they are hijacked, so
		// http.Server.Shutdown does not wait for them).
		errs = append(errs, st.Relay.Close(ctx))
	}
	if st.server != nil {
		errs = append(errs, st.server.Shutdown(ctx))
		if err := <-st.served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
	}
	if st.stopJobs != nil {
		st.stopJobs()
		<-st.jobsDone
	}
	if st.Agent != nil {
		errs = append(errs, st.Agent.Close())
	}
	if st.Store != nil {
		errs = append(errs, st.Store.Close())
	}
	if st.unlock != nil {
		st.unlock()
	}
	return errors.Join(errs...)
}

// randomToken returns a fresh token for the embedded relay.
func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// lockDataDir takes an exclusive lock on the data dir so that two relays never
// write the same history (their seqs would collide).
func lockDataDir(dir string) (func(), error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the data dir %s: %w", dir, err)
	}
	path := filepath.Join(dir, "relay.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("the data dir %s is in use by another pilotdesk relay (%w); stop it, or pass another --data-dir", dir, err)
	}
	return func() { unlockFile(f); f.Close() }, nil
}
