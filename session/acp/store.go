package acp

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/pilotdesk/pilotdesk/internal/atomicfile"
)

// sessionStore remembers which ACP session each conversation runs, so that a
// relay that restarts can session/load it: unlike the Copilot CLI's own
// protocol, ACP lets the agent pick the session id, so it cannot be derived
// from the conversation id. With a path the map is kept in a small JSON file
// (written whole, through a rename); without one, in memory for the life of
// the Agent.
type sessionStore struct {
	path string

	mu sync.Mutex
	m  map[string]storedSession // by conversation id
}

// storedSession is one conversation's ACP session. The command line and the
// work dir are kept with it: another agent, or the same one elsewhere, has
// no such session.
type storedSession struct {
	SessionID string `json:"sessionId"`
	Command   string `json:"command"`
	Cwd       string `json:"cwd"`
}

type storeFile struct {
	Version  int                      `json:"version"`
	Sessions map[string]storedSession `json:"sessions"`
}

const storeVersion = 1

// openStore reads the file at path, if there is one. A file that cannot be
// read is an error; one in another version is ignored (and replaced at the
// next write).
func openStore(path string) (*sessionStore, error) {
	s := &sessionStore{path: path, m: map[string]storedSession{}}
	if path == "" {
		return s, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("acp: reading the session map: %w", err)
	}
	var f storeFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("acp: the session map %s is not valid JSON: %w", path, err)
	}
	if f.Version == storeVersion && f.Sessions != nil {
		s.m = f.Sessions
	}
	return s, nil
}

// get returns the conversation's session if it was made by this command in
// this work dir.
func (s *sessionStore) get(conversationID, command, cwd string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[conversationID]
	if !ok || e.Command != command || e.Cwd != cwd || e.SessionID == "" {
		return "", false
	}
	return e.SessionID, true
}

// put records the conversation's session and writes the file.
func (s *sessionStore) put(conversationID string, e storedSession) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[conversationID] == e {
		return nil
	}
	s.m[conversationID] = e
	return s.writeLocked()
}

func (s *sessionStore) writeLocked() error {
	if s.path == "" {
		return nil
	}
	data, err := json.MarshalIndent(storeFile{Version: storeVersion, Sessions: s.m}, "", "  ")
	if err != nil {
		return fmt.Errorf("acp: encoding the session map: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return fmt.Errorf("acp: writing the session map: %w", err)
	}
	if err := atomicfile.WriteFile(s.path, data, atomicfile.Private); err != nil {
		return fmt.Errorf("acp: writing the session map: %w", err)
	}
	return nil
}
