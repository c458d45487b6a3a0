//go:build !nogui

package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/app"

	"github.com/pilotdesk/pilotdesk/assets"
	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/internal/glpreload"
	"github.com/pilotdesk/pilotdesk/internal/prefsfile"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/settings"
	"github.com/pilotdesk/pilotdesk/ui"
)

// AppID is the desktop app's id (FyneApp.toml, preferences, the .desktop entry).
const AppID = "io.github.pilotdesk"

// showWindow runs the desktop window on the relay the flags and the saved
// settings name until the window is closed or ctx ends (SIGINT/SIGTERM).
// The window shows at once, saying that it connects, while the relay (and
// its agent) starts behind it. If no relay can start, the window says why
// (Settings can fix saved settings) and closing it returns that error.
func showWindow(ctx context.Context, fs *flag.FlagSet, cf *clientFlags, env Env) error {
	logger := newLogger(env.Stderr, slog.LevelInfo)
	if cf.relay.Verbose {
		logger = newLogger(env.Stderr, slog.LevelDebug)
	}
	// The OpenGL driver loads on a thread of its own while the window is
	// built, rather than on the main thread before the window can show.
	waitDriver := glpreload.Start(logger)
	defer waitDriver()
	waitPprof, err := servePprof(ctx, env, logger)
	if err != nil {
		return err
	}
	defer waitPprof()
	resumeGC := pauseGC(startupHeapLimit)
	defer resumeGC()
	a := app.NewWithID(AppID)
	a.SetIcon(fyne.NewStaticResource("pilotdesk.png", assets.Icon))
	// The window's preferences in a file of their own (prefsfile.go). If
	// it cannot be made, the window still starts, on Fyne's store.
	path, err := prefsPath()
	var prefs *prefsfile.Store
	if err == nil {
		prefs, err = usePrefsFile(a, path, logger)
	}
	if err != nil {
		logger.Warn("the preferences file cannot be used; the preferences are Fyne's", "err", err)
	} else {
		defer func() {
			if err := prefs.Close(); err != nil {
				logger.Warn("the preferences were not saved at exit", "err", err)
			}
		}()
	}

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

	// The relay starts once the app runs, which is after the window is
	// mapped: its start (SQLite, the agent, the garbage they make) does
	// not compete with the window's for the CPU. The collector is back
	// on by then. So do chroma's lexers (ui.LoadLexers).
	a.Lifecycle().SetOnStarted(func() {
		resumeGC()
		d.startRelay()
		d.wg.Go(func() {
			ui.LoadLexers()
			d.releaseStartup(startupSettle, debug.FreeOSMemory)
		})
	})
	d.win.ShowAndRun()
	d.close()
	return d.failed()
}

// releaseStartup returns to the system the heap that start-up left free,
// once the first relay is in use (or could not start) and settled:
// start-up runs with the collector off (pauseGC), and the garbage of the
// window's building, of the relay's start and of chroma's lexers leaves
// about 11 MiB of pages that the runtime's scavenger would give back only
// over minutes: the idle window's RSS is 13-16 MiB less for it
// (docs/performance.md). It waits for the relay's start, then settle, then
// runs release (debug.FreeOSMemory), or returns when the desktop closes.
func (d *desktop) releaseStartup(settle time.Duration, release func()) {
	select {
	case <-d.relayStarted:
	case <-d.ctx.Done():
		return
	}
	t := time.NewTimer(settle)
	defer t.Stop()
	select {
	case <-t.C:
		release()
	case <-d.ctx.Done():
	}
}

// startupSettle is how long after the relay's start releaseStartup waits:
// the window asks for the conversation list and draws it meanwhile.
const startupSettle = time.Second

// startupHeapLimit bounds the heap while pauseGC holds the collector off
// at start-up. The window's start needs about 30 MiB; the bound is there
// for a start that goes wrong.
const startupHeapLimit = 256 << 20

