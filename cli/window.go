package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/pilotdesk/pilotdesk/internal/ownerfile"
	"github.com/pilotdesk/pilotdesk/session"
	"log/slog"
	"net/url"
	"os"
	"time"

	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/history/jetstream"
	"github.com/pilotdesk/pilotdesk/relay/history/sqlite"
	"github.com/pilotdesk/pilotdesk/relay/workspace"
	"github.com/pilotdesk/pilotdesk/settings"
)

// target is the relay a client (the window or the terminal client) talks to.
type target struct {
	URL      string
	Token    string
	Embedded bool // the relay runs in this process
	// Attached names the process whose relay, on the same data dir, this
	// client attached to instead of starting one ("" when it did not).
	Attached string
	// Fingerprint pins the relay's self-signed TLS certificate (hex
	// SHA-256), for an attached relay that serves wss://.
	Fingerprint string
	Agent       string // the embedded relay's agent backend
	AgentLabel  string // that agent as people know it ("OpenCode (ACP)"), when its backend says
	// relay is the embedded relay, for its device tokens; lan is where
	// devices on the network reach it ("" when they cannot), sharedURL
	// the URL it listens on, caFingerprint the SHA-256 of the local CA
	// that issued its certificate (hex; localca.go).
	relay         *relay.Relay
	lan           string
	sharedURL     string
	caFingerprint string
	// attachedTo is the running relay's file an attached target read, and
	// dataDir the data dir it shares with it: the window manages that
	// relay's device tokens through the data dir (devices.go).
	attachedTo *runningRelay
	dataDir    string
	// tokensInNATS: the attached relay keeps its device tokens in the
	// data dir's embedded NATS node, which it holds, not in the SQLite
	// devices table the window would otherwise change (devices.go).
	tokensInNATS bool
	// DemoReason: why --agent auto picked the built-in demo ("" if not).
	DemoReason string
	// spaces are the embedded relay's workspaces (nil for another
	// relay): the window checks its default folder against their roots.
	spaces *workspace.Set
	// checkpointsOff: why the embedded relay records no checkpoints.
	checkpointsOff string
}

// Title names the relay for a window title: "embedded" or the remote host.
func (t target) Title() string {
	if t.Embedded {
		return "embedded relay, " + t.Agent + " agent"
	}
	if t.Attached != "" {
		return "the relay of " + t.Attached
	}
	if u, err := url.Parse(t.URL); err == nil && u.Host != "" {
		return u.Host
	}
	return t.URL
}

// clientFlags are the flags of the window and of the terminal client:
// every setting of the settings table (relay.Settings, the connection's
// included) and the embedded relay's own flags.
type clientFlags struct {
	relay relaySettings
	// ownerToken is the embedded relay's own token when the caller keeps
	// one across restarts ("": startTarget mints one). The window mints it
	// once per process (openDesktop), so that a relay restarted in place
	// by Settings → Apply takes the clients of the one before it back:
	// to them it went away and came back, nothing was revoked.
	ownerToken string
}

func (c *clientFlags) register(fs *flag.FlagSet, getenv func(string) string) {
	settings.RegisterFlags(fs, &c.relay.Settings, getenv, settings.GroupConnection)
	c.relay.register(fs, getenv, false)
}

// validate checks the flags; saved reports the settings that came from the
// saved settings rather than the command line, for the wording.
func (c *clientFlags) validate(saved func(settings.Field) bool) error {
	if c.relay.Remote {
		// No relay runs here: only the connection's settings matter.
		return settingsError(c.relay.Settings, saved)
	}
	return c.relay.validate(saved)
}

// embeddedCommitInterval spaces the embedded relay's writes of the history
// (relay.Config.CommitInterval). There one streaming reply's deltas, tens
// a second, are nearly all the writes, each a SQLite commit with its
// fsync and a WebSocket message to the window: about a tenth of the
// window's CPU while a reply streams (docs/performance.md). 60 ms gathers
// three deltas at 50 a second into one write, is below what a person
// notices as a delay, and is about half the window's StreamInterval
// (125 ms), so that each frame shows about two writes' deltas, evenly.
// Every event is still stored before any client sees it.
const embeddedCommitInterval = 60 * time.Millisecond

