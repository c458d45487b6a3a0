// Package prefsfile keeps the window app's preferences (its settings, its
// size, what it remembers between runs) in one JSON file of its own: read
// once when the app starts, and replaced whole (internal/atomicfile) by a
// writer goroutine after each change and when the store closes.
//
// Fyne 2.7.1's own preferences file is not safe to rely on: its save
// truncates the file before it marks the save as its own, and its file
// watcher reloads the file on every change, so a reload can read the empty
// file ("Preferences load error" ... "Cause: EOF"). After the app's loop
// stops, that reload runs on the watcher's goroutine while the app saves
// at exit, so quitting logged it now and then. A Store's file is never
// seen half-written, and nothing watches it.
//
// Store has fyne.Preferences's methods without importing Fyne; the app
// hands it to Fyne as its preference store (cli: fyne.CloudProviderPreferences).
package prefsfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"

	"github.com/pilotdesk/pilotdesk/internal/atomicfile"
	"github.com/pilotdesk/pilotdesk/internal/ownerfile"
)

// maxSize bounds the file read at start: preferences are a few kilobytes;
// anything bigger was not written by a Store.
const maxSize = 4 << 20

// Store is a preference store backed by one file.
type Store struct {
	path string
	log  *slog.Logger

	mu     sync.Mutex
	values map[string]any
	// changed are the keys set or removed since the last write: a write
	// lays them over what the file holds then, so two windows running at
	// once keep each other's other keys.
	changed   map[string]struct{}
	listeners []func()
	closed    bool

	kick chan struct{} // a change waits to be written (buffered, 1)
	stop chan struct{} // closed by Close
	done chan struct{} // closed when the writer has ended
}

// Open reads the store at path. If there is no file yet, migrate (if not
// nil) gives the values to start with, such as those of the preference
// store used before, and they are written at once, so a migration happens
// once. A file that cannot be read as preferences is moved aside (to
// path+".bad") with a warning, and the store starts empty: a damaged file
// must not keep the app from starting. The store's writer runs until Close.
func Open(path string, migrate func() map[string]any, logger *slog.Logger) (*Store, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Store{
		path:    path,
		log:     logger,
		values:  map[string]any{},
		changed: map[string]struct{}{},
		kick:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	if err := ownerfile.MkdirAll(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("making the preferences' folder: %w", err)
	}
	values, err := readFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if migrate != nil {
			for k, v := range migrate() {
				s.values[k] = copyValue(v)
				s.changed[k] = struct{}{}
			}
		}
		// Written now, even empty: the next start finds the file and
		// migrates nothing again.
		if err := s.write(); err != nil {
			return nil, err
		}
		if len(s.values) > 0 {
			logger.Info("preferences moved to their own file", "path", path, "keys", len(s.values))
		}
	case err != nil:
		bad := path + ".bad"
		if rerr := os.Rename(path, bad); rerr != nil {
			return nil, fmt.Errorf("%w (and moving it aside: %v)", err, rerr)
		}
		logger.Warn("the preferences file could not be read; it was moved aside and the defaults are used", "err", err, "moved to", bad)
	default:
		s.values = values
	}
	go s.writer()
	return s, nil
}

// readFile reads the preferences in the file at path.
func readFile(path string) (map[string]any, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the preferences: %w", err)
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(f, maxSize+1)); err != nil {
		return nil, fmt.Errorf("reading the preferences %s: %w", path, err)
	}
	if buf.Len() > maxSize {
		return nil, fmt.Errorf("reading the preferences %s: larger than %d bytes", path, maxSize)
	}
	values := map[string]any{}
	dec := json.NewDecoder(&buf)
	dec.UseNumber()
	if err := dec.Decode(&values); err != nil {
		return nil, fmt.Errorf("reading the preferences %s: %w", path, err)
	}
	if values == nil { // the file said null
		values = map[string]any{}
	}
	for k, v := range values {
		values[k] = fromJSON(v)
	}
	return values, nil
}

