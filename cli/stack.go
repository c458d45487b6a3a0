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
	"unicode/utf8"

	"github.com/pilotdesk/pilotdesk/internal/ownerfile"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/checkpoint"
	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/history/jetstream"
	"github.com/pilotdesk/pilotdesk/relay/history/sqlite"
	"github.com/pilotdesk/pilotdesk/relay/workspace"
	"github.com/pilotdesk/pilotdesk/session"
)

// stack is a running relay with its agent and history store: what `serve`
// runs, and what the window and the terminal client embed.
type stack struct {
	Relay *relay.Relay
	Agent session.Agent
	// DemoReason says why --agent auto picked the built-in demo instead
	// of the Copilot CLI ("" when it did not).
	DemoReason string
	// CheckpointsOff says why the relay records no checkpoints ("" when
	// it does).
	CheckpointsOff string
	Store          history.Store
	// Spaces are the relay's workspaces: its roots and default folder.
	Spaces *workspace.Set
	URL    string // ws://… or wss://…
	Token  string
	logger *slog.Logger
	// running is the file that tells other processes of this user how to
	// reach the relay (running.go); "" without a data dir.
	running string
	// LocalURL is how this machine reaches the relay (the loopback for a
	// relay on every address); LAN is the HOST:PORT devices on the
	// network use ("" when it listens on the loopback only, or has no
	// private address), Fingerprint its certificate's SHA-256 when it is
	// its own (hex), and CAFingerprint that of the local CA that issued it.
	LocalURL      string
	LAN           string
	Fingerprint   string
	CAFingerprint string
	// TLSName is the host name the --tls-cert certificate is for, which
	// devices' links carry in place of the address ("" when it names
	// none).
	TLSName string

	server *http.Server
	served chan error
	// The setup page's server and the port it shares with server, for a
	// relay reachable from the network (lansetup.go); nil otherwise.
	setup       *http.Server
	setupServed chan error
	ports       *portMux
	stopPrune   context.CancelFunc
	pruneDone   chan struct{}
	// scratch is a folder of the stack's own removed at Close (the
	// checkpoints' of a relay with no data dir); "" when none.
	scratch string
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

	if err := refuseWeakToken(s); err != nil {
		return nil, err
	}
	if err := st.openHistory(ctx, s, logger); err != nil {
		return nil, err
	}
	if err := refuseClearDevices(ctx, s, st.Store); err != nil {
		return nil, err
	}
	if err := refuseOpenDevices(ctx, s, st.Store); err != nil { // auth.go
		return nil, err
	}

	agent, demoReason, err := buildAgent(ctx, s, logger)
	if err != nil {
		return nil, err
	}
	st.Agent = agent
	st.DemoReason = demoReason

	cps, cpsOff := openCheckpoints(s, st, logger)
	st.CheckpointsOff = cpsOff
	spaces, err := workspaces(s)
	if err != nil {
		return nil, err
	}
	st.Spaces = spaces

	push, err := pushConfig(s.DataDir) // push.go
	if err != nil {
		return nil, err
	}

	inputTimeout := s.InputTimeout
	if inputTimeout == 0 {
		inputTimeout = -1 // the relay's "wait forever"
	}
	r, err := relay.New(relay.Config{
		Agent:            agent,
		Store:            st.Store,
		Cluster:          clusterOf(st.Store),
		Token:            s.Token,
		HeartbeatTimeout: s.HeartbeatTimeout,
		InputTimeout:     inputTimeout,
		Logger:           logger,
		BudgetCredits:    s.BudgetCredits,
		BudgetPeriod:     s.BudgetPeriod,
		Checkpoints:      cps,
		CheckpointsOff:   cpsOff,
		WorkDir:          s.WorkDir,
		Workspaces:       spaces,
		Push:             push,
		CommitInterval:   s.commitInterval,
	})
	if err != nil {
		return nil, fmt.Errorf("starting the relay: %w", err)
	}
	st.Relay = r
	if s.HistoryMaxAge > 0 {
		pruneCtx, stop := context.WithCancel(context.Background())
		st.stopPrune, st.pruneDone = stop, make(chan struct{})
		// The store of a cluster was not pruned at its opening: the
		// relay prunes it now.
		go st.prune(pruneCtx, s.HistoryMaxAge, time.Hour, clusterOf(st.Store) != nil)
	}

	if err := st.listen(s, r); err != nil {
		return nil, err
	}
	return st, nil
}

// refuseWeakToken refuses to listen on the network without a token, or
// with one short enough to be guessed.
func refuseWeakToken(s relaySettings) error {
	if s.Token == "" && relay.RequiresToken(s.Listen) && !s.InsecureNoAuth {
		return usageError("refusing to listen on %s without a token: anyone who can reach it could run commands through the agent. Set --token (or PILOTDESK_TOKEN), listen on 127.0.0.1, or pass --insecure-no-auth", s.Listen)
	}
	if n := utf8.RuneCountInString(s.Token); s.Token != "" && n < minTokenLength && relay.RequiresToken(s.Listen) {
		// On the network a short token is guessed; on loopback serve
		// warns of it (announceAuth) and the throttle of wrong tokens
		// slows the guessing of another local user.
		return usageError("refusing to listen on %s with a token of %d characters: anyone who can reach it could guess one under %d. "+
			"Make a longer one (openssl rand -hex 32), or listen on 127.0.0.1", s.Listen, n, minTokenLength)
	}
	return nil
}

