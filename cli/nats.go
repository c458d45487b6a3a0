package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/pilotdesk/pilotdesk/internal/ctxtime"
	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/history/jetstream"
	"github.com/pilotdesk/pilotdesk/relay/history/sqlite"
)

// natsEmbedded as --nats runs one JetStream node in the relay's process.
const natsEmbedded = "embedded"

// natsPasswordEnv is the environment variable that gives the password of
// the NATS user the --nats URLs name (nats://USER@HOST:4222), so that it
// is never on the command line, where every user of the machine reads it
// (ps, /proc/PID/cmdline).
const natsPasswordEnv = "PILOTDESK_NATS_PASSWORD"

// natsSettings are serve's --nats flags: the history in NATS JetStream
// instead of SQLite (docs/cli.md, docs/scale-out.md).
type natsSettings struct {
	URLs  string // comma-separated, or natsEmbedded; "" keeps SQLite
	Creds string
	TLSCA string
	// Password is natsPasswordEnv's: the password of the user the URLs
	// name. Never logged.
	Password string
	Replicas int
	// Streams is how many event streams the conversations are spread
	// over (jetstream.Options.Streams): fixed when the history is made.
	// 0, for the token commands, which do not register the flag (and do
	// not read the events), takes the history's.
	Streams int
	// withStreams says the flag was registered (serve): 0 is refused.
	withStreams bool
	Lease       time.Duration
	// DrainTimeout bounds a drain at SIGTERM: how long running turns may
	// take to end before the relay stops (relay.Drain).
	DrainTimeout time.Duration
	// StartWait is how long serve waits at start for a cluster that does
	// not answer yet (natsStartWait; tests shorten it).
	StartWait time.Duration
}

// natsStartWait is how long serve waits at start for a NATS cluster that
// does not answer yet: relays and nodes started together (a boot, a
// compose file, a cluster restarted after an outage) find the nodes still
// starting or electing their leaders for seconds to a minute. The relay
// waits, saying so, instead of exiting; a cluster that stays away longer
// is a fault the operator must see, so it exits then.
const natsStartWait = 2 * time.Minute

func (n *natsSettings) register(fs *flag.FlagSet, getenv func(string) string) {
	n.registerConnection(fs, getenv,
		"keep the history in NATS JetStream at these `URLS` (comma-separated) instead of SQLite; \""+natsEmbedded+"\" runs one in-process node in --data-dir",
		"replicas of the events stream and bucket when the relay creates them (1 with embedded)")
	n.withStreams = true
	fs.IntVar(&n.Streams, "nats-streams", 1, "spread the conversations over this many event streams, each with its own leader, when the relay makes the history; every relay of a cluster must give the same (1 with embedded)")
	fs.DurationVar(&n.Lease, "nats-lease", jetstream.DefaultLease, "how long a relay may be silent before the other relays take its conversations over; it must outlast a NATS leader election (4-9 s)")
	n.StartWait = natsStartWait
	fs.DurationVar(&n.DrainTimeout, "drain-timeout", 10*time.Minute, "with --nats: on SIGTERM, how long the relay waits for its running turns to end (its clients moved to other relays, its idle conversations handed over) before it stops")
}

// registerConnection registers the flags that reach a NATS history and
// sign in to it, which every command that opens one takes alike (serve,
// token, move-streams; validate checks them): --nats, whose usage says
// what the command does with the history, --nats-creds, --nats-tls-ca,
// --nats-replicas, whose usage says what the command may create, and the
// password of natsPasswordEnv.
func (n *natsSettings) registerConnection(fs *flag.FlagSet, getenv func(string) string, urlsUsage, replicasUsage string) {
	n.Password = getenv(natsPasswordEnv)
	fs.StringVar(&n.URLs, "nats", "", urlsUsage)
	fs.StringVar(&n.Creds, "nats-creds", "", "NATS credentials `FILE` (a user JWT and its seed)")
	fs.StringVar(&n.TLSCA, "nats-tls-ca", "", "verify the NATS servers' TLS certificates with this CA `FILE`")
	fs.IntVar(&n.Replicas, "nats-replicas", 3, replicasUsage)
}

