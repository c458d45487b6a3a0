package jetstream

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// Device tokens, cluster-wide (history.Devices), in the KV bucket
// pd_devices:
//
//	table         every device (name, role, dates, the token's SHA-256),
//	              one JSON document changed only by compare-and-set
//	used.<hash>   the last use of the device whose token hashes to <hash>
//	              (hex), a Unix time in nanoseconds
//
// One document for the devices makes a name and a hash unique, and an add
// or a revocation atomic, without a transaction over several keys: devices
// are made and revoked by people, a few dozen at most. Uses are frequent
// (every connection of a device touches it) and come from every relay at
// once, so each device's last use is a key of its own, written without
// compare-and-set: a revocation and a connection never contend.
//
// The token itself is stored nowhere: the table holds its SHA-256.
//
// Reads of the table go to the bucket stream's leader (STREAM.MSG.GET),
// not to a replica that may lag: a device revoked on one relay is refused
// by the next upgrade on any other, and the relay's poll of Devices (once a
// second while device connections are open) closes its live connections
// with 4003 there. WatchDevices tells of a change within milliseconds, for
// a relay that would rather not poll.

// maxDevicesTable bounds the table's document, under the server's default
// max_payload (1 MiB): a device takes about 250 bytes of it.
const maxDevicesTable = 512 << 10

const (
	devicesTableKey = "table"
	devicesUsedKey  = "used." // + hex of the token's hash
)

// extras are the store's cluster-wide tables besides the history: the
// device tokens (this file) and the spend ledger (spend.go). Their buckets
// are opened on first use, so a relay that uses neither never makes them.
type extras struct {
	mu      sync.Mutex // guards the fields below
	devices jetstream.KeyValue
	spend   jetstream.KeyValue
	// pending is spend of Writes whose events were stored but whose spend
	// could not be added to the ledger in time: the next Write adds it
	// (spend.go).
	pending []history.Spend
	// spendSeen is the ledger as this store last wrote it, by key, so that
	// Spent shows its own writes even if the watcher's replica lags.
	spendSeen map[string]spendEntry
}

// bucketNames are the extras' buckets: pd_devices and pd_spend, suffixed
// like pd_meta in a namespace.
func (n names) extraBucket(base string) string {
	if suffix, ok := strings.CutPrefix(n.bucket, "pd_meta"); ok {
		return base + suffix
	}
	return base
}

// extraBucket opens (creating if need be) one of the extras' buckets, once.
func (s *Store) extraBucket(ctx context.Context, slot *jetstream.KeyValue, base, description string) (jetstream.KeyValue, error) {
	s.ext.mu.Lock()
	defer s.ext.mu.Unlock()
	if *slot != nil {
		return *slot, nil
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, errClosed
	}
	kv, err := s.openKV(ctx, s.kvConfig(s.names.extraBucket(base), description))
	if err != nil {
		return nil, err
	}
	*slot = kv
	return kv, nil
}

func (s *Store) devicesKV(ctx context.Context) (jetstream.KeyValue, error) {
	return s.extraBucket(ctx, &s.ext.devices, "pd_devices", "pilotdesk device tokens (their SHA-256) and roles")
}

// kvEntry is a key's latest value as the bucket stream's leader has it.
type kvEntry struct {
	value []byte
	rev   uint64 // 0: the key does not exist (never written, or deleted)
}

// leaderGet reads a key's latest value from the bucket stream's leader: a
// direct get (what KeyValue.Get does) may be answered by a replica that
// has not applied the latest write yet.
func (s *Store) leaderGet(ctx context.Context, kv jetstream.KeyValue, key string) (kvEntry, error) {
	bucket := kv.Bucket()
	m, err := s.getMsg(ctx, "KV_"+bucket, msgGetRequest{LastBySubject: "$KV." + bucket + "." + key})
	if errors.Is(err, errNoMessage) {
		return kvEntry{}, nil
	}
	if err != nil {
		return kvEntry{}, fmt.Errorf("read %s/%s: %w", bucket, key, err)
	}
	if m.hdr.Get("KV-Operation") != "" {
		// A delete or purge marker: the key is gone, but its revision is
		// what a Create over it must name.
		return kvEntry{rev: 0}, nil
	}
	return kvEntry{value: m.data, rev: m.seq}, nil
}