// fromJSON turns a decoded JSON value into the type its setter stores:
// whole numbers into int, others into float64, lists of one type into
// slices of it. The getters take either kind of number.
func fromJSON(v any) any {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return int(i)
		}
		f, _ := v.Float64()
		return f
	case []any:
		if len(v) == 0 {
			return []string{}
		}
		switch v[0].(type) {
		case bool:
			return listOf[bool](v)
		case string:
			return listOf[string](v)
		case json.Number:
			out := make([]float64, 0, len(v))
			for _, x := range v {
				n, ok := x.(json.Number)
				if !ok {
					return v
				}
				f, _ := n.Float64()
				out = append(out, f)
			}
			return out
		}
	}
	return v
}

func listOf[T any](v []any) any {
	out := make([]T, 0, len(v))
	for _, x := range v {
		t, ok := x.(T)
		if !ok {
			return v
		}
		out = append(out, t)
	}
	return out
}

// copyValue copies a slice value, so a caller's later changes to its slice
// do not change the store.
func copyValue(v any) any {
	switch v := v.(type) {
	case []bool:
		return slices.Clone(v)
	case []float64:
		return slices.Clone(v)
	case []int:
		return slices.Clone(v)
	case []string:
		return slices.Clone(v)
	}
	return v
}

// writer writes the file after changes, one write for a burst of them,
// until Close.
func (s *Store) writer() {
	defer close(s.done)
	for {
		select {
		case <-s.kick:
			if err := s.write(); err != nil {
				s.log.Warn("the preferences were not saved", "err", err)
			}
		case <-s.stop:
			return
		}
	}
}

// write lays the changed keys over the file's current content and replaces
// the file with the result.
func (s *Store) write() error {
	s.mu.Lock()
	changed := s.changed
	s.changed = map[string]struct{}{}
	own := maps.Clone(s.values)
	s.mu.Unlock()

	merged, err := readFile(s.path)
	if err != nil {
		merged = map[string]any{} // none yet, or damaged: ours alone
	}
	for k := range changed {
		if v, ok := own[k]; ok {
			merged[k] = v
		} else {
			delete(merged, k)
		}
	}
	data, err := json.Marshal(merged)
	if err == nil {
		err = atomicfile.WriteFile(s.path, append(data, '\n'), atomicfile.OwnerOnly)
	}
	if err != nil {
		// Kept for the next write.
		s.mu.Lock()
		for k := range changed {
			s.changed[k] = struct{}{}
		}
		s.mu.Unlock()
		return fmt.Errorf("saving the preferences: %w", err)
	}
	return nil
}

// Close stops the writer and writes what it has not. The store still
// answers reads after; changes after Close are not saved.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	close(s.stop)
	<-s.done
	s.mu.Lock()
	pending := len(s.changed) > 0
	s.mu.Unlock()
	if pending {
		return s.write()
	}
	return nil
}

// Path is the file the store keeps its values in.
func (s *Store) Path() string { return s.path }

func (s *Store) get(key string) (any, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.values[key]
	return v, ok
}

func (s *Store) set(key string, value any) {
	s.update(func(values map[string]any) { values[key] = copyValue(value) })
}

// update changes the values with fn, notes which keys it changed, wakes
// the writer, and tells the listeners if anything changed.
func (s *Store) update(fn func(map[string]any)) {
	s.mu.Lock()
	before := maps.Clone(s.values)
	fn(s.values)
	grew := false
	for k, v := range s.values {
		if old, ok := before[k]; !ok || !reflect.DeepEqual(old, v) {
			s.changed[k] = struct{}{}
			grew = true
		}
	}
	for k := range before {
		if _, ok := s.values[k]; !ok {
			s.changed[k] = struct{}{}
			grew = true
		}
	}
	listeners := slices.Clone(s.listeners)
	closed := s.closed
	s.mu.Unlock()
	if !grew {
		return
	}
	if !closed {
		select {
		case s.kick <- struct{}{}:
		default: // a write is already due; it takes this change too
		}
	}
	for _, l := range listeners {
		l()
	}
}

// WriteValues changes many values at once, in one write (settings.Save).
func (s *Store) WriteValues(fn func(map[string]any)) { s.update(fn) }

// ReadValues reads the values; fn must not keep or change the map.
func (s *Store) ReadValues(fn func(map[string]any)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(s.values)
}

