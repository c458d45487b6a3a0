package relay

import (
	"cmp"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/coder/websocket"

	"github.com/pilotdesk/pilotdesk/relay/checkpoint"
	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/workspace"
	"github.com/pilotdesk/pilotdesk/session"
)

// Defaults for the zero values of Config.
const (
	DefaultHeartbeatTimeout = 180 * time.Second
	DefaultInputTimeout     = 5 * time.Minute
	DefaultSendQueue        = 4096
	DefaultMaxConnections   = 10000
	DefaultMaxSubscriptions = 1000
	// DefaultMaxNewConversations is how many conversations one connection
	// may create per minute (a burst of that many, then one per
	// 60/DefaultMaxNewConversations seconds).
	DefaultMaxNewConversations = 120
	// DefaultMaxPendingFrameBytes bounds the bytes of frames being received,
	// over all connections, beyond the first 16 KiB of each.
	DefaultMaxPendingFrameBytes = 64 << 20
	// DefaultMaxConnectionsPerToken is how many connections one device
	// token may hold open at once.
	DefaultMaxConnectionsPerToken = 64
	// DefaultMaxPendingFrameBytesPerToken bounds the part of the frames
	// being received that one device token's connections may hold.
	DefaultMaxPendingFrameBytesPerToken = 8 << 20
	// DefaultOwnerReserveConnections is how many of MaxConnections only an
	// owner (the relay's token, or a device token of role owner) may use.
	DefaultOwnerReserveConnections = 100
	// DefaultOwnerReserveFrameBytes is how much of MaxPendingFrameBytes
	// only an owner's frames may take.
	DefaultOwnerReserveFrameBytes = 16 << 20
	// DefaultMaxConnectionsPerAddress is how many HTTP connections one
	// remote address may hold open before it has an open WebSocket (a
	// token checked): one more closes its oldest such connection.
	DefaultMaxConnectionsPerAddress = 64
	// DefaultMaxConnectionsNotWebSocket is how many such connections all
	// addresses together may hold: one more closes the oldest. With
	// DefaultMaxConnections WebSockets it stays well under a limit of
	// 20,000 open files.
	DefaultMaxConnectionsNotWebSocket = 1024
	// DefaultMaxReplaysPerMinute is how many subscribes with a replay
	// (sinceSeq before the conversation's last seq) one connection may
	// make a minute (a burst of that many, then one a second).
	DefaultMaxReplaysPerMinute = 60
	// DefaultAuthFailuresAllowed is how many upgrades with a wrong token an
	// address may make before it is throttled (auth.go).
	DefaultAuthFailuresAllowed = 30
	// DefaultCommitWindow is Config.CommitWindow's default: a small
	// commit waits up to 50 ms after the previous one began (committer.go).
	// With 25 ms, each of three relays sharing the bench-nats load (about
	// 230 events a second each) began more than half of its commits at the
	// window's end, a timer that woke the process for it alone; with 50 ms
	// it commits when the eighth event is queued (in about 35 ms), in the
	// wake-up that queued it. As many commits, as full, and the share of
	// one relay's CPU each of three needs fell from 0.39-0.45 to
	// 0.33-0.36 in runs alternating (issue #32, docs/scale-out.md), for
	// about 15-20 ms more at p50 for such a relay's events; like the embedded
	// relay's 60 ms CommitInterval, below what a person notices in a
	// streaming reply. A relay with 160 events a second or more fills a
	// commit within the window.
	DefaultCommitWindow = 50 * time.Millisecond
)

// Close codes the relay uses besides the standard ones.
const (
	// CloseTooSlow: the connection's send queue overflowed. The client
	// reconnects and resubscribes with sinceSeq; nothing is lost.
	CloseTooSlow websocket.StatusCode = 4000
	// CloseHeartbeat: no inbound message within the heartbeat timeout.
	CloseHeartbeat websocket.StatusCode = 4001
)