// storedDevice is a device in the table. The hash is hex; the token is
// nowhere.
type storedDevice struct {
	Name      string `json:"name"`
	Role      string `json:"role"`
	Hash      string `json:"sha256"`
	CreatedAt int64  `json:"createdAt"`           // Unix ns
	ExpiresAt int64  `json:"expiresAt,omitempty"` // Unix ns; 0: never
}

type devicesTable struct {
	Devices []storedDevice `json:"devices"`
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

func (d storedDevice) device() (history.Device, error) {
	var out history.Device
	h, err := hex.DecodeString(d.Hash)
	if err != nil || len(h) != sha256.Size {
		return out, fmt.Errorf("device %q has a bad hash %q", d.Name, d.Hash)
	}
	copy(out.Hash[:], h)
	out.Name, out.Role = d.Name, d.Role
	out.CreatedAt, out.ExpiresAt = fromUnixNano(d.CreatedAt), fromUnixNano(d.ExpiresAt)
	return out, nil
}

// readDevices reads the table from the leader.
func (s *Store) readDevices(ctx context.Context, kv jetstream.KeyValue) (devicesTable, uint64, error) {
	return readDoc[devicesTable](ctx, s, kv, devicesTableKey, "device tokens")
}

// readDoc reads the JSON document at key from the leader, and its
// revision (0: none yet, and a zero T). what names it in errors.
func readDoc[T any](ctx context.Context, s *Store, kv jetstream.KeyValue, key, what string) (T, uint64, error) {
	var t T
	e, err := s.leaderGet(ctx, kv, key)
	if err != nil {
		return t, 0, fmt.Errorf("jetstream history: %s: %w", what, err)
	}
	if e.rev != 0 {
		if err := json.Unmarshal(e.value, &t); err != nil {
			return t, 0, fmt.Errorf("jetstream history: %s: a bad document (revision %d): %w", what, e.rev, err)
		}
	}
	return t, e.rev, nil
}

// changeDevices applies change to the table with compare-and-set
// (changeDoc).
func (s *Store) changeDevices(ctx context.Context, change func(t *devicesTable, retried bool) error) error {
	kv, err := s.devicesKV(ctx)
	if err != nil {
		return err
	}
	return changeDoc(ctx, s, kv, devicesTableKey, "device tokens", change, func(t *devicesTable) error {
		return fmt.Errorf("jetstream history: device tokens: too many devices (%d): revoke some first", len(t.Devices))
	})
}

// changeDoc applies change to the JSON document at key with
// compare-and-set, read again and retried whenever another store changed
// it in between. change returns errNoChange to leave the document as it
// is. retried says whether an earlier attempt may have been stored (its
// ack was lost): change then recognises its own work instead of failing
// (a second add of the same device, a revocation of a device already
// gone). A document over maxDevicesTable bytes is refused with tooBig's
// error. what names the document in errors.
func changeDoc[T any](ctx context.Context, s *Store, kv jetstream.KeyValue, key, what string, change func(t *T, retried bool) error, tooBig func(t *T) error) error {
	deadline := time.Now().Add(s.opts.WriteTimeout)
	wait := 2 * time.Millisecond
	uncertain := false
	for {
		t, rev, err := readDoc[T](ctx, s, kv, key, what)
		if err != nil {
			return err
		}
		if err := change(&t, uncertain); err != nil {
			if errors.Is(err, errNoChange) {
				return nil
			}
			return err
		}
		data, err := json.Marshal(t)
		if err != nil {
			return fmt.Errorf("jetstream history: %s: encode: %w", what, err)
		}
		if len(data) > maxDevicesTable {
			return tooBig(&t)
		}
		actx, cancel := context.WithTimeout(ctx, callTimeout)
		if rev == 0 {
			_, err = kv.Create(actx, key, data)
		} else {
			_, err = kv.Update(actx, key, data, rev)
		}
		cancel()
		switch {
		case err == nil:
			return nil
		case errors.Is(err, jetstream.ErrKeyExists), errors.Is(err, jetstream.ErrKeyRevisionMismatch):
			// Another store changed the document since it was read (or,
			// on a cluster, is changing it now): read it again.
		case passing(err):
			uncertain = uncertain || !errors.Is(err, nats.ErrNoResponders)
		default:
			return fmt.Errorf("jetstream history: %s: %w", what, err)
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return fmt.Errorf("jetstream history: %s: gave up changing the document: %w", what, err)
		}
		if err := backOff(ctx, &wait); err != nil {
			return fmt.Errorf("jetstream history: %s: %w", what, err)
		}
	}
}

var errNoChange = errors.New("no change")

var _ history.Devices = (*Store)(nil)

// AddDevice stores a new device (history.Devices).
func (s *Store) AddDevice(ctx context.Context, d history.Device) error {
	if err := history.CheckDeviceName(d.Name); err != nil {
		return fmt.Errorf("jetstream history: add device: %w", err)
	}
	sd := storedDevice{Name: d.Name, Role: d.Role, Hash: hex.EncodeToString(d.Hash[:]), CreatedAt: unixNano(d.CreatedAt), ExpiresAt: unixNano(d.ExpiresAt)}
	err := s.changeDevices(ctx, func(t *devicesTable, retried bool) error {
		for _, o := range t.Devices {
			if retried && o == sd {
				return errNoChange // an earlier attempt added it
			}
			if o.Name == sd.Name || o.Hash == sd.Hash {
				return fmt.Errorf("history: add device %q: %w", d.Name, history.ErrDeviceExists)
			}
		}
		t.Devices = append(t.Devices, sd)
		return nil
	})
	if err != nil {
		return err
	}
	if !d.LastUsed.IsZero() {
		return s.TouchDevice(ctx, d.Name, d.LastUsed)
	}
	return nil
}

// Devices lists every device, oldest first (history.Devices).
func (s *Store) Devices(ctx context.Context) ([]history.Device, error) {
	kv, err := s.devicesKV(ctx)
	if err != nil {
		return nil, err
	}
	t, _, err := s.readDevices(ctx, kv)
	if err != nil {
		return nil, err
	}
	out := make([]history.Device, 0, len(t.Devices))
	for _, sd := range t.Devices {
		d, err := sd.device()
		if err != nil {
			return nil, fmt.Errorf("jetstream history: device tokens: %w", err)
		}
		if d.LastUsed, err = s.lastUsed(ctx, kv, sd.Hash); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	slices.SortStableFunc(out, func(a, b history.Device) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

// DeviceByHash returns the device whose token hashes to hash
// (history.Devices): read from the leader, so a device revoked on any
// relay is refused at once.
func (s *Store) DeviceByHash(ctx context.Context, hash [sha256.Size]byte) (history.Device, error) {
	kv, err := s.devicesKV(ctx)
	if err != nil {
		return history.Device{}, err
	}
	t, _, err := s.readDevices(ctx, kv)
	if err != nil {
		return history.Device{}, err
	}
	want := hex.EncodeToString(hash[:])
	i := slices.IndexFunc(t.Devices, func(d storedDevice) bool { return d.Hash == want })
	if i < 0 {
		return history.Device{}, history.ErrNoDevice
	}
	d, err := t.Devices[i].device()
	if err != nil {
		return history.Device{}, fmt.Errorf("jetstream history: device tokens: %w", err)
	}
	if d.LastUsed, err = s.lastUsed(ctx, kv, want); err != nil {
		return history.Device{}, err
	}
	return d, nil
}

// RevokeDevice removes a device and its push subscriptions
// (history.Devices); every relay's next read of the table no longer has
// it.
func (s *Store) RevokeDevice(ctx context.Context, name string) error {
	var hash string
	err := s.changeDevices(ctx, func(t *devicesTable, retried bool) error {
		i := slices.IndexFunc(t.Devices, func(d storedDevice) bool { return d.Name == name })
		if i < 0 {
			if retried {
				return errNoChange // an earlier attempt revoked it
			}
			return fmt.Errorf("history: revoke device %q: %w", name, history.ErrNoDevice)
		}
		hash = t.Devices[i].Hash
		t.Devices = slices.Delete(t.Devices, i, i+1)
		return nil
	})
	if err != nil || hash == "" {
		return err
	}
	// Its push subscriptions go with it (history.Devices). Not in the
	// same write: one left by a failure here is removed by the relay
	// before any push, since its token is no longer in the table.
	if err := s.removePushes(ctx, func(o storedPush) bool { return o.Device == hash }); err != nil {
		s.log.Warn("jetstream history: could not remove a revoked device's push subscriptions (the relays remove them before any push)", "device", name, "err", err)
	}
	// The last use goes with it; a leftover would only be a stale key
	// nobody reads (a new token has a new hash).
	kv, err := s.devicesKV(ctx)
	if err != nil {
		return nil
	}
	if err := kv.Purge(ctx, devicesUsedKey+hash); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		s.log.Debug("jetstream history: could not remove a revoked device's last use", "device", name, "err", err)
	}
	return nil
}

// TouchDevice records a use of the device (history.Devices). A use is one
// write to the device's own key, whichever relay makes it, so uses never
// contend with each other or with a change of the table; the latest time
// is kept if two relays touch it at once.
func (s *Store) TouchDevice(ctx context.Context, name string, at time.Time) error {
	kv, err := s.devicesKV(ctx)
	if err != nil {
		return err
	}
	t, _, err := s.readDevices(ctx, kv)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(t.Devices, func(d storedDevice) bool { return d.Name == name })
	if i < 0 {
		return nil // revoked meanwhile, or never there
	}
	key := devicesUsedKey + t.Devices[i].Hash
	value := []byte(strconv.FormatInt(at.UnixNano(), 10))
	for range 8 {
		e, err := s.leaderGet(ctx, kv, key)
		if err != nil {
			return fmt.Errorf("jetstream history: touch device %q: %w", name, err)
		}
		if e.rev != 0 {
			if prev, err := strconv.ParseInt(string(e.value), 10, 64); err == nil && prev >= at.UnixNano() {
				return nil // a later use is recorded
			}
			_, err = kv.Update(ctx, key, value, e.rev)
		} else {
			_, err = kv.Create(ctx, key, value)
		}
		if err == nil || !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			if err != nil {
				return fmt.Errorf("jetstream history: touch device %q: %w", name, err)
			}
			return nil
		}
	}
	return nil // eight other uses at the same moment: one of them stands
}

func (s *Store) lastUsed(ctx context.Context, kv jetstream.KeyValue, hash string) (time.Time, error) {
	e, err := s.leaderGet(ctx, kv, devicesUsedKey+hash)
	if err != nil {
		return time.Time{}, fmt.Errorf("jetstream history: device tokens: %w", err)
	}
	if e.rev == 0 {
		return time.Time{}, nil
	}
	n, err := strconv.ParseInt(string(e.value), 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("jetstream history: device tokens: a bad last use %q", e.value)
	}
	return fromUnixNano(n), nil
}

// WatchDevices calls changed, from a goroutine of its own, each time the
// devices table changes on any relay (and once at the start), until ctx
// ends; it returns once the watch is set up. A relay can close a revoked
// device's connections within milliseconds with it, where polling Devices
// takes up to the poll's interval. changed should read Devices: the watch
// says only that something changed.
func (s *Store) WatchDevices(ctx context.Context, changed func()) error {
	kv, err := s.devicesKV(ctx)
	if err != nil {
		return err
	}
	sw, err := s.startWatch(ctx, kv, devicesTableKey)
	if err != nil {
		return fmt.Errorf("jetstream history: watch the device tokens: %w", err)
	}
	go sw.follow(ctx, func(jetstream.KeyValueEntry) { changed() }, changed)
	return nil
}