func (n *natsSettings) validate(dataDir string) error {
	if n.URLs == "" {
		if n.Creds != "" || n.TLSCA != "" {
			return usageError("--nats-creds and --nats-tls-ca go with --nats")
		}
		return nil // a password in the environment for another use: ignored
	}
	if n.Replicas < 1 {
		return usageError("--nats-replicas must be 1 or more, not %d", n.Replicas)
	}
	if (n.withStreams && n.Streams < 1) || n.Streams < 0 || n.Streams > jetstream.MaxStreams {
		return usageError("--nats-streams must be 1 to %d, not %d", jetstream.MaxStreams, n.Streams)
	}
	if n.Lease <= 0 {
		return usageError("--nats-lease must be positive, not %v", n.Lease)
	}
	if n.DrainTimeout < 0 {
		return usageError("--drain-timeout must not be negative, not %v", n.DrainTimeout)
	}
	if n.URLs == natsEmbedded {
		if n.Creds != "" || n.TLSCA != "" {
			return usageError("--nats-creds and --nats-tls-ca are for a NATS cluster, not --nats %s", natsEmbedded)
		}
		// n.Password is ignored: the in-process node has no users.
		if dataDir == memoryDataDir {
			return usageError("--nats %s keeps its node's files in --data-dir: give it a directory, not %s", natsEmbedded, memoryDataDir)
		}
		return nil
	}
	for _, u := range strings.Split(n.URLs, ",") {
		if strings.TrimSpace(u) == "" {
			return usageError("--nats %q: an empty URL in the list", redactURLs(n.URLs))
		}
		if _, err := url.Parse(strings.TrimSpace(u)); err != nil {
			return usageError("--nats: %v", err)
		}
	}
	if n.Password != "" {
		if n.Creds != "" {
			return usageError("%s and --nats-creds are two ways to sign in to NATS: give one", natsPasswordEnv)
		}
		if _, _, err := natsUser(n.URLs); err != nil {
			return usageError("%v", err)
		}
	}
	return nil
}

// natsUser returns the URLs without their user and the user they name,
// for the password of natsPasswordEnv: every URL names the same user and
// none carries a password.
func natsUser(urls string) (bare, user string, err error) {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		u, err := url.Parse(strings.TrimSpace(p))
		if err != nil {
			return "", "", fmt.Errorf("--nats: %w", err)
		}
		if u.User == nil || u.User.Username() == "" {
			return "", "", fmt.Errorf("%s is the password of the NATS user the --nats URLs name, and %s names none: write nats://USER@HOST:PORT", natsPasswordEnv, u.Redacted())
		}
		if _, has := u.User.Password(); has {
			return "", "", fmt.Errorf("--nats %s carries a password and %s gives another: keep the password out of the command line, in %s alone", u.Redacted(), natsPasswordEnv, natsPasswordEnv)
		}
		if user != "" && u.User.Username() != user {
			return "", "", fmt.Errorf("the --nats URLs name two users, %q and %q: %s is the password of one", user, u.User.Username(), natsPasswordEnv)
		}
		user = u.User.Username()
		u.User = nil
		parts[i] = u.String()
	}
	return strings.Join(parts, ","), user, nil
}

// minLease is the shortest --nats-lease that outlasts a NATS leader
// election (4-9 s); a shorter one is allowed (tests, a single node) with
// a warning.
const minLease = 10 * time.Second

// natsHistory is a JetStream history with the connection it runs on, and
// with --nats embedded the in-process node, which it closes after itself:
// the relay's history (natsStore) and the token commands' device tokens
// (natsDevices) are opened alike (openNATSHistory).
type natsHistory struct {
	*jetstream.Store
	nc   *nats.Conn
	node *jetstream.Embedded // --nats embedded only
}

func (h *natsHistory) Close() error {
	err := h.Store.Close()
	h.nc.Close()
	if h.node != nil {
		h.node.Shutdown()
	}
	return err
}

