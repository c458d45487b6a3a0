// Package jetstream is a history.Store on a NATS JetStream cluster, so that
// the history outlives any one machine (docs/scale-out.md).
//
// Layout: a conversation's events are in one of the history's streams,
// chosen by a hash of its id (shards: PD_EVENTS, PD_EVENTS_1, …, one
// leader each, so that the cluster's nodes share the appends; one stream
// unless Options.Streams says more), on one subject per conversation
// (pilotdesk.conv.<token>.ev in PD_EVENTS, pilotdesk.conv<k>.<token>.ev in
// PD_EVENTS_<k>); a KV bucket (pd_meta) holds each conversation's record
// for the list, and the number of streams (layoutKey). Every write of
// a conversation is one append to its subject: one message (its small
// events packed together) or an atomic batch, whose first message carries
// Nats-Expected-Last-Subject-Sequence: the stream seq of the subject's last
// message as this store last saw it. The server stores the append only if
// nobody appended since, so a conversation's appends form one chain, and a
// writer that lost the conversation to another (an old owner) is refused:
// the fence. The last message of every append carries the conversation's
// record (history.Conversation and the store's own counters), so the
// subject's last message alone says what the conversation is,
// consistently with its events.
//
// The stream is the truth; the KV record is written after each append and
// may lag it (a crash in between): Conversations repairs it from the
// stream by comparing message counts.
package jetstream

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pilotdesk/pilotdesk/relay/history"
)

// EpochKey is the stream metadata key that names the history's epoch.
const EpochKey = "pilotdesk_epoch"

// Options tune a Store; the zero value is the documented default.
type Options struct {
	// Replicas of the events stream and the KV bucket when Open creates
	// them (an existing stream keeps its own). Default 3: an acknowledged
	// event survives the loss of any one node.
	Replicas int
	// Streams is how many streams the conversations are spread over, by
	// a hash of their id: each has its own leader, so that several nodes
	// share the appends. Fixed when a history is made: the first store
	// to open it writes the count in pd_meta (layoutKey), and a store
	// asking for another count is refused (a conversation would be looked
	// for in another stream than the one that holds it). 0 takes the
	// history's count (1 for a new one): for tools that only read.
	Streams int
	// Namespace, when set, gives the store its own stream, subjects and
	// bucket (PD_EVENTS_<ns>, pilotdesk.<ns>.conv.…, pd_meta_<ns>), so
	// that several histories can share one cluster (tests).
	Namespace string
	// RequestTimeout bounds one JetStream request. Default 5 s.
	RequestTimeout time.Duration
	// WriteTimeout bounds how long Write retries an append that fails for
	// a reason that passes (no stream leader, a node down, a lost ack). It
	// must outlast a leader election: 4–9 s measured. Default 30 s.
	WriteTimeout time.Duration
	// MaxInflight bounds the appends one store runs at once (one per
	// conversation). The server refuses more than
	// jetstream.limits.batch.max_inflight_per_stream open batches per
	// stream (default 50); a refused one is retried. Default 32.
	MaxInflight int
	// Logger gets warnings. Default slog.Default().
	Logger *slog.Logger

	// LoseAck is for tests: called after an append of a conversation was
	// acknowledged, when it returns true the store acts as if the ack had
	// been lost (the Write fails, the append's outcome unsure), as when the
	// cluster loses its quorum with the append stored.
	LoseAck func(conversationID string) bool
	// watchWait bounds one attempt at setting up a KV watcher (watch.go).
	// Default watchWait; tests shorten it.
	watchWait time.Duration
}

