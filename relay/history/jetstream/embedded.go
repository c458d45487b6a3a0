package jetstream

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/pilotdesk/pilotdesk/internal/filelock"
)

// EmbeddedDir is the directory, inside the data dir, that holds an
// embedded node's JetStream files.
const EmbeddedDir = "nats"

// Embedded is a single JetStream node running in this process, with no
// network port: `serve --nats embedded`, and tests. It runs the same client
// code as a cluster, on one machine; it is not highly available (one node
// is one failure domain). It fsyncs before every ack (sync_interval:
// always), so an acknowledged event survives a power cut, like the SQLite
// store's synchronous=FULL.
type Embedded struct {
	srv  *server.Server
	lock *os.File
}

// ErrInUse: another process (a relay) runs the node of the data dir.
var ErrInUse = errors.New("in use by another pilotdesk")

// StartEmbedded starts a node whose JetStream files are in dataDir/nats.
// A second node on the same data dir is refused while the first runs
// (ErrInUse).
func StartEmbedded(dataDir string, logger *slog.Logger) (_ *Embedded, err error) {
	if logger == nil {
		logger = slog.Default()
	}
	dir := filepath.Join(dataDir, EmbeddedDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("embedded NATS: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, "pilotdesk.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("embedded NATS: %w", err)
	}
	defer func() {
		if err != nil {
			lock.Close()
		}
	}()
	if held, err := filelock.TryLock(lock); err != nil {
		return nil, fmt.Errorf("embedded NATS: lock %s: %w", dir, err)
	} else if held {
		return nil, fmt.Errorf("embedded NATS: %s is %w", dir, ErrInUse)
	}
	opts := &server.Options{
		ServerName: "pilotdesk-embedded",
		DontListen: true, // reached in process only (nats.InProcessServer)
		JetStream:  true,
		StoreDir:   dir,
		SyncAlways: true,
		NoSigs:     true,
		// Every conversation streaming at once has a batch open.
		JetStreamLimits: server.JSLimitOpts{MaxBatchInflightPerStream: 1000, MaxBatchInflightTotal: 5000},
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded NATS: %w", err)
	}
	srv.SetLoggerV2(slogLogger{logger.With("component", "nats")}, false, false, false)
	srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, errors.New("embedded NATS: the node did not start within 30 s")
	}
	return &Embedded{srv: srv, lock: lock}, nil
}

// NodeHeld reports whether a running node (a relay with --nats
// embedded) holds dataDir's node: a relay that would keep its history in
// SQLite there checks it first, since the two stores take different locks
// and a second relay on the data dir would otherwise start beside the
// first, and take its relay.json. The lock taken to find out is dropped
// at once; a data dir with no node is not held.
func NodeHeld(dataDir string) (bool, error) {
	dir := filepath.Join(dataDir, EmbeddedDir)
	held, err := filelock.Probe(filepath.Join(dir, "pilotdesk.lock"))
	if err != nil {
		return false, fmt.Errorf("embedded NATS: lock %s: %w", dir, err)
	}
	return held, nil
}

// Connect returns a new in-process connection to the node.
func (e *Embedded) Connect(name string) (*nats.Conn, error) {
	nc, err := nats.Connect("", nats.InProcessServer(e.srv), nats.Name(name))
	if err != nil {
		return nil, fmt.Errorf("embedded NATS: connect: %w", err)
	}
	return nc, nil
}

// Shutdown stops the node and releases the data dir.
func (e *Embedded) Shutdown() {
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
	e.lock.Close()
}

// slogLogger passes the node's log to slog: warnings and errors as such,
// the rest as Debug (its notices are a start-up banner of twenty lines).
type slogLogger struct{ l *slog.Logger }

func (s slogLogger) Noticef(format string, v ...any) { s.l.Debug(fmt.Sprintf(format, v...)) }
func (s slogLogger) Warnf(format string, v ...any)   { s.l.Warn(fmt.Sprintf(format, v...)) }
func (s slogLogger) Fatalf(format string, v ...any)  { s.l.Error(fmt.Sprintf(format, v...)) }
func (s slogLogger) Errorf(format string, v ...any)  { s.l.Error(fmt.Sprintf(format, v...)) }
func (s slogLogger) Debugf(format string, v ...any)  { s.l.Debug(fmt.Sprintf(format, v...)) }
func (s slogLogger) Tracef(format string, v ...any)  { s.l.Debug(fmt.Sprintf(format, v...)) }
