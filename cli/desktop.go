package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"sync"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/app"

	"github.com/pilotdesk/pilotdesk/assets"
	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/settings"
	"github.com/pilotdesk/pilotdesk/ui"
)

// AppID is the desktop app's id (FyneApp.toml, preferences, the .desktop entry).
const AppID = "io.github.pilotdesk"

// showWindow runs the desktop window on the relay the flags and the saved
// settings name until the window is closed or ctx ends (SIGINT/SIGTERM).
func showWindow(ctx context.Context, fs *flag.FlagSet, cf *clientFlags, env Env) error {
	logger := newLogger(env.Stderr, slog.LevelInfo)
	if cf.relay.Verbose {
		logger = newLogger(env.Stderr, slog.LevelDebug)
	}
	a := app.NewWithID(AppID)
	a.SetIcon(fyne.NewStaticResource("pilotdesk.png", assets.Icon))

	d, err := openDesktop(ctx, desktopConfig{
		app:    a,
		flags:  *cf,
		locked: settings.Locked(fs, env.Getenv),
		logger: logger,
	})
	if err != nil {
		return err
	}
	// A signal quits the app as closing the window does.
	stopWatch := context.AfterFunc(ctx, func() { fyne.Do(a.Quit) })
	defer stopWatch()

	d.win.ShowAndRun()
	d.close()
	return nil
}

// desktopConfig is what openDesktop needs.
type desktopConfig struct {
	app    fyne.App
	flags  clientFlags // the command line, validated
	locked map[settings.Field]string
	logger *slog.Logger
	// base holds the window options the desktop does not set.
	base ui.Options
}

// desktop is the running window app: the relay it embeds or connects to,
// the client, and the window. Applying settings that need it restarts the
// relay in-process and moves the window to the new one (ui.Window.SetClient);
// the window itself stays.
type desktop struct {
	desktopConfig
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // restarts and retired clients

	mu      sync.Mutex
	closed  bool
	pending *relayConn // started by a restart, not yet handed to the UI

	win *ui.Window // for the desktop's life

	// The UI goroutine's.
	cur        *relayConn
	restarting bool
}

// relayConn is a relay the window talks to and the client connected to it.
type relayConn struct {
	flags    clientFlags
	target   target
	client   *client.Client
	stopOnce sync.Once
	stopFn   func()
}

// stop stops the relay if it is embedded; once.
func (r *relayConn) stop() { r.stopOnce.Do(r.stopFn) }

// close closes the client, then stops the relay.
func (r *relayConn) close() {
	r.client.Close()
	r.stop()
}

// openDesktop starts the relay the flags and the saved settings name,
// connects and builds the window (not shown yet). If the saved settings do
// not start, it starts on the command line and the defaults alone and the
// window says why.
func openDesktop(ctx context.Context, cfg desktopConfig) (*desktop, error) {
	d := &desktop{desktopConfig: cfg}
	d.ctx, d.cancel = context.WithCancel(ctx)

	// The command line over the defaults: what runs if the saved
	// settings do not start.
	base, err := withPrefs(d.flags, d.locked, settings.Defaults())
	if err != nil {
		d.cancel()
		return nil, err
	}
	want, err := withPrefs(d.flags, d.locked, d.savedSettings())
	var r *relayConn
	if err == nil {
		r, err = d.connect(want)
	}
	problem := ""
	if err != nil {
		if want == base {
			d.cancel()
			return nil, err // the command line's own settings fail: say so and stop
		}
		d.logger.Warn("the saved settings did not start; starting on the command line and the defaults", "err", err)
		problem = "pilotdesk could not start with your saved settings: " + unwrapUsage(err) +
			". It runs on the defaults instead: open Settings to fix them."
		r, err = d.connect(base)
		if err != nil {
			d.cancel()
			return nil, err
		}
	}
	d.cur = r
	d.win = ui.NewWindow(d.app, r.client, d.options(r, problem))
	return d, nil
}