func (o *Options) setDefaults() {
	if o.Replicas <= 0 {
		o.Replicas = 3
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 5 * time.Second
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 30 * time.Second
	}
	if o.MaxInflight <= 0 {
		o.MaxInflight = 32
	}
	if o.watchWait <= 0 {
		o.watchWait = watchWait
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// names are the stream, subjects and bucket of one history: those of its
// first stream (shard 0), which the others' are made from (shardNames).
type names struct {
	stream  string // PD_EVENTS
	prefix  string // pilotdesk.conv: a conversation's subject is prefix.<token>.ev
	subject string // pilotdesk.conv.*.ev, the stream's subjects
	bucket  string // pd_meta
}

// MaxStreams bounds Options.Streams: each stream is a Raft group on every
// node it is replicated on, and a few per node are what shares the
// appends.
const MaxStreams = 64

// shardNames are the names of the k-th stream: the first keeps the names
// a history of one stream always had (PD_EVENTS, pilotdesk.conv.*.ev), so
// that one made before there were several keeps working; the k-th is
// PD_EVENTS_k on pilotdesk.conv<k>.*.ev, whose subjects no other stream's
// overlap.
func (n names) shardNames(k int) names {
	if k == 0 {
		return n
	}
	ks := strconv.Itoa(k)
	sn := n
	sn.stream = n.stream + "_" + ks
	sn.prefix = n.prefix + ks
	sn.subject = sn.prefix + ".*.ev"
	return sn
}

// shard is one of the history's event streams.
type shard struct {
	names // stream is its name
	st    jetstream.Stream
	epoch string
}

// subjectOf is the conversation's subject in this stream.
func (sh *shard) subjectOf(id string) string { return sh.prefix + "." + token(id) + ".ev" }

// shardIndex is the stream a conversation of a history of n streams is
// in: FNV-1a of its id, modulo n. Never to change: a history's
// conversations are where it says.
func shardIndex(id string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return int(h.Sum32() % uint32(n))
}

// shardOf is the stream that holds the conversation.
func (s *Store) shardOf(id string) *shard { return s.shards[shardIndex(id, len(s.shards))] }

// subjectOf is the conversation's subject, in its stream.
func (s *Store) subjectOf(id string) string { return s.shardOf(id).subjectOf(id) }

var namespaceRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

func namesFor(ns string) (names, error) {
	if ns == "" {
		return names{stream: "PD_EVENTS", prefix: "pilotdesk.conv", subject: "pilotdesk.conv.*.ev", bucket: "pd_meta"}, nil
	}
	if !namespaceRE.MatchString(ns) {
		return names{}, fmt.Errorf("jetstream history: namespace %q: want 1-32 of A-Z a-z 0-9 _ -", ns)
	}
	return names{
		stream:  "PD_EVENTS_" + ns,
		prefix:  "pilotdesk." + ns + ".conv",
		subject: "pilotdesk." + ns + ".conv.*.ev",
		bucket:  "pd_meta_" + ns,
	}, nil
}

// plainToken is a conversation id used as it is in subjects and KV keys:
// UUIDs and other simple ids.
var plainToken = regexp.MustCompile(`^[0-9A-Za-z-]{1,64}$`)

// token is the subject token and KV key of a conversation. Ids are chosen
// by clients; any that is not plain becomes b64_ and its base64url, which
// never collides with a plain one (no underscore) and is valid in both.
func token(id string) string {
	if plainToken.MatchString(id) {
		return id
	}
	return "b64_" + base64.RawURLEncoding.EncodeToString([]byte(id))
}

// Store is a history.Store on JetStream. Its methods are safe for
// concurrent use. It does not own the NATS connection it is given.
type Store struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	shards []*shard // the event streams; a conversation is in shardOf's
	kv     jetstream.KeyValue
	names  names
	opts   Options
	log    *slog.Logger
	epoch  string
	// writer names this store in the records of its appends, so that it
	// recognises an append of its own whose ack it did not get.
	writer  string
	appends atomic.Uint64
	// chunk is the largest frame piece one message carries: the server's
	// max_payload less room for the headers (the record, the batch's).
	chunk int
	// readBytes caps what one request of a replay asks for (the server
	// sends one message more than it).
	readBytes int
	inflight  chan struct{} // a semaphore of MaxInflight appends
	acks      ackInbox      // where a Write awaits its appends' acks (acks.go)

	// The KV syncer (kv.go): woken by kvWake, stopped by closing kvStop,
	// done when kvDone is closed.
	kvWake   chan struct{}
	kvStop   chan struct{}
	kvDone   chan struct{}
	kvWarned time.Time // when the syncer last warned; its own

	ext extras // device tokens and the spend ledger (devices.go, spend.go)

	// changes is the subject prefix a Cluster has this store publish its
	// record changes on (follow.go): nil publishes none (one relay).
	changes atomic.Pointer[string]
	// lease is the Cluster this store writes for, once it has started: an
	// append goes out only while the relay's lease surely holds
	// (mayAppend). nil: a store of one relay, which appends at any time.
	lease atomic.Pointer[Cluster]

	mu     sync.Mutex            // guards convs, dirty, closed and the convStates' fields
	convs  map[string]*convState // by conversation id
	dirty  map[string]struct{}   // conversations whose KV record is behind (kv.go)
	closed bool
}

// convState is what the store knows of a conversation's subject. write
// serialises the appends of the conversation (one in flight: the next
// expectation is the previous append's ack); the other fields are guarded
// by Store.mu.
type convState struct {
	write sync.Mutex

	known  bool   // the fields below say what the stream holds
	exists bool   // the subject has messages
	tail   uint64 // stream seq of the subject's last message: the next append's expectation
	rec    record // the record the last append carried
	// unsure is an append that failed after some of it may have been
	// stored (a lost ack, the cluster unreachable, a long append cut
	// short). Nothing is ever deleted to undo it: the stream may have
	// republished it and clients may hold its events. The conversation's
	// next write reads the subject first (resolve): if nothing came after
	// the append's expectation, it was not stored and its seqs are free;
	// otherwise the write fails with history.ErrConflict, and the writer
	// takes what the stream holds, as after a takeover.
	unsure *undo
	// pos are where some of its events are, when it is stored in seq
	// order (positions.go).
	pos []position
	// kvRev is the revision of the conversation's KV record as this store
	// last wrote or read it (0: unknown).
	kvRev uint64
	// seen is the latest message of the subject seen on its live subject
	// (Cluster), seenRec its record: appended by another relay, so reads
	// go up to it. Never an append's expectation: an old owner must not
	// learn its way past the fence.
	seen    uint64
	seenRec record
	// told is the record this store last published on the changes subject
	// (follow.go), at toldAt; toldOK says there is one.
	told   record
	toldAt time.Time
	toldOK bool
}

// Open connects a store to JetStream over nc: it creates the events stream
// (with a new epoch) and the KV bucket, or finds them. The server must be
// 2.12 or newer (atomic batch publish).
func Open(ctx context.Context, nc *nats.Conn, opts Options) (*Store, error) {
	opts.setDefaults()
	n, err := namesFor(opts.Namespace)
	if err != nil {
		return nil, err
	}
	if !nc.IsConnected() {
		return nil, fmt.Errorf("jetstream history: not connected to NATS (%v)", nc.Status())
	}
	if v := nc.ConnectedServerVersion(); !versionAtLeast(v, 2, 12) {
		return nil, fmt.Errorf("jetstream history: nats-server %s is too old: it needs 2.12 or newer (atomic batch publish)", v)
	}
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(opts.RequestTimeout))
	if err != nil {
		return nil, fmt.Errorf("jetstream history: %w", err)
	}
	s := &Store{
		nc: nc, js: js, names: n, opts: opts, log: opts.Logger,
		writer:   randomHex(6),
		inflight: make(chan struct{}, opts.MaxInflight),
		convs:    map[string]*convState{},
		dirty:    map[string]struct{}{},
		kvWake:   make(chan struct{}, 1),
		kvStop:   make(chan struct{}),
		kvDone:   make(chan struct{}),
	}
	maxPayload := int(nc.MaxPayload())
	if maxPayload < 64<<10 {
		return nil, fmt.Errorf("jetstream history: the server's max_payload is %d bytes; it needs at least 64 KiB", maxPayload)
	}
	s.chunk = maxPayload - maxRecordHeader - 4<<10
	s.readBytes = 256 << 10

	if err := s.openBucket(ctx); err != nil {
		return nil, err
	}
	count, err := s.layout(ctx)
	if err != nil {
		return nil, err
	}
	for k := range count {
		sh := &shard{names: n.shardNames(k)}
		if err := s.openStream(ctx, sh); err != nil {
			return nil, err
		}
		s.shards = append(s.shards, sh)
	}
	s.epoch = s.shards[0].epoch
	if count > 1 {
		// Any stream made anew is a new history for its conversations:
		// the epoch is all of theirs.
		h := sha256.New()
		for _, sh := range s.shards {
			h.Write([]byte(sh.epoch + "\n"))
		}
		s.epoch = hex.EncodeToString(h.Sum(nil)[:8])
	}
	go s.runKV()
	return s, nil
}

