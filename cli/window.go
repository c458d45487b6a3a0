package cli

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"time"
)

// target is the relay a client (the window or the terminal client) talks to.
type target struct {
	URL      string
	Token    string
	Embedded bool   // the relay runs in this process
	Agent    string // the embedded relay's agent backend
	// DemoReason: why --agent auto picked the built-in demo ("" if not).
	DemoReason string
}

// Title names the relay for a window title: "embedded" or the remote host.
func (t target) Title() string {
	if t.Embedded {
		return "embedded relay, " + t.Agent + " agent"
	}
	if u, err := url.Parse(t.URL); err == nil && u.Host != "" {
		return u.Host
	}
	return t.URL
}

// clientFlags are the flags of the window and of the terminal client.
type clientFlags struct {
	Connect string
	Token   string
	relay   relaySettings
}

func (c *clientFlags) register(fs *flag.FlagSet, getenv func(string) string) {
	fs.StringVar(&c.Connect, "connect", "", "open on the remote relay at `URL` (ws://HOST:PORT/ws or wss://…) instead of an embedded one")
	fs.StringVar(&c.Token, "token", getenv("PILOTDESK_TOKEN"), "the remote relay's `TOKEN` (default: env PILOTDESK_TOKEN)")
	c.relay.register(fs, getenv, false)
}

func (c *clientFlags) validate() error {
	if c.Connect != "" {
		u, err := url.Parse(c.Connect)
		if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
			return usageError("--connect must be a ws:// or wss:// URL such as ws://host:7420/ws, not %q", c.Connect)
		}
		return nil
	}
	return c.relay.validate()
}

// startTarget starts the embedded relay, unless the flags name a remote one.
// The returned stop function stops what was started.
func (c *clientFlags) startTarget(ctx context.Context, logger *slog.Logger) (target, func(), error) {
	if c.Connect != "" {
		return target{URL: c.Connect, Token: c.Token}, func() {}, nil
	}
	s := c.relay
	s.Listen = "127.0.0.1:0"
	s.Token = randomToken()
	st, err := startStack(ctx, s, logger)
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
	return target{URL: st.URL, Token: st.Token, Embedded: true, Agent: st.Agent.Name(), DemoReason: st.DemoReason}, stop, nil
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
	if err := cf.validate(); err != nil {
		return err
	}
	return showWindow(ctx, fs, &cf, env)
}
