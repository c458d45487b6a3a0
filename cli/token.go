package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/pilotdesk/pilotdesk/internal/qr"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/history"
	"github.com/pilotdesk/pilotdesk/relay/history/jetstream"
	"github.com/pilotdesk/pilotdesk/relay/history/sqlite"
	"github.com/pilotdesk/pilotdesk/web"
)

// runToken runs `pilotdesk token create|list|revoke` (docs/cli.md,
// pilotdesk token) on the devices table of a data dir, whether or not a
// relay runs on it: a running relay looks each new token up when it is
// used, and notices a revocation within a second (it polls the table).
func runToken(ctx context.Context, args []string, env Env) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(env.Stdout, tokenUsage)
		if len(args) == 0 {
			return usageError("pilotdesk token needs a command: create, list or revoke")
		}
		return nil
	}
	tc, err := parseTokenCommand(args[0], args[1:], env)
	if err != nil {
		return err
	}
	// The store logs to stderr, warnings only: stdout is the token.
	logger := newLogger(env.Stderr, slog.LevelWarn)
	store, shared, closeStore, err := tc.openDevices(ctx, logger)
	if err != nil {
		return err
	}
	defer closeStore()
	switch tc.cmd {
	case "create":
		return tc.create(ctx, store, shared, env)
	case "list":
		devs, err := store.Devices(ctx)
		if err != nil {
			return err
		}
		printDevices(env.Stdout, devs, time.Now())
		return nil
	default:
		return tc.revoke(ctx, store, shared, env)
	}
}

// tokenCommand is one `pilotdesk token` command with its flags, parsed
// and checked.
type tokenCommand struct {
	cmd     string // create, list or revoke
	name    string // the device's (create, revoke)
	role    string // create
	expires time.Duration
	dataDir string // never "": the user data dir by default
	// nats are the --nats flags: with URLs, the tokens are the
	// cluster's (the KV bucket pd_devices), shared by every relay on it
	// (docs/operations.md).
	nats natsSettings
}

// parseTokenCommand parses the flags of cmd, and of revoke its NAME
// before or after them, and says what is missing or wrong.
func parseTokenCommand(cmd string, args []string, env Env) (*tokenCommand, error) {
	tc := &tokenCommand{cmd: cmd}
	fs := flag.NewFlagSet("token "+cmd, flag.ContinueOnError)
	fs.StringVar(&tc.dataDir, "data-dir", "", "the data dir of the relay (default: the OS's user data dir, as for serve)")
	ns := &tc.nats
	*ns = natsSettings{Lease: time.Second} // no lease: the command joins no relay
	ns.registerConnection(fs, env.Getenv,
		"the device tokens of the relays on the NATS cluster at these `URLS` (comma-separated), or of the relay of --data-dir with --nats "+natsEmbedded+" when it is not running",
		"replicas of the buckets if this command is the first to make them")
	switch cmd {
	case "create":
		fs.StringVar(&tc.name, "name", "", "the device's `NAME`, as the window and answeredBy show it (required)")
		fs.StringVar(&tc.role, "role", "", "viewer, controller or owner (required)")
		fs.DurationVar(&tc.expires, "expires", 0, "the token expires after this long (default: never)")
	case "list":
	case "revoke":
		// revoke NAME [flags] or revoke [flags] NAME.
		if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
			tc.name, args = args[0], args[1:]
		}
	default:
		return nil, usageError("unknown token command %q: use create, list or revoke", cmd)
	}
	if cmd == "revoke" && tc.name == "" {
		fs.SetOutput(io.Discard)
		if err := fs.Parse(args); err != nil {
			return nil, parseFlags(fs, args, env.Stdout)
		}
		if fs.NArg() != 1 {
			return nil, usageError("pilotdesk token revoke takes the device's name: pilotdesk token revoke NAME")
		}
		tc.name, args = fs.Arg(0), nil
	}
	if err := parseFlags(fs, args, env.Stdout); err != nil {
		return nil, err
	}
	if cmd == "create" {
		if tc.name == "" || tc.role == "" {
			return nil, usageError("pilotdesk token create needs --name NAME and --role viewer|controller|owner")
		}
		if !protocol.ValidRole(tc.role) {
			return nil, usageError("--role must be viewer, controller or owner, not %q", tc.role)
		}
		if tc.expires < 0 {
			return nil, usageError("--expires must be positive, not %v", tc.expires)
		}
	}
	if err := ns.validate(tc.dataDir); err != nil {
		return nil, err
	}
	if tc.dataDir == memoryDataDir && ns.URLs == "" {
		return nil, usageError("--data-dir %s keeps no device tokens between runs; name the data dir of a relay", memoryDataDir)
	}
	if tc.dataDir == "" {
		dir, err := userDataDir()
		if err != nil {
			return nil, fmt.Errorf("finding the user data dir (set --data-dir): %w", err)
		}
		tc.dataDir = dir
	}
	return tc, nil
}