// connect starts the relay cf names (or picks the remote one) and dials it.
func (d *desktop) connect(cf clientFlags) (*relayConn, error) {
	d.logger.Info("window settings", "settings", effectiveSettings(cf))
	t, stop, err := cf.startTarget(d.ctx, d.logger)
	if err != nil {
		return nil, err
	}
	c, err := client.Config{URL: t.URL, Token: t.Token, Kind: protocol.ClientWindow, HTTPClient: pinnedClient(t.Fingerprint), Logger: d.logger}.Dial(d.ctx)
	if err != nil {
		stop()
		return nil, fmt.Errorf("connecting to the relay at %s: %w", t.URL, err)
	}
	return &relayConn{flags: cf, target: t, client: c, stopFn: stop}, nil
}

// savedSettings are the settings the Settings dialog saved.
func (d *desktop) savedSettings() settings.Settings {
	return settings.Load(d.app.Preferences(), settings.Defaults())
}

// options are the window's options on r.
func (d *desktop) options(r *relayConn, problem string) ui.Options {
	t := r.target
	opts := d.base
	opts.Remote = !t.Embedded
	opts.RelayName = t.Title()
	opts.Model = r.flags.relay.Model
	opts.Logger = d.logger
	opts.Version = Version
	if t.Embedded {
		opts.Agent = t.Agent
		opts.DemoReason = t.DemoReason
	}
	opts.StartProblem = problem
	opts.Devices = newWindowDevices(t)
	opts.Effective = effectiveSettings(r.flags)
	opts.Locked = d.locked
	opts.Restart = d.restart
	return opts
}

// restart applies the saved settings: it stops the running relay (its
// turns end), starts the new one, and moves the window to it. If the new
// settings do not start, it starts the previous ones again and done gets
// why. It runs on the UI goroutine; the work runs on a goroutine and done
// is called on the UI goroutine.
func (d *desktop) restart(done func(error)) {
	if d.restarting {
		done(errors.New("the relay is already restarting"))
		return
	}
	want, err := withPrefs(d.flags, d.locked, d.savedSettings())
	if err != nil {
		done(errors.New(unwrapUsage(err)))
		return
	}
	d.restarting = true
	old := d.cur
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		d.logger.Info("restarting the relay with the new settings")
		// First stop the old relay: the new one opens the same history,
		// which only one relay may hold.
		old.stop()
		r, err := d.connect(want)
		if err != nil {
			d.logger.Warn("the new settings did not start; going back to the previous ones", "err", err)
			back, err2 := d.connect(old.flags)
			if err2 != nil {
				err = fmt.Errorf("%v; starting the previous settings again failed too: %v", err, err2)
			}
			d.handOver(back, err, done)
			return
		}
		d.handOver(r, nil, done)
	}()
}

// handOver gives a started relay (or none) to the UI goroutine, which
// moves the window to it and reports to done. If the desktop is closing,
// the relay is stopped instead.
func (d *desktop) handOver(r *relayConn, err error, done func(error)) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		if r != nil {
			r.close()
		}
		return
	}
	d.pending = r
	d.mu.Unlock()
	fyne.Do(func() {
		d.mu.Lock()
		r := d.pending
		d.pending = nil
		closed := d.closed
		d.mu.Unlock()
		if closed {
			return // close took the pending relay
		}
		d.restarting = false
		if r != nil {
			d.swap(r)
		}
		done(unwrapErr(err))
	})
}

// unwrapErr drops the "usage: " prefix of a settings error.
func unwrapErr(err error) error {
	if err == nil || !errors.Is(err, errUsage) {
		return err
	}
	return errors.New(unwrapUsage(err))
}

// swap moves the window to r and retires the old client (its relay has
// stopped already, unless it is remote).
func (d *desktop) swap(r *relayConn) {
	old := d.cur
	d.cur = r
	d.win.SetClient(r.client, d.options(r, ""))
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		old.close()
	}()
}

// close ends everything after the window's loop has ended: a restart
// under way, the window's goroutines, the client and the relay.
func (d *desktop) close() {
	d.cancel() // a restart still connecting gives up
	d.mu.Lock()
	d.closed = true
	pending := d.pending
	d.pending = nil
	d.mu.Unlock()
	if pending != nil {
		pending.close()
	}
	d.wg.Wait()
	d.win.Close()
	d.cur.client.Close()
	d.win.Wait()
	d.cur.stop()
}
