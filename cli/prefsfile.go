//go:build !nogui

package cli

import (
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"

	"fyne.io/fyne/v2"

	"github.com/pilotdesk/pilotdesk/internal/prefsfile"
)

// prefsFileName is the window's preferences file in the user's config dir
// (prefsPath).
const prefsFileName = "preferences.json"

// prefsPath is where the window keeps its preferences: a folder of
// pilotdesk's in the OS's config dir (XDG_CONFIG_HOME on Linux, Application
// Support on macOS, %APPDATA% on Windows), not the data dir: the settings
// are the window's, the same whichever --data-dir a run is given (or
// :memory:).
func prefsPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("finding the user config dir for the preferences: %w", err)
	}
	return filepath.Join(dir, "pilotdesk", prefsFileName), nil
}

// usePrefsFile makes the store at path a's preferences (a.Preferences()
// returns it from now on). The first time, it starts with the values Fyne's
// own preference store holds (the file of earlier versions). Fyne's store
// then neither saves at exit nor is changed again: its save truncates its
// file before marking the save its own, and its file watcher could read the
// empty file as the app quit ("Preferences load error", "Cause: EOF").
// The caller closes the store after the app has stopped.
func usePrefsFile(a fyne.App, path string, logger *slog.Logger) (*prefsfile.Store, error) {
	old := a.Preferences()
	migrate := func() map[string]any {
		r, ok := old.(interface{ ReadValues(func(map[string]any)) })
		if !ok {
			return nil
		}
		var values map[string]any
		r.ReadValues(func(m map[string]any) { values = maps.Clone(m) })
		return values
	}
	store, err := prefsfile.Open(path, migrate, logger)
	if err != nil {
		return nil, err
	}
	// A cloud provider is how Fyne takes a preference store from outside
	// (fyne.CloudProviderPreferences); this one syncs nothing, it only
	// keeps the file.
	a.SetCloudProvider(prefsProvider{store})
	return store, nil
}

// prefsProvider hands a prefsfile.Store to Fyne as the app's preferences.
type prefsProvider struct{ store *prefsfile.Store }

var _ fyne.CloudProviderPreferences = prefsProvider{}

func (prefsProvider) ProviderName() string { return "pilotdesk preferences file" }
func (prefsProvider) ProviderDescription() string {
	return "The window's preferences, in a file of its own"
}
func (prefsProvider) ProviderIcon() fyne.Resource { return nil }
func (prefsProvider) Setup(fyne.App) error        { return nil }
func (prefsProvider) Cleanup(fyne.App)            {}

func (p prefsProvider) CloudPreferences(fyne.App) fyne.Preferences { return p.store }

var _ fyne.Preferences = (*prefsfile.Store)(nil)