// openDevices opens the device tokens: the cluster's with --nats, else
// the data dir's. shared says that a relay may be running on them (it
// notices a revocation within a second).
func (tc *tokenCommand) openDevices(ctx context.Context, logger *slog.Logger) (store history.Devices, shared bool, closeStore func(), err error) {
	if tc.nats.URLs != "" {
		st, err := openNATSDevices(ctx, tc.nats, tc.dataDir, logger)
		if err != nil {
			return nil, false, nil, err
		}
		return st, tc.nats.URLs != natsEmbedded, func() { st.Close() }, nil
	}
	// A relay with --nats embedded there reads its tokens from its node,
	// not from the data dir's SQLite table: one made there would never
	// open a connection.
	if held, err := jetstream.NodeHeld(tc.dataDir); err != nil {
		return nil, false, nil, fmt.Errorf("opening the device tokens in %s: %w", tc.dataDir, err)
	} else if held {
		who := ""
		if r, err := readRunning(tc.dataDir); err == nil {
			who = pidText(r.PID)
		}
		return nil, false, nil, errTokensInHeldNode(who, tc.dataDir)
	}
	st, err := sqlite.OpenDevices(ctx, tc.dataDir, sqlite.Options{Logger: logger})
	if err != nil {
		return nil, false, nil, fmt.Errorf("opening the device tokens in %s: %w", tc.dataDir, err)
	}
	return st, st.Shared, func() { st.Close() }, nil
}

// create makes the device's token and prints it with how to use it.
func (tc *tokenCommand) create(ctx context.Context, store history.Devices, shared bool, env Env) error {
	if r, err := readRunning(tc.dataDir); err == nil && r.ClearNetwork && shared && tc.nats.URLs == "" {
		return errClearNetwork(tc.dataDir)
	}
	var until time.Time
	if tc.expires > 0 {
		until = time.Now().Add(tc.expires)
	}
	token, dev, err := relay.CreateDevice(ctx, store, relay.NewDevice{Name: tc.name, Role: tc.role, Expires: until})
	if err != nil {
		return err
	}
	if tc.nats.URLs != "" && tc.nats.URLs != natsEmbedded {
		printClusterToken(env, token, dev)
		return nil
	}
	printNewToken(env, tc.dataDir, token, dev)
	return nil
}

// revoke revokes the device's token and says who stops taking it when.
func (tc *tokenCommand) revoke(ctx context.Context, store history.Devices, shared bool, env Env) error {
	name := tc.name
	if err := store.RevokeDevice(ctx, name); err != nil {
		if errors.Is(err, history.ErrNoDevice) {
			return fmt.Errorf("no device is named %q (pilotdesk token list shows them)", name)
		}
		return err
	}
	if shared && tc.nats.URLs != "" {
		fmt.Fprintf(env.Stdout, "Revoked %q: every relay on the cluster closes its connections within a second, and refuses the token from now on.\n", name)
	} else if shared {
		fmt.Fprintf(env.Stdout, "Revoked %q: the running relay closes its connections within a second, and refuses the token from now on.\n", name)
	} else {
		fmt.Fprintf(env.Stdout, "Revoked %q: the relay refuses the token from now on.\n", name)
	}
	return nil
}

const tokenUsage = `Usage:
  pilotdesk token create --name NAME --role viewer|controller|owner [--expires D] [--data-dir DIR | --nats URLS]
  pilotdesk token list [--data-dir DIR | --nats URLS]
  pilotdesk token revoke NAME [--data-dir DIR | --nats URLS]

Device tokens of the relay of a data dir, running or not, or with --nats
URLS of every relay on a NATS cluster (--nats-creds FILE, --nats-tls-ca FILE
as for serve). create prints the token alone on the first line, then how to
connect; the relays keep only its SHA-256, so it is shown once.
`

// natsDevices is the device tokens of a NATS history, with the connection
// (and the in-process node) it closes after itself.
type natsDevices struct{ *natsHistory }

func (d natsDevices) Close() error {
	// The connection's handlers log a disconnection, from a goroutine of
	// the client's, after Close returns: a command that ends says nothing.
	d.nc.SetDisconnectErrHandler(nil)
	d.nc.SetReconnectHandler(nil)
	d.nc.SetErrorHandler(nil)
	return d.natsHistory.Close()
}

// openNATSDevices opens the device tokens on the cluster at --nats, or on
// the node of --data-dir with --nats embedded (refused, by the node's lock,
// while a relay runs on it).
func openNATSDevices(ctx context.Context, n natsSettings, dataDir string, logger *slog.Logger) (natsDevices, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	h, err := openNATSHistory(ctx, n, dataDir, "pilotdesk token", logger)
	if err != nil {
		return natsDevices{}, err
	}
	return natsDevices{h}, nil
}

