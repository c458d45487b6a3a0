package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/pilotdesk/pilotdesk/internal/atomicfile"
	"github.com/pilotdesk/pilotdesk/relay"
)

// vapidFile is the relay's VAPID key pair in its data dir (docs/push.md):
// made at the first start, readable by its owner alone, and kept across
// restarts, since every browser's subscription names its public key.
const vapidFile = "vapid.json"

// pushConfig turns Web Push on with the data dir's key pair (made if
// missing); a relay with its history in memory makes a pair for its run.
func pushConfig(dataDir string) (*relay.PushConfig, error) {
	if dataDir == memoryDataDir {
		keys, err := relay.NewVAPIDKeys()
		if err != nil {
			return nil, err
		}
		return &relay.PushConfig{Keys: keys}, nil
	}
	keys, err := loadVAPIDKeys(filepath.Join(dataDir, vapidFile))
	if err != nil {
		return nil, err
	}
	return &relay.PushConfig{Keys: keys}, nil
}

// loadVAPIDKeys reads the key pair at path, or makes it there when there
// is none. A file that cannot be read as a pair is an error, never
// replaced: a new key would silently end every browser's subscription.
func loadVAPIDKeys(path string) (relay.VAPIDKeys, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		var keys relay.VAPIDKeys
		if err := json.Unmarshal(b, &keys); err != nil {
			return relay.VAPIDKeys{}, fmt.Errorf("reading the Web Push key pair %s: %w (move it away to make a new one; browsers then subscribe again)", path, err)
		}
		if err := keys.Check(); err != nil {
			return relay.VAPIDKeys{}, fmt.Errorf("reading the Web Push key pair %s: %w (move it away to make a new one; browsers then subscribe again)", path, err)
		}
		return keys, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return relay.VAPIDKeys{}, fmt.Errorf("reading the Web Push key pair: %w", err)
	}
	keys, err := relay.NewVAPIDKeys()
	if err != nil {
		return relay.VAPIDKeys{}, err
	}
	b, err = json.MarshalIndent(keys, "", "  ")
	if err != nil {
		return relay.VAPIDKeys{}, err
	}
	// Written whole (a crash leaves no half a key, which would keep the
	// relay from starting) and restricted before a byte is written. The
	// data dir's lock lets one relay at a time make it.
	if err := atomicfile.WriteFile(path, append(b, '\n'), atomicfile.OwnerOnly); err != nil {
		return relay.VAPIDKeys{}, fmt.Errorf("writing the Web Push key pair %s: %w", path, err)
	}
	return keys, nil
}