// Config configures a Relay.
type Config struct {
	Agent            session.Agent // required
	Store            history.Store // nil: history.NewMemory()
	Token            string        // "" = no auth
	HeartbeatTimeout time.Duration // 0: 180s
	InputTimeout     time.Duration // 0: 5m; negative: wait forever
	SendQueue        int           // frames buffered per connection; 0: DefaultSendQueue
	MaxConnections   int           // 0: DefaultMaxConnections
	MaxSubscriptions int           // per connection; 0: DefaultMaxSubscriptions
	// MaxNewConversations is how many conversations a connection may create
	// per minute; 0: DefaultMaxNewConversations.
	MaxNewConversations int
	// MaxPendingFrameBytes bounds the frames being received, over all
	// connections (docs/protocol.md, Limits); 0: DefaultMaxPendingFrameBytes.
	MaxPendingFrameBytes int
	// The limits per device token, and what only an owner may use
	// (limits.go; docs/protocol.md, Limits): 0 means the Default… of the
	// same name. The relay's own token has no limit of its own beyond
	// the relay's; the owner's reserves are at most half of the whole.
	MaxConnectionsPerToken       int
	MaxPendingFrameBytesPerToken int
	OwnerReserveConnections      int
	OwnerReserveFrameBytes       int
	// MaxReplaysPerMinute bounds the subscribes with a replay one
	// connection makes a minute; 0: DefaultMaxReplaysPerMinute.
	MaxReplaysPerMinute int
	// MaxConnectionsPerAddress bounds the HTTP connections of one remote
	// address that are not an open WebSocket (Relay.ConnState); 0:
	// DefaultMaxConnectionsPerAddress.
	MaxConnectionsPerAddress int
	// MaxConnectionsNotWebSocket bounds those connections over all
	// addresses; 0: DefaultMaxConnectionsNotWebSocket.
	MaxConnectionsNotWebSocket int
	// AuthFailuresAllowed is how many wrong tokens an address may present
	// before its upgrades are throttled (auth.go); 0:
	// DefaultAuthFailuresAllowed.
	AuthFailuresAllowed int
	OriginPatterns      []string     // extra allowed browser origins (websocket.AcceptOptions.OriginPatterns)
	Logger              *slog.Logger // nil: slog.Default()

	// Devices keeps the device tokens (devices.go); nil: Store's, when it
	// keeps them, else none (only Token opens a connection).
	Devices history.Devices
	// DevicePoll is how often the devices table is read for revocations
	// made by another process; 0: DefaultDevicePoll.
	DevicePoll time.Duration

	// BudgetCredits is the AI credits that may be spent, over all
	// conversations, in BudgetPeriod before copilot:send is refused
	// (budget.go); 0: no budget. BudgetPeriod 0: DefaultBudgetPeriod.
	BudgetCredits float64
	BudgetPeriod  time.Duration
	// BudgetClock is the budget's clock: when credits are spent and so
	// when a spent budget lets turns start again. nil: time.Now. Tests
	// freeze it so that a picture of a spent budget is the same each run.
	BudgetClock func() time.Time
	// DeviceClock is the device tokens' clock: when a token is made and
	// used, and whether and when it expires. nil: time.Now. Tests freeze
	// it so that a picture of the device list (expiry dates) is the same
	// each run, whatever the day.
	DeviceClock func() time.Time
	// InputTimer starts the timer of an open question, which calls expire
	// when InputTimeout has passed, and returns what stops it (reporting,
	// as time.Timer.Stop does, whether that kept it from firing). nil:
	// time.AfterFunc. Tests pass relaytest.InputTimers, to make a question
	// time out at the moment they choose rather than after a delay a busy
	// machine may overrun.
	InputTimer func(d time.Duration, expire func()) (stop func() bool)

	// Cluster is the other relays sharing Store (cluster.go,
	// docs/scale-out.md); nil: this relay alone owns every conversation.
	// The relay starts it and, at Close, stops it; the caller closes
	// what it runs on.
	Cluster history.Cluster
	// Checkpoints snapshots the folder of every Act turn (checkpoints.go,
	// docs/checkpoints.md); nil: none, and CheckpointsOff says why.
	Checkpoints    *checkpoint.Store
	CheckpointsOff string
	// WorkDir is the default folder: where a conversation whose first
	// send names none works (the agents' working directory); "": the
	// current directory. Workspaces, when set, has its own.
	WorkDir string
	// Workspaces are the folders conversations may work in, the default
	// one and where worktrees go (workspace.go, docs/workspaces.md);
	// nil: WorkDir alone, and no worktrees.
	Workspaces *workspace.Set

	// Push sends Web Push to the browsers that subscribed (push.go,
	// docs/push.md); nil: off, and GET /push/key answers 404.
	Push *PushConfig

	// CommitInterval is the least time from one write of the history to
	// the next (committer.go): the events that come meanwhile, a
	// streaming reply's deltas, wait and go in one write and one fan-out,
	// so each costs a share of a commit, and of a WebSocket write and
	// read, not one of its own. An event that comes after a quiet spell
	// is written at once. 0 (the default): a write starts as soon as the
	// one before returned, and only what came during it is gathered.
	// The desktop's embedded relay sets it (cli/window.go), where one
	// reply's deltas are most of the writes.
	CommitInterval time.Duration

	// FollowLinger is how long the relay goes on following a conversation
	// another relay runs after its last local subscriber left (follow.go);
	// 0: DefaultFollowLinger.
	FollowLinger time.Duration

	// CommitWindow is the least time between the starts of two commits
	// (Store.Write and the fan-out after it) when the later one would
	// carry fewer than groupMin events and the store took a round trip
	// (slowCommit) to write the earlier one: it waits, up to that, for more
	// (committer.go, gather). A commit costs the relay about as much with
	// 2 events as with 10, and it commits as often as its writes return.
	// Unlike CommitInterval, which spaces every write by the same time, it
	// holds back only small commits, and 8 events queued end the wait; a
	// relay with both set rarely waits here after its interval.
	// 0: DefaultCommitWindow; negative: none.
	CommitWindow time.Duration
}