// pauseGC turns the garbage collector off until resume is called (once;
// later calls do nothing), with limit as a heap limit meanwhile. The
// window's start-up allocates what it keeps (fonts, widgets, the theme's
// icons): collections before its window is mapped find little garbage
// and cost the first frame about 10 ms on a 2-core machine. A GOGC or
// GOMEMLIMIT the user set comes back with resume.
func pauseGC(limit int64) (resume func()) {
	percent := debug.SetGCPercent(-1)
	before := debug.SetMemoryLimit(-1) // reads it
	debug.SetMemoryLimit(min(before, limit))
	return sync.OnceFunc(func() {
		debug.SetMemoryLimit(before)
		debug.SetGCPercent(percent)
	})
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
// the client, and the window. The window is built first and the relay
// started behind it (openDesktop). Applying settings that need it restarts
// the relay in-process and moves the window to the new one
// (ui.Window.SetClient); the window itself stays.
type desktop struct {
	desktopConfig
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // the first start, restarts, retired clients and loading the lexers

	mu      sync.Mutex
	closed  bool
	pending *relayConn // started, not yet handed to the UI
	// startErr is why no relay could start at all (the window says so).
	startErr error
	// startRelay starts the first relay behind the window, once; the
	// caller runs it when the window shows. relayStarted is closed once
	// that start has ended, in a relay or in an error.
	startRelay   func()
	relayStarted chan struct{}

	win *ui.Window // for the desktop's life

	// The UI goroutine's. cur is nil until the first relay is in use (or
	// for good, when none could start); restarting is true while a relay
	// starts, the first one included.
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

// openDesktop builds the window (not shown yet) and readies the start of
// the relay the flags and the saved settings name behind it (startRelay,
// which the caller runs once the window shows): the window says that it
// connects until the relay runs (start-up costs what a Fyne window costs,
// not also SQLite's, the agent's and the connection's time; the Copilot
// CLI takes seconds to start). If the saved settings do not start, the
// relay starts on the command line and the defaults alone and the window
// says why; if those do not start either, the window says so. Only flags
// that cannot be combined with the saved settings are an error here.
func openDesktop(ctx context.Context, cfg desktopConfig) (*desktop, error) {
	d := &desktop{desktopConfig: cfg, relayStarted: make(chan struct{})}
	d.ctx, d.cancel = context.WithCancel(ctx)
	// One owner token for every relay this window embeds (window.go,
	// clientFlags.ownerToken): random per app start, kept in memory and
	// in the user-only relay file only.
	d.flags.ownerToken = randomToken()

	// The command line over the defaults: what runs if the saved
	// settings do not start.
	base, err := withPrefs(d.flags, d.locked, settings.Defaults())
	if err != nil {
		d.cancel()
		return nil, err
	}
	want, wantErr := withPrefs(d.flags, d.locked, d.savedSettings())
	d.win = ui.NewWindow(d.app, nil, d.startingOptions(base, want, wantErr))
	d.restarting = true
	d.startRelay = sync.OnceFunc(func() {
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			defer close(d.relayStarted)
			r, problem, err := d.start(base, want, wantErr)
			d.handOverFirst(r, problem, err)
		}()
	})
	return d, nil
}

// start starts the relay of the saved settings (want), or else of the
// command line and the defaults (base), and says why want did not start.
func (d *desktop) start(base, want clientFlags, wantErr error) (_ *relayConn, problem string, _ error) {
	var r *relayConn
	err := wantErr
	if err == nil {
		r, err = d.connect(want)
	}
	if err == nil {
		return r, "", nil
	}
	if wantErr == nil && want == base {
		return nil, "", err // the command line's own settings fail
	}
	d.logger.Warn("the saved settings did not start; starting on the command line and the defaults", "err", err)
	problem = "pilotdesk could not start with your saved settings: " + unwrapUsage(err) +
		". It runs on the defaults instead: open Settings to fix them."
	r, err = d.connect(base)
	if err != nil {
		return nil, "", err
	}
	return r, problem, nil
}

// startingOptions are the window's options while its first relay starts:
// what the title and the empty transcript say, and Settings (whose Apply
// waits until the relay runs).
func (d *desktop) startingOptions(base, want clientFlags, wantErr error) ui.Options {
	cf := base
	if wantErr == nil {
		cf = want
	}
	opts := d.base
	opts.Logger = d.logger
	opts.Version = Version
	opts.Effective = effectiveSettings(cf)
	opts.Locked = d.locked
	opts.Restart = d.restart
	opts.Remote = cf.relay.Remote
	if cf.relay.Remote {
		opts.RelayName = target{URL: cf.relay.RemoteURL}.Title()
		opts.Connecting = "Connecting to the relay at " + opts.RelayName + "…"
	} else {
		opts.RelayName = "embedded relay"
		opts.Connecting = "Starting the relay and the agent…"
	}
	return opts
}

// handOverFirst gives the first relay to the window, or tells it that
// none could start.
func (d *desktop) handOverFirst(r *relayConn, problem string, err error) {
	var whyNone error
	if r == nil {
		whyNone = err
	}
	if !d.holdPending(r, whyNone) {
		return
	}
	if err != nil {
		d.logger.Error("the relay did not start", "err", err)
	}
	fyne.Do(func() {
		r, ok := d.takePending()
		if !ok {
			return
		}
		if r == nil {
			d.win.StartFailed(unwrapUsage(err))
			return
		}
		d.mu.Lock() // failed reads it from another goroutine
		d.cur = r
		d.mu.Unlock()
		d.win.SetClient(r.client, d.options(r, problem))
	})
}

// failed is why no relay could start, once the window has closed; nil if
// one did.
func (d *desktop) failed() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cur != nil {
		return nil
	}
	return d.startErr
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
		opts.AgentLabel = t.AgentLabel
		opts.DemoReason = t.DemoReason
		if t.Agent == "script" {
			opts.Script = r.flags.relay.Script
		}
		if t.spaces != nil {
			opts.CheckFolder = t.spaces.Check
		}
		opts.CheckpointsOff = t.checkpointsOff
	}
	opts.StartProblem = problem
	opts.OpenFolder = folderOpener() // the window opens folders only of a relay on this machine
	opts.Devices = newWindowDevices(t)
	// The window goes back where the user was: read before it notes the
	// conversation it shows now (OnShown).
	opts.Reopen = true
	if dir := shownDir(r); dir != "" {
		opts.LastShown = lastShown(dir)
		logger := d.logger
		opts.OnShown = func(id string) { rememberShown(dir, id, logger) }
	} else if !t.Embedded {
		// A remote relay's, which no chat here attaches to: noted in the
		// window's preferences, by relay.
		prefs, key := d.app.Preferences(), remoteShownPref+t.URL
		opts.LastShown = prefs.String(key)
		opts.OnShown = func(id string) { prefs.SetString(key, id) }
	}
	opts.Effective = effectiveSettings(r.flags)
	opts.Locked = d.locked
	opts.Restart = d.restart
	return opts
}