// openNATSHistory opens the history on the cluster at --nats, or on the
// in-process node of dataDir with --nats embedded, for client (the name
// the NATS servers list its connection by). Every command that opens it
// says what went wrong the same way: which data dir's node a running
// relay holds, which flag mends three replicas on a single server.
func openNATSHistory(ctx context.Context, n natsSettings, dataDir, client string, logger *slog.Logger) (_ *natsHistory, err error) {
	h := &natsHistory{}
	defer func() {
		if err != nil {
			if h.nc != nil {
				h.nc.Close()
			}
			if h.node != nil {
				h.node.Shutdown()
			}
		}
	}()
	replicas, streams := n.Replicas, n.Streams
	if n.URLs == natsEmbedded {
		if dataDir == "" {
			return nil, usageError("--nats %s needs the relay's --data-dir", natsEmbedded)
		}
		// A relay that keeps its history in SQLite there (a window,
		// serve) holds another lock than the node's: refused alike.
		if who, held, err := sqlite.Held(dataDir); err != nil {
			return nil, fmt.Errorf("opening the NATS node in %s: %w", dataDir, err)
		} else if held {
			return nil, fmt.Errorf("opening the NATS node in %s (%s runs a relay on it, with its history in SQLite: use that relay, or stop it first): the data dir is %w", dataDir, who, sqlite.ErrInUse)
		}
		if h.node, err = jetstream.StartEmbedded(dataDir, logger); err != nil {
			if errors.Is(err, jetstream.ErrInUse) {
				return nil, fmt.Errorf("opening the NATS node in %s (a relay running on it holds it: use that relay, from its window, or stop it first): %w", dataDir, err)
			}
			return nil, fmt.Errorf("opening the NATS node in %s: %w", dataDir, err)
		}
		if h.nc, err = h.node.Connect(client); err != nil {
			return nil, err
		}
		// One node: one stream has all it can give.
		replicas, streams = 1, 0
	} else if h.nc, err = connectNATS(n, client, logger); err != nil {
		return nil, err
	}
	if h.Store, err = jetstream.Open(ctx, h.nc, jetstream.Options{Replicas: replicas, Streams: streams, Logger: logger}); err != nil {
		// A server outside any cluster cannot hold replicas; a cluster
		// short of a quorum can, once it has one again.
		if replicas > 1 && n.URLs != natsEmbedded && h.nc.ConnectedClusterName() == "" {
			err = fmt.Errorf("%w (a single nats-server, not a cluster: pass --nats-replicas 1)", err)
		}
		return nil, fmt.Errorf("opening the history on NATS: %w", err)
	}
	return h, nil
}

// natsStore is the relay's JetStream history and the relays that share
// it (the relay starts and stops that).
type natsStore struct {
	*natsHistory
	cluster *jetstream.Cluster
}

// clusterOf is the other relays sharing store, or nil (a nil interface,
// not a nil pointer in one) when it is not shared.
func clusterOf(store history.Store) history.Cluster {
	if n, ok := store.(*natsStore); ok && n.cluster != nil {
		return n.cluster
	}
	return nil
}

// openNATSStoreWaiting opens the history as openNATSStore does, trying
// again while the cluster does not answer yet (jetstream.Unavailable), for
// up to StartWait or until ctx ends (SIGTERM). Any other failure (a
// refused password, a configuration the cluster cannot hold) returns at
// once. An embedded node is started here, so it never waits.
func openNATSStoreWaiting(ctx context.Context, s relaySettings, logger *slog.Logger) (*natsStore, error) {
	if s.NATS.URLs == natsEmbedded {
		return openNATSStore(ctx, s, logger)
	}
	deadline := time.Now().Add(s.NATS.StartWait)
	wait := time.Second
	for {
		st, err := openNATSStore(ctx, s, logger)
		if err == nil || !jetstream.Unavailable(err) || ctx.Err() != nil {
			return st, err
		}
		if time.Now().Add(wait).After(deadline) {
			return nil, fmt.Errorf("%w; the cluster did not answer for %v", err, s.NATS.StartWait)
		}
		logger.Warn("the NATS cluster does not answer yet; trying again", "err", err, "in", wait)
		if ctxtime.Sleep(ctx, wait) != nil {
			return nil, err
		}
		wait = min(2*wait, 10*time.Second)
	}
}

// openNATSStore opens the history on the cluster at --nats, or on an
// in-process node in --data-dir, and, on the in-process node, drops
// conversations older than --history-max-age (before the relay loads
// them, as with SQLite).
func openNATSStore(ctx context.Context, s relaySettings, logger *slog.Logger) (_ *natsStore, err error) {
	n := s.NATS
	h, err := openNATSHistory(ctx, n, s.DataDir, "pilotdesk relay", logger)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			h.Close()
		}
	}()
	st := &natsStore{natsHistory: h}
	if n.URLs == natsEmbedded {
		logger.Info("history", "nats", natsEmbedded, "dir", s.DataDir)
	} else {
		logger.Info("history", "nats", redactURLs(n.URLs), "server", h.nc.ConnectedServerName(), "replicas", n.Replicas, "streams", n.Streams)
	}
	// Every relay on a cluster shares its conversations with the others.
	// An embedded node is this relay's alone (its data dir is locked): no
	// other relay can share it, so the relay owns every conversation and
	// closes the turns a crash left open when it starts, as with SQLite.
	if n.URLs != natsEmbedded {
		if n.Lease < minLease {
			logger.Warn("--nats-lease is shorter than a NATS leader election may take (4-9 s): when a node dies, other relays may take over conversations whose relay is fine, closing their turns", "lease", n.Lease)
		}
		if st.cluster, err = jetstream.NewCluster(ctx, h.Store, jetstream.ClusterOptions{Lease: n.Lease, Logger: logger}); err != nil {
			return nil, fmt.Errorf("joining the relays on NATS: %w", err)
		}
	}
	// On a cluster the store may not drop conversations behind the
	// relays' backs: other relays own some (their clients would keep
	// conversations that are gone) and the others would not hear of the
	// deletes. The relay prunes instead, as soon as it runs (stack.prune):
	// only what it owns or claims from a relay that is gone, telling the
	// others.
	if s.HistoryMaxAge > 0 && st.cluster == nil {
		dropped, err := h.DeleteOlderThan(ctx, time.Now().Add(-s.HistoryMaxAge))
		if err != nil {
			return nil, fmt.Errorf("dropping conversations older than %v: %w", s.HistoryMaxAge, err)
		}
		logger.Info("history retention", "dropped", dropped, "maxAge", s.HistoryMaxAge)
	}
	return st, nil
}