// AddChangeListener calls listener after each change.
func (s *Store) AddChangeListener(listener func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listeners = append(s.listeners, listener)
}

// ChangeListeners are the listeners AddChangeListener added.
func (s *Store) ChangeListeners() []func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.listeners)
}

// RemoveValue forgets key.
func (s *Store) RemoveValue(key string) {
	s.update(func(values map[string]any) { delete(values, key) })
}

func (s *Store) Bool(key string) bool { return s.BoolWithFallback(key, false) }

func (s *Store) BoolWithFallback(key string, fallback bool) bool {
	return get(s, key, fallback, exactly[bool])
}

func (s *Store) SetBool(key string, value bool) { s.set(key, value) }

func (s *Store) BoolList(key string) []bool { return s.BoolListWithFallback(key, []bool{}) }

func (s *Store) BoolListWithFallback(key string, fallback []bool) []bool {
	return get(s, key, fallback, cloned[bool])
}

func (s *Store) SetBoolList(key string, value []bool) { s.set(key, value) }

func (s *Store) Float(key string) float64 { return s.FloatWithFallback(key, 0) }

func (s *Store) FloatWithFallback(key string, fallback float64) float64 {
	return get(s, key, fallback, number[float64])
}

func (s *Store) SetFloat(key string, value float64) { s.set(key, value) }

func (s *Store) FloatList(key string) []float64 { return s.FloatListWithFallback(key, []float64{}) }

func (s *Store) FloatListWithFallback(key string, fallback []float64) []float64 {
	return get(s, key, fallback, numbers[float64])
}

func (s *Store) SetFloatList(key string, value []float64) { s.set(key, value) }

func (s *Store) Int(key string) int { return s.IntWithFallback(key, 0) }

func (s *Store) IntWithFallback(key string, fallback int) int {
	return get(s, key, fallback, number[int])
}

func (s *Store) SetInt(key string, value int) { s.set(key, value) }

func (s *Store) IntList(key string) []int { return s.IntListWithFallback(key, []int{}) }

func (s *Store) IntListWithFallback(key string, fallback []int) []int {
	return get(s, key, fallback, numbers[int])
}

func (s *Store) SetIntList(key string, value []int) { s.set(key, value) }

func (s *Store) String(key string) string { return s.StringWithFallback(key, "") }

func (s *Store) StringWithFallback(key, fallback string) string {
	return get(s, key, fallback, exactly[string])
}

func (s *Store) SetString(key string, value string) { s.set(key, value) }

func (s *Store) StringList(key string) []string { return s.StringListWithFallback(key, []string{}) }

func (s *Store) StringListWithFallback(key string, fallback []string) []string {
	return get(s, key, fallback, cloned[string])
}

func (s *Store) SetStringList(key string, value []string) { s.set(key, value) }

// get is every getter: the value at key read as T by as, or fallback when
// there is none or as cannot read it as T.
func get[T any](s *Store, key string, fallback T, as func(any) (T, bool)) T {
	if v, ok := s.get(key); ok {
		if t, ok := as(v); ok {
			return t
		}
	}
	return fallback
}

func exactly[T any](v any) (T, bool) {
	t, ok := v.(T)
	return t, ok
}

// cloned reads a list as a copy, so the caller's changes to it do not
// change the store.
func cloned[T any](v any) ([]T, bool) {
	t, ok := v.([]T)
	return slices.Clone(t), ok
}

// number reads either kind of number (fromJSON makes a whole number read
// from the file an int, whatever its setter was) as T.
func number[T int | float64](v any) (T, bool) {
	switch v := v.(type) {
	case int:
		return T(v), true
	case float64:
		return T(v), true
	}
	return 0, false
}

// numbers reads a list of either kind of number as a new []T.
func numbers[T int | float64](v any) ([]T, bool) {
	switch v := v.(type) {
	case []T:
		return slices.Clone(v), true
	case []int:
		return convertAll[T](v), true
	case []float64:
		return convertAll[T](v), true
	}
	return nil, false
}

func convertAll[T, F int | float64](in []F) []T {
	out := make([]T, len(in))
	for i, x := range in {
		out[i] = T(x)
	}
	return out
}