// openStream finds the events stream and reads its epoch, or creates it
// with a new one. Created with CreateStream, never CreateOrUpdateStream,
// which would replace the epoch in its metadata.
func (s *Store) openStream(ctx context.Context, sh *shard) error {
	cfg := jetstream.StreamConfig{
		Name:        sh.names.stream,
		Description: "pilotdesk conversation events, one subject per conversation",
		Subjects:    []string{sh.names.subject},
		Storage:     jetstream.FileStorage,
		Replicas:    s.opts.Replicas,
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		// History is kept until deleted: no age or count limit.
		MaxAge:   0,
		MaxMsgs:  -1,
		MaxBytes: -1,
		// Direct gets are for other relays' cheap reads; this store reads
		// through the leader (read.go) because a follower may lag.
		AllowDirect:        true,
		AllowAtomicPublish: true,
		Metadata:           map[string]string{EpochKey: history.NewEpoch()},
	}
	// Look first: a stream that exists is the common case, and creating
	// one that exists fails anyway (its epoch differs).
	var st jetstream.Stream
	err := s.leaderCall(ctx, func(ctx context.Context) (err error) {
		st, err = s.js.Stream(ctx, sh.names.stream)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			st, err = s.js.CreateStream(ctx, cfg)
			if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
				st, err = s.js.Stream(ctx, sh.names.stream) // another relay made it meanwhile
				if errors.Is(err, jetstream.ErrStreamNotFound) {
					err = fmt.Errorf("stream %s: %w", sh.names.stream, errForming)
				}
			}
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("jetstream history: open stream %s: %w", sh.names.stream, err)
	}
	info := st.CachedInfo()
	sh.epoch = info.Config.Metadata[EpochKey]
	if sh.epoch == "" {
		return fmt.Errorf("jetstream history: stream %s has no %s in its metadata: it was not made by pilotdesk", sh.names.stream, EpochKey)
	}
	if !info.Config.AllowAtomicPublish {
		return fmt.Errorf("jetstream history: stream %s does not allow atomic batch publish (allow_atomic); the server may be older than 2.12", sh.names.stream)
	}
	if !slices.Equal(info.Config.Subjects, cfg.Subjects) {
		return fmt.Errorf("jetstream history: stream %s has subjects %v, want %v", sh.names.stream, info.Config.Subjects, cfg.Subjects)
	}
	if info.Config.Replicas != s.opts.Replicas {
		s.log.Warn("jetstream history: the events stream exists with another replica count; keeping it", "stream", sh.names.stream, "replicas", info.Config.Replicas, "asked", s.opts.Replicas)
	}
	sh.st = st
	return nil
}

