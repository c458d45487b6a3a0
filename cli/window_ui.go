package cli

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/app"

	"github.com/pilotdesk/pilotdesk/assets"
	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/ui"
)

// AppID is the desktop app's id (FyneApp.toml, preferences, the .desktop entry).
const AppID = "io.github.pilotdesk"

// showWindow runs the desktop window on the relay the flags name until the
// window is closed or ctx ends (SIGINT/SIGTERM).
func showWindow(ctx context.Context, cf *clientFlags, env Env) error {
	logger := newLogger(env.Stderr, slog.LevelInfo)
	if cf.relay.Verbose {
		logger = newLogger(env.Stderr, slog.LevelDebug)
	}
	a := app.NewWithID(AppID)
	a.SetIcon(fyne.NewStaticResource("pilotdesk.png", assets.Icon))

	t, stopRelay, err := cf.startTarget(ctx, logger)
	if err != nil {
		return err
	}
	defer stopRelay()

	c, err := client.Config{URL: t.URL, Token: t.Token, Logger: logger}.Dial(ctx)
	if err != nil {
		return fmt.Errorf("connecting to the relay at %s: %w", t.URL, err)
	}
	defer c.Close()

	inputTimeout := cf.relay.InputTimeout
	if inputTimeout == 0 && !t.Embedded {
		inputTimeout = 5 * time.Minute // a remote relay's setting is unknown: assume the default
	} else if inputTimeout == 0 {
		inputTimeout = -1 // --input-timeout 0: no time limit
	}
	w := ui.NewWindow(a, c, ui.Options{
		Remote:       !t.Embedded,
		RelayName:    t.Title(),
		Model:        cf.relay.Model,
		InputTimeout: inputTimeout,
		Logger:       logger,
	})
	// A signal quits the app as closing the window does.
	stopWatch := context.AfterFunc(ctx, func() { fyne.Do(a.Quit) })
	defer stopWatch()

	w.ShowAndRun()
	w.Close()
	c.Close()
	w.Wait()
	return nil
}