// newRelay is the relay cfg describes, before fillDefaults.
func newRelay(cfg Config) *Relay {
	return &Relay{
		agent:            cfg.Agent,
		store:            cfg.Store,
		cluster:          cfg.Cluster,
		follow:           relayFollow{linger: cmp.Or(cfg.FollowLinger, DefaultFollowLinger)},
		commitWindow:     max(cmp.Or(cfg.CommitWindow, DefaultCommitWindow), 0),
		workspaces:       cfg.Workspaces,
		log:              cfg.Logger,
		heartbeat:        cfg.HeartbeatTimeout,
		inputTimeout:     cfg.InputTimeout,
		commitInterval:   cfg.CommitInterval,
		budgetClock:      cfg.BudgetClock,
		deviceClock:      cfg.DeviceClock,
		inputTimer:       cfg.InputTimer,
		sendQueue:        cfg.SendQueue,
		maxConns:         cfg.MaxConnections,
		maxSubs:          cfg.MaxSubscriptions,
		maxNewConvs:      cfg.MaxNewConversations,
		maxReplays:       cmp.Or(cfg.MaxReplaysPerMinute, DefaultMaxReplaysPerMinute),
		maxPendingFrames: cfg.MaxPendingFrameBytes,
		limits: tokenLimits{
			connsPerToken:   cmp.Or(cfg.MaxConnectionsPerToken, DefaultMaxConnectionsPerToken),
			pendingPerToken: int64(cmp.Or(cfg.MaxPendingFrameBytesPerToken, DefaultMaxPendingFrameBytesPerToken)),
			ownerConns:      cmp.Or(cfg.OwnerReserveConnections, DefaultOwnerReserveConnections),
			ownerPending:    int64(cmp.Or(cfg.OwnerReserveFrameBytes, DefaultOwnerReserveFrameBytes)),
		},
		addrs: addrConns{max: cmp.Or(cfg.MaxConnectionsPerAddress, DefaultMaxConnectionsPerAddress),
			total: cmp.Or(cfg.MaxConnectionsNotWebSocket, DefaultMaxConnectionsNotWebSocket)},
		authFails:  authThrottle{allowed: cmp.Or(cfg.AuthFailuresAllowed, DefaultAuthFailuresAllowed)},
		refusedLog: logEvery{every: 10 * time.Second},
		start:      time.Now(),
		convs:      map[string]*conversation{},
		conns:      map[*conn]struct{}{},
		streamsRun: map[*turn]streamStart{},
	}
}

// fillDefaults gives every setting cfg left zero its default, and finds
// what the store and the cluster offer besides (device tokens, presence).
func (r *Relay) fillDefaults(cfg Config) error {
	if r.store == nil {
		r.store = history.NewMemory()
	}
	r.checkpoints, r.workDir = cfg.Checkpoints, cfg.WorkDir
	r.checkpointsOffWhy = cmp.Or(cfg.CheckpointsOff, "checkpoints are off on this relay")
	if r.workDir == "" {
		r.workDir, _ = os.Getwd()
	}
	if r.workspaces == nil {
		ws, err := workspace.New(workspace.Options{Default: r.workDir})
		if err != nil {
			return fmt.Errorf("relay: %w", err)
		}
		r.workspaces = ws
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	if r.heartbeat <= 0 {
		r.heartbeat = DefaultHeartbeatTimeout
	}
	if r.budgetClock == nil {
		r.budgetClock = time.Now
	}
	if r.deviceClock == nil {
		r.deviceClock = time.Now
	}
	if r.inputTimer == nil {
		r.inputTimer = func(d time.Duration, expire func()) func() bool { return time.AfterFunc(d, expire).Stop }
	}
	switch {
	case r.inputTimeout == 0:
		r.inputTimeout = DefaultInputTimeout
	case r.inputTimeout < 0:
		r.inputTimeout = 0
	}
	if r.sendQueue <= 0 {
		r.sendQueue = DefaultSendQueue
	}
	if r.maxConns <= 0 {
		r.maxConns = DefaultMaxConnections
	}
	if r.maxSubs <= 0 {
		r.maxSubs = DefaultMaxSubscriptions
	}
	if r.maxNewConvs <= 0 {
		r.maxNewConvs = DefaultMaxNewConversations
	}
	if r.maxPendingFrames <= 0 {
		r.maxPendingFrames = DefaultMaxPendingFrameBytes
	}
	r.limits.ownerConns = min(r.limits.ownerConns, r.maxConns/2)
	r.limits.ownerPending = min(r.limits.ownerPending, int64(r.maxPendingFrames/2))
	if cfg.Token != "" {
		r.token = true
		r.tokenDigest = sha256.Sum256([]byte(cfg.Token))
	}
	r.devices = cfg.Devices
	if d, ok := r.store.(history.Devices); ok && r.devices == nil {
		r.devices = d
	}
	if p, ok := r.cluster.(history.Presence); ok {
		r.presence, r.present = p, map[[sha256.Size]byte]int{}
	}
	return nil
}