func (s *Store) openBucket(ctx context.Context) error {
	kv, err := s.openKV(ctx, s.kvConfig(s.names.bucket, "pilotdesk conversation records, for the list"))
	if err != nil {
		return err
	}
	s.kv = kv
	return nil
}

// kvConfig is every KV bucket of the history's: the last value of each key
// only, on disk, with the history's replicas.
func (s *Store) kvConfig(name, description string) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:      name,
		Description: description,
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    s.opts.Replicas,
	}
}

// openKV finds a KV bucket, or creates it: the first relay of a cluster
// creates the buckets, and relays that start together race to. One that
// loses finds the bucket made by the other, or, while its replicas are
// still forming, not yet (errForming, which leaderCall waits out).
func (s *Store) openKV(ctx context.Context, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	var kv jetstream.KeyValue
	err := s.leaderCall(ctx, func(ctx context.Context) (err error) {
		kv, err = s.js.KeyValue(ctx, cfg.Bucket)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			kv, err = s.js.CreateKeyValue(ctx, cfg)
			if errors.Is(err, jetstream.ErrBucketExists) {
				kv, err = s.js.KeyValue(ctx, cfg.Bucket) // another relay made it meanwhile
				if errors.Is(err, jetstream.ErrBucketNotFound) {
					err = fmt.Errorf("bucket %s: %w", cfg.Bucket, errForming)
				}
			}
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("jetstream history: open bucket %s: %w", cfg.Bucket, err)
	}
	return kv, nil
}

// Epoch is the events stream's: a re-created stream is a new history.
func (s *Store) Epoch() string { return s.epoch }

// Close writes the KV records still behind (for a few seconds at most) and
// marks the store closed. It leaves the NATS connection to its owner.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	close(s.kvStop)
	<-s.kvDone
	s.closeAcks()
	return nil
}

