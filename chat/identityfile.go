package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/internal/atomicfile"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// IdentityFileName is the file, in the data dir, where `pilotdesk chat`
// keeps who it was on each relay with each token: a device token's
// device is learned from the echo of what the terminal sent
// (client.Identity), and without this file a chat resumed after a restart
// would show its own earlier prompts as another's ("sent from Pixel
// (terminal)") until it sent something again. Entries are filed under
// client.Identity.Key, a digest of the relay's URL and the token: the
// token itself is never written. The window keeps the same thing in its
// preferences (ui/identity.go).
const IdentityFileName = "chat-identities.json"

// maxIdentities bounds the file: the ones seen longest ago go first.
const maxIdentities = 64

// identityEntry is who chat was on one relay with one token, and when it
// last learned it.
type identityEntry struct {
	By   protocol.By `json:"by"`
	Seen time.Time   `json:"seen"`
}

// IdentityFile reads and writes one identities file. Its methods may be
// called from any goroutine; mu serializes them within this process (two
// chats writing at once may lose one's entry, which it learns again on its
// next echo).
type IdentityFile struct {
	path   string
	logger *slog.Logger
	mu     sync.Mutex // guards the file on disk
}

// NewIdentityFile names the identities file at path (created, with its
// directory, only when there is something to keep). logger takes the
// warnings of a file that cannot be read or written: they never stop the
// chat.
func NewIdentityFile(path string, logger *slog.Logger) *IdentityFile {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &IdentityFile{path: path, logger: logger}
}

// Keep gives id who chat was on an earlier run with the same relay and
// token, if the file says, and files what id learns from now on. Call it
// before the conversation is replayed.
func (f *IdentityFile) Keep(id *client.Identity) {
	f.mu.Lock()
	entries, err := f.read()
	f.mu.Unlock()
	if err != nil {
		f.logger.Warn("chat: could not read who this terminal was before", "file", f.path, "err", err)
	}
	if e, ok := entries[id.Key()]; ok {
		id.Remember(e.By)
	}
	id.OnLearn(func(by protocol.By) {
		if err := f.store(id.Key(), by); err != nil {
			f.logger.Warn("chat: could not keep who this terminal is", "file", f.path, "err", err)
		}
	})
}

// read returns the file's entries; none when it does not exist. The
// caller holds mu.
func (f *IdentityFile) read() (map[string]identityEntry, error) {
	entries := map[string]identityEntry{}
	raw, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return entries, nil
	}
	if err != nil {
		return entries, err
	}
	if err := json.Unmarshal(raw, &entries); err != nil {
		return map[string]identityEntry{}, fmt.Errorf("%s is not an identities file: %w", f.path, err)
	}
	return entries, nil
}

// store files by under key. A file that cannot be read is replaced: it
// holds nothing but what chat learns again by itself.
func (f *IdentityFile) store(key string, by protocol.By) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	entries, err := f.read()
	if err != nil {
		f.logger.Warn("chat: replacing an unreadable identities file", "file", f.path, "err", err)
	}
	entries[key] = identityEntry{By: by, Seen: time.Now().UTC()}
	if len(entries) > maxIdentities {
		keys := make([]string, 0, len(entries))
		for k := range entries {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return entries[keys[i]].Seen.Before(entries[keys[j]].Seen) })
		for _, k := range keys[:len(entries)-maxIdentities] {
			delete(entries, k)
		}
	}
	raw, err := json.MarshalIndent(entries, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(f.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	// A new file, only this user's, renamed over the old one, so that a
	// crash leaves one or the other.
	return atomicfile.WriteFile(f.path, raw, atomicfile.OwnerOnly)
}