// shownDir is the data dir where the window says which conversation it
// shows (shown.go): that of the relay it embeds or attached to, "" for a
// remote relay or one without a data dir.
func shownDir(r *relayConn) string {
	switch {
	case r.target.Embedded && r.flags.relay.DataDir != memoryDataDir:
		return r.flags.relay.DataDir
	case r.target.attachedTo != nil:
		return r.target.dataDir
	}
	return ""
}

// restart applies the saved settings: it stops the running relay (its
// turns end), starts the new one, and moves the window to it. If the new
// settings do not start, it starts the previous ones again and done gets
// why. It runs on the UI goroutine; the work runs on a goroutine and done
// is called on the UI goroutine.
func (d *desktop) restart(done func(error)) {
	if d.restarting && d.cur == nil {
		done(errors.New("the relay is still starting: apply the settings again once the window is connected"))
		return
	}
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
		if old != nil {
			old.stop()
		}
		r, err := d.connect(want)
		if err != nil && old == nil {
			// No relay ran before (none could start): nothing to go back to.
			d.handOver(nil, err, done)
			return
		}
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
	if !d.holdPending(r, nil) {
		return
	}
	fyne.Do(func() {
		r, ok := d.takePending()
		if !ok {
			return
		}
		if r != nil {
			d.swap(r)
		}
		done(unwrapErr(err))
	})
}

// holdPending leaves r (nil: none started) in d.pending for the UI
// goroutine's takePending, and whyNone, if not nil, in d.startErr for
// failed, under one lock. If the desktop has closed it stops r instead and
// says false: close has run and will not look at pending again.
func (d *desktop) holdPending(r *relayConn, whyNone error) bool {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		if r != nil {
			r.close()
		}
		return false
	}
	d.pending = r
	if whyNone != nil {
		d.startErr = whyNone
	}
	d.mu.Unlock()
	return true
}

// takePending, on the UI goroutine, takes the relay holdPending left and
// ends the restart. ok is false if close took the relay first.
func (d *desktop) takePending() (r *relayConn, ok bool) {
	d.mu.Lock()
	r = d.pending
	d.pending = nil
	closed := d.closed
	d.mu.Unlock()
	if closed {
		return nil, false // close took the pending relay
	}
	d.restarting = false
	return r, true
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
	d.mu.Lock() // failed reads it from another goroutine
	d.cur = r
	d.mu.Unlock()
	d.win.SetClient(r.client, d.options(r, ""))
	if old == nil {
		return
	}
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
	if d.cur != nil {
		d.cur.client.Close()
	}
	d.win.Wait()
	if d.cur != nil {
		d.cur.stop()
	}
}