// printTokenHead prints what every new token's output starts with: the
// token alone on the first line (scripts read it), then whose it is and
// when it expires.
func printTokenHead(out io.Writer, token string, dev history.Device) {
	fmt.Fprintln(out, token)
	expiry := "it does not expire"
	if !dev.ExpiresAt.IsZero() {
		expiry = "it expires " + dev.ExpiresAt.Local().Format("2006-01-02 15:04 MST")
	}
	fmt.Fprintf(out, "\nThe token of device %q, role %s; %s. It is shown only this once.\n", dev.Name, dev.Role, expiry)
}

// printClusterToken prints a token made on a cluster: alone on the first
// line, then that any relay of the cluster takes it.
func printClusterToken(env Env, token string, dev history.Device) {
	out := env.Stdout
	printTokenHead(out, token, dev)
	fmt.Fprintf(out, "Every relay on the cluster takes it: pilotdesk chat --connect wss://HOST:PORT/ws --token %s\n  or open https://HOST:PORT/#token=%s in a browser.\n", token, token)
}

// printNewToken prints the token alone on the first line, then how to
// connect with it: to the relay running on the data dir, if one left its
// address there, with a QR code of the web client's link on a terminal.
func printNewToken(env Env, dir, token string, dev history.Device) {
	out := env.Stdout
	printTokenHead(out, token, dev)
	r, err := readRunning(dir)
	if err != nil {
		fmt.Fprintf(out, "No relay runs on %s now. Start one (pilotdesk serve --data-dir %s, or the window), then connect with this token:\n"+
			"  pilotdesk chat --connect ws://HOST:PORT/ws --token %s\n  or open http://HOST:PORT/#token=%s in a browser.\n", dir, dir, token, token)
		return
	}
	relayURL := r.deviceURL()
	link := web.Link(relayURL, token)
	// What the terminal's QR code opens: the setup page of a relay with a
	// local CA (lansetup.go), which leads a phone to trust the CA once;
	// else the link (the spec's QR code on a terminal; for a relay on the
	// loopback the line below says that no other device reaches it).
	phone := link
	fmt.Fprintf(out, "In a browser or on a phone: %s\n", link)
	if r.LAN != "" && r.CAFingerprint != "" {
		phone = web.SetupLink("http://"+r.LAN+"/", token)
		fmt.Fprintf(out, "A phone's first time:       %s\n", phone)
		fmt.Fprintln(out, "                            (its page helps the phone trust this computer's certificate authority, once)")
	}
	fmt.Fprintf(out, "In a terminal:              pilotdesk chat --connect %s --token %s\n", relayURL, token)
	if r.LAN == "" && !relay.RequiresToken(hostOf(relayURL)) {
		fmt.Fprintln(out, "The relay listens on this computer only (loopback): to join from another device, turn on \"Reachable from my network\" in the window's Settings, or run pilotdesk serve with --listen on a network address and --tls-cert.")
	}
	if f, ok := env.Stdout.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		if code, err := qr.Encode(phone); err == nil {
			fmt.Fprint(out, "\n"+code.Terminal())
		}
	}
}

func hostOf(relayURL string) string {
	s := relayURL
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
	}
	if i := strings.IndexByte(s, '/'); i >= 0 {
		s = s[:i]
	}
	return s
}

// printDevices lists the devices, never their tokens.
func printDevices(w io.Writer, devs []history.Device, now time.Time) {
	if len(devs) == 0 {
		fmt.Fprintln(w, "No device tokens. Make one with pilotdesk token create --name NAME --role viewer|controller|owner.")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tROLE\tCREATED\tEXPIRES\tLAST USED")
	day := func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return t.Local().Format("2006-01-02 15:04")
	}
	for _, d := range devs {
		expires := day(d.ExpiresAt)
		if d.Expired(now) {
			expires += " (expired)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", d.Name, d.Role, day(d.CreatedAt), expires, day(d.LastUsed))
	}
	tw.Flush()
}

// errTokensInHeldNode says why no token can be made for the relay
// (who: "process N", or "" when not known) that runs on dir with --nats
// embedded: its tokens are in the node it holds, which nothing else may
// open while it runs, and it has no window when it is a serve.
func errTokensInHeldNode(who, dir string) error {
	if who == "" {
		who = "running on it"
	} else {
		who = "of " + who
	}
	return fmt.Errorf("the relay %s keeps its device tokens in its NATS node in %s, which it holds while it runs: stop it, make the token with pilotdesk token create --nats embedded --data-dir %s, and start it again", who, dir, dir)
}