// startTarget starts the embedded relay, unless the flags name a remote one.
// The returned stop function stops what was started.
func (c *clientFlags) startTarget(ctx context.Context, logger *slog.Logger) (target, func(), error) {
	if c.relay.Remote {
		return target{URL: c.relay.RemoteURL, Token: c.relay.RemoteToken}, func() {}, nil
	}
	s := c.relay
	s.commitInterval = embeddedCommitInterval
	if len(s.WorkspaceRoots) == 0 {
		// The embedded relay is the user's own: any folder of theirs.
		if home, err := os.UserHomeDir(); err == nil {
			s.WorkspaceRoots = rootList(home)
		}
	}
	s.Token = c.ownerToken
	if s.Token == "" {
		s.Token = randomToken()
	}
	host, portFile := "127.0.0.1", localPortName
	if s.LAN {
		// Reachable from the network: every address, and TLS always, with
		// a certificate issued by the data dir's local CA, which a phone
		// trusts once (localca.go).
		if s.DataDir == memoryDataDir {
			return target{}, nil, usageError("a relay reachable from the network keeps its certificate in its data dir: choose a --data-dir, not %s", memoryDataDir)
		}
		if err := ownerfile.MkdirAll(s.DataDir); err != nil {
			return target{}, nil, fmt.Errorf("creating the data dir: %w", err)
		}
		cert, err := lanCertificate(s.DataDir, logger)
		if err != nil {
			return target{}, nil, err
		}
		host, portFile, s.lanCert = "0.0.0.0", lanPortName, cert
	}
	// The port of the last start, when it is free: saved links keep
	// working across restarts.
	var taken error
	s.Listen, taken = stableListen(s.DataDir, host, portFile, logger)
	st, err := startStack(ctx, s, logger)
	if err == nil {
		if taken != nil {
			logger.Warn("the relay's port is taken; using a new one (saved links and paired devices need the new link)", "err", taken)
		}
		rememberPort(s.DataDir, portFile, st.URL, logger)
	}
	if errors.Is(err, sqlite.ErrInUse) || errors.Is(err, jetstream.ErrInUse) {
		// Another pilotdesk (a window, serve) of this user holds the data
		// dir, its SQLite history or its embedded NATS node: attach to
		// its relay instead of refusing.
		if r, rerr := readRunning(s.DataDir); rerr == nil {
			logger.Info("attaching to the relay already running on the data dir", "url", r.URL, "pid", r.PID)
			return target{URL: r.URL, Token: r.Token, Attached: pidText(r.PID), Fingerprint: r.Fingerprint,
				lan: r.LAN, attachedTo: &r, dataDir: s.DataDir, tokensInNATS: errors.Is(err, jetstream.ErrInUse)}, func() {}, nil
		}
	}
	if err != nil {
		return target{}, nil, err
	}
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := st.Close(ctx); err != nil {
			logger.Error("stopping the embedded relay", "err", err)
		}
	}
	label := ""
	if l, ok := st.Agent.(session.Labeler); ok {
		label = l.Label()
	}
	return target{URL: st.LocalURL, Token: st.Token, Embedded: true, Agent: st.Agent.Name(), AgentLabel: label, DemoReason: st.DemoReason,
		Fingerprint: st.Fingerprint, relay: st.Relay, lan: st.LAN, sharedURL: st.URL, caFingerprint: st.CAFingerprint, spaces: st.Spaces, checkpointsOff: st.CheckpointsOff}, stop, nil
}

// runWindow opens the desktop window (the default command).
func runWindow(ctx context.Context, args []string, env Env) error {
	fs := flag.NewFlagSet("pilotdesk", flag.ContinueOnError)
	version := fs.Bool("version", false, "print the version and exit")
	var cf clientFlags
	cf.register(fs, env.Getenv)
	if err := parseFlags(fs, args, env.Stdout); err != nil {
		return err
	}
	if *version {
		fmt.Fprintf(env.Stdout, "pilotdesk %s\n", Version)
		return nil
	}
	if err := cf.validate(fromCommandLine); err != nil {
		return err
	}
	return showWindow(ctx, fs, &cf, env)
}