var errClosed = errors.New("jetstream history: the store is closed")

// state returns the conversation's state, creating an unknown one.
func (s *Store) state(id string) (*convState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	st := s.convs[id]
	if st == nil {
		st = &convState{}
		s.convs[id] = st
	}
	return st, nil
}

// view is a copy of a conversation's state, taken under Store.mu.
type view struct {
	exists bool
	tail   uint64
	rec    record
	unsure *undo
}

// load returns what the stream holds of a conversation: from what this
// store knows, or else from the subject's last message (read on the
// leader). A state read here is kept only if no write made it known
// meanwhile.
func (s *Store) load(ctx context.Context, id string, st *convState) (view, error) {
	s.mu.Lock()
	if st.known {
		v := view{exists: st.exists, tail: st.tail, rec: st.rec, unsure: st.unsure}
		s.mu.Unlock()
		return v, nil
	}
	s.mu.Unlock()
	v, err := s.readTail(ctx, id)
	if err != nil {
		return view{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !st.known {
		st.known, st.exists, st.tail, st.rec = true, v.exists, v.tail, v.rec
	}
	return view{exists: st.exists, tail: st.tail, rec: st.rec, unsure: st.unsure}, nil
}

// knownSure reports whether load answers for st without a read: its state
// is known and its last append is not unsure.
func (s *Store) knownSure(st *convState) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return st.known && st.unsure == nil
}

// readLoad is load for a read: while the conversation's last append is
// unsure, what the subject holds is read afresh, so that a read never stops
// short of what may have been stored (and sent by other relays) after it.
func (s *Store) readLoad(ctx context.Context, id string, st *convState) (view, error) {
	v, err := s.load(ctx, id, st)
	if err != nil || v.unsure == nil {
		return v, err
	}
	return s.readTail(ctx, id)
}

// forget makes the store read the conversation's state from the stream
// next time (after a conflict: someone else appended).
func (s *Store) forget(st *convState) {
	s.mu.Lock()
	st.known = false
	s.mu.Unlock()
}

// readTail reads the conversation's state from its subject's last message.
func (s *Store) readTail(ctx context.Context, id string) (view, error) {
	sh := s.shardOf(id)
	m, err := s.getMsg(ctx, sh.stream, msgGetRequest{LastBySubject: sh.subjectOf(id)})
	if errors.Is(err, errNoMessage) {
		return view{}, nil
	}
	if err != nil {
		return view{}, fmt.Errorf("read the last event of %q: %w", id, err)
	}
	rec, ok, err := recordOf(m.hdr, m.data)
	if err != nil {
		return view{}, fmt.Errorf("read the last event of %q (stream seq %d): %w", id, m.seq, err)
	}
	if !ok {
		return view{}, fmt.Errorf("read the last event of %q (stream seq %d): it carries no conversation record", id, m.seq)
	}
	return view{exists: true, tail: m.seq, rec: rec}, nil
}

// versionAtLeast reports whether a server version "2.15.2" is at least
// major.minor.
func versionAtLeast(v string, major, minor int) bool {
	var ma, mi int
	if _, err := fmt.Sscanf(strings.TrimPrefix(v, "v"), "%d.%d", &ma, &mi); err != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