// openHistory makes the data dir and opens the history store: on NATS, in
// memory, or in the data dir, whose conversations older than
// --history-max-age it drops first.
func (st *stack) openHistory(ctx context.Context, s relaySettings, logger *slog.Logger) error {
	if s.DataDir != memoryDataDir {
		// A fresh host has no data dir yet (the default one included):
		// made here, its owner's alone, for every store, since the relay
		// keeps relay.json, keys and checkpoints there even when its
		// history is on a NATS cluster.
		if err := ownerfile.MkdirAll(s.DataDir); err != nil {
			return fmt.Errorf("the data dir cannot be made (choose another with --data-dir): %w", err)
		}
	}
	if s.NATS.URLs != "" {
		store, err := openNATSStoreWaiting(ctx, s, logger)
		if err != nil {
			return err
		}
		st.Store = store
		return nil
	}
	if s.DataDir == memoryDataDir {
		st.Store = history.NewMemory()
		return nil
	}
	// The store locks the data dir: a second relay on it is refused. A
	// relay with --nats embedded (serve) holds its node instead, which
	// SQLite's lock does not see: refused alike, so that a window or a
	// chat attaches to it (startTarget) rather than run a second relay.
	if held, err := jetstream.NodeHeld(s.DataDir); err != nil {
		return fmt.Errorf("opening the history in %s: %w", s.DataDir, err)
	} else if held {
		return fmt.Errorf("opening the history in %s (a relay running on it with --nats embedded holds it: use that relay, or stop it first): its NATS node is %w", s.DataDir, jetstream.ErrInUse)
	}
	store, err := sqlite.Open(ctx, s.DataDir, sqlite.Options{Logger: logger})
	if err != nil {
		return fmt.Errorf("opening the history in %s: %w", s.DataDir, err)
	}
	st.Store = store
	logger.Info("history", "dir", s.DataDir)
	// Retention runs before the relay loads the conversations, so the
	// relay never holds one the store has dropped.
	if s.HistoryMaxAge > 0 {
		n, err := store.DeleteOlderThan(ctx, time.Now().Add(-s.HistoryMaxAge))
		if err != nil {
			return fmt.Errorf("dropping conversations older than %v: %w", s.HistoryMaxAge, err)
		}
		logger.Info("history retention", "dropped", n, "maxAge", s.HistoryMaxAge)
	}
	return nil
}

// listen serves r on s.Listen, over TLS with --tls-cert or the LAN's own
// certificate, and writes where it listens for this user's other
// processes (running.go). On error, what it opened is closed here or by
// the stack's Close.
func (st *stack) listen(s relaySettings, r *relay.Relay) error {
	ln, err := net.Listen("tcp", s.Listen)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("cannot listen on %s: the port is in use (is another pilotdesk running? pick another with --listen)", s.Listen)
		}
		return fmt.Errorf("cannot listen on %s: %w", s.Listen, err)
	}
	scheme := "ws"
	st.server = &http.Server{
		Handler:           r.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		// A keep-alive connection that sends nothing after a response is
		// closed (none was, issue #33: 20,050 idle ones used every file
		// descriptor and the owner could not connect). An open WebSocket
		// is hijacked and is the heartbeat's business.
		IdleTimeout: 60 * time.Second,
		ErrorLog:    slog.NewLogLogger(st.logger.Handler(), slog.LevelWarn),
		// One address holds a bounded number of connections until it has
		// a WebSocket open (relay.Config.MaxConnectionsPerAddress).
		ConnState: r.ConnState,
	}
	if s.TLSCert != "" || s.lanCert != nil {
		var cert tls.Certificate
		if s.lanCert != nil {
			cert = s.lanCert.Cert
			st.Fingerprint, st.CAFingerprint = fingerprint(cert), s.lanCert.CAFingerprint()
			_, port, _ := net.SplitHostPort(ln.Addr().String())
			if ips := lanAddresses(); len(ips) > 0 {
				st.LAN = net.JoinHostPort(ips[0].String(), port)
			}
			if ln, err = st.serveSetup(ln, s.lanCert, r); err != nil {
				return err
			}
		} else if cert, err = tls.LoadX509KeyPair(s.TLSCert, s.TLSKey); err != nil {
			ln.Close()
			return fmt.Errorf("loading the TLS certificate %s and key %s: %w", s.TLSCert, s.TLSKey, err)
		} else {
			// The clients of this user on this computer (relay.json) pin
			// it: they reach the relay at the address it listens on,
			// which a certificate for a name (tailscale cert's) does not
			// name. Devices get links with that name (certName).
			st.Fingerprint, st.TLSName = fingerprint(cert), certName(cert)
		}
		st.server.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		ln = tls.NewListener(ln, st.server.TLSConfig)
		scheme = "wss"
	}
	st.URL = fmt.Sprintf("%s://%s/ws", scheme, ln.Addr())
	st.LocalURL = localURL(scheme, ln.Addr())
	st.served = make(chan error, 1)
	go func() { st.served <- st.server.Serve(ln) }()
	if s.DataDir != memoryDataDir {
		// `pilotdesk chat` and `pilotdesk token` of this user find the
		// relay through it (it holds the owner's token: 0600).
		path, err := writeRunning(s.DataDir, runningRelay{URL: st.LocalURL, Token: s.Token, PID: os.Getpid(), LAN: st.LAN, Fingerprint: st.Fingerprint,
			CAFingerprint: st.CAFingerprint, Name: st.TLSName,
			ClearNetwork: scheme == "ws" && relay.RequiresToken(s.Listen)})
		if err != nil {
			return err
		}
		st.running = path
	}
	return nil
}