// connectNATS connects to the cluster as client (the name the servers
// list the connection by). It reconnects for as long as the
// relay runs: while no node answers, writes wait (the store retries, the
// committer backs up) instead of the relay giving up.
func connectNATS(n natsSettings, client string, logger *slog.Logger) (*nats.Conn, error) {
	ping := natsPingInterval(n.Lease)
	opts := []nats.Option{
		nats.Name(client),
		nats.Timeout(5 * time.Second),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		// A node cut off the network (a partition, its machine gone
		// without a FIN) leaves the connection open and silent: nats.go's
		// default pings (every 2 minutes, 2 unanswered) found it out
		// minutes after the relay's lease had lapsed, and the others took
		// its conversations over although it was alive (make chaos,
		// node-partition: turns closed "relay lost"). Pinged every fifth
		// of the lease, a silent node is left for another within about
		// half of it, while renewals can still keep the lease.
		nats.PingInterval(ping),
		nats.MaxPingsOutstanding(natsPingsOut),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			// nats.go calls this from Close too (the relay's own shutdown),
			// with the connection closed and no error: nothing went wrong.
			if nc.IsClosed() && err == nil {
				logger.Debug("NATS connection closed")
				return
			}
			logger.Warn("NATS disconnected; reconnecting", "err", err)
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			logger.Info("NATS reconnected", "server", nc.ConnectedServerName())
		}),
		nats.ErrorHandler(func(nc *nats.Conn, sub *nats.Subscription, err error) {
			logger.Error("NATS", "err", err)
		}),
	}
	if n.Creds != "" {
		opts = append(opts, nats.UserCredentials(n.Creds))
	}
	if n.TLSCA != "" {
		opts = append(opts, nats.RootCAs(n.TLSCA))
	}
	urls := n.URLs
	if n.Password != "" {
		// The user from the URLs, the password from the environment: a
		// URL with a user and no password would send the user as a token.
		bare, user, err := natsUser(urls)
		if err != nil {
			return nil, usageError("%v", err)
		}
		urls = bare
		opts = append(opts, nats.UserInfo(user, n.Password))
	} else if urlsHavePassword(urls) {
		logger.Warn("the NATS password is on the command line (--nats), where every user of this machine can read it: give it in " + natsPasswordEnv + ", or sign in with --nats-creds")
	}
	nc, err := nats.Connect(urls, opts...)
	if err != nil {
		var hint string
		if errors.Is(err, nats.ErrNoServers) {
			hint = " (is a nats-server with JetStream running there?)"
		}
		return nil, fmt.Errorf("connecting to NATS at %s: %w%s", redactURLs(n.URLs), err, hint)
	}
	return nc, nil
}

// natsPingsOut is how many pings may go unanswered before the relay
// leaves its NATS node for another.
const natsPingsOut = 2

// natsPingInterval is how often the relay pings its NATS node: a fifth of
// the lease (3 s with the default), so that a node that went silent is
// left after 2-3 intervals, before the lease can lapse; never under a
// second (a test's short lease would reconnect at every busy moment) nor
// over nats.go's default of 2 minutes.
func natsPingInterval(lease time.Duration) time.Duration {
	if lease <= 0 {
		lease = jetstream.DefaultLease
	}
	return min(max(lease/5, time.Second), nats.DefaultPingInterval)
}

// urlsHavePassword reports whether one of the comma-separated URLs
// carries a password.
func urlsHavePassword(urls string) bool {
	for _, p := range strings.Split(urls, ",") {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil && u.User != nil {
			if _, has := u.User.Password(); has {
				return true
			}
		}
	}
	return false
}

// redactURLs drops the passwords of URLs for the log.
func redactURLs(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil && u.User != nil {
			parts[i] = u.Redacted()
		}
	}
	return strings.Join(parts, ",")
}