// serveSetup serves the setup page in plain HTTP on ln's port and returns
// the listener of the rest, the TLS connections.
func (st *stack) serveSetup(ln net.Listener, lan *lanTLS, r *relay.Relay) (net.Listener, error) {
	h, err := lanSetupHandler(lan.CA)
	if err != nil {
		ln.Close()
		return nil, err
	}
	st.ports = newPortMux(ln, st.logger)
	st.setup = &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(st.logger.Handler(), slog.LevelWarn),
		// Its connections count with the relay's against an address's
		// bound.
		ConnState: r.ConnState,
	}
	st.setupServed = make(chan error, 1)
	go func() { st.setupServed <- st.setup.Serve(st.ports.plain) }()
	return st.ports.tls, nil
}

// prune drops conversations untouched for longer than maxAge, every
// interval, while the relay runs (a relay is left running for days), and
// once at the start when now says so.
func (st *stack) prune(ctx context.Context, maxAge, interval time.Duration, now bool) {
	defer close(st.pruneDone)
	pass := func() {
		if n := st.Relay.PruneIdle(ctx, time.Now().Add(-maxAge)); n > 0 {
			st.logger.Info("history retention: dropped old conversations", "count", n, "maxAge", maxAge)
		}
	}
	if now {
		pass()
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			pass()
		}
	}
}

// Close stops serving, aborts open streams, flushes the history and stops
// the agent. It is safe on a partly started stack.
func (st *stack) Close(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	var errs []error
	if st.stopPrune != nil {
		st.stopPrune()
		<-st.pruneDone
	}
	removeRunning(st.running) // no new client comes to a relay that stops
	if st.Relay != nil {
		// The relay closes its WebSocket connections (they are hijacked, so
		// http.Server.Shutdown does not wait for them).
		errs = append(errs, st.Relay.Close(ctx))
	}
	if st.server != nil {
		errs = append(errs, st.server.Shutdown(ctx))
		// served is nil when the start failed before serving (a
		// certificate that did not load).
		if st.served != nil {
			if err := <-st.served; err != nil && !errors.Is(err, http.ErrServerClosed) {
				errs = append(errs, err)
			}
		}
	}
	if st.setup != nil {
		errs = append(errs, st.setup.Shutdown(ctx))
		if err := <-st.setupServed; err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
	}
	if st.ports != nil {
		errs = append(errs, st.ports.Close())
	}
	if st.Agent != nil {
		errs = append(errs, st.Agent.Close())
	}
	if st.Store != nil {
		errs = append(errs, st.Store.Close())
	}
	if st.scratch != "" {
		errs = append(errs, os.RemoveAll(st.scratch))
	}
	return errors.Join(errs...)
}

// randomToken returns a fresh token for the embedded relay.
func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// openCheckpoints opens the store of the turns' snapshots (docs/checkpoints.md)
// in the data dir, or in a folder of the stack's own without one. Without
// git it returns nil and why, which the log says once.
func openCheckpoints(s relaySettings, st *stack, logger *slog.Logger) (*checkpoint.Store, string) {
	dir := s.DataDir
	if dir == memoryDataDir {
		tmp, err := os.MkdirTemp("", "pilotdesk-checkpoints-")
		if err != nil {
			why := "checkpoints are off: " + err.Error()
			logger.Warn(why)
			return nil, why
		}
		st.scratch, dir = tmp, tmp
	}
	cps, err := checkpoint.New(dir)
	if err != nil {
		logger.Warn(err.Error())
		return nil, err.Error()
	}
	return cps, ""
}

// workspaces are the relay's workspaces (docs/workspaces.md): its roots,
// its default folder (--workdir), and its worktrees under the data dir
// (none when it keeps history in memory).
func workspaces(s relaySettings) (*workspace.Set, error) {
	worktrees := ""
	if s.DataDir != memoryDataDir {
		worktrees = filepath.Join(s.DataDir, "worktrees")
	}
	set, err := workspace.New(workspace.Options{Roots: s.WorkspaceRoots.List(), Default: s.WorkDir, WorktreeDir: worktrees})
	if err != nil {
		return nil, usageError("%v", err)
	}
	return set, nil
}
