package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// pprofEnv names the environment variable that serves Go's profiles
// (net/http/pprof) of the window's process, or of serve's, on an address
// of the loopback, for measuring the window (docs/performance.md) or a
// relay under load (docs/scale-out.md):
//
//	PILOTDESK_PPROF=127.0.0.1:6060 pilotdesk
//	go tool pprof http://127.0.0.1:6060/debug/pprof/heap
const pprofEnv = "PILOTDESK_PPROF"

// servePprof serves the profiles on the address pprofEnv gives in env,
// if it gives one, until ctx ends; it refuses an address off the loopback
// (profiles show what the process holds). 127.0.0.1:0 picks a port, which
// the log names. It returns once the listener is up, and a func that waits
// for the server to stop (that does nothing when there is none).
func servePprof(ctx context.Context, env Env, logger *slog.Logger) (wait func(), err error) {
	addr := env.Getenv(pprofEnv)
	if addr == "" {
		return func() {}, nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%s=%q: %w", pprofEnv, addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("%s=%q: profiles are served on the loopback only (127.0.0.1:PORT)", pprofEnv, addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", pprofEnv, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Warn("the profiles' server stopped", "err", err)
		}
	}()
	stop := context.AfterFunc(ctx, func() { _ = srv.Close() })
	logger.Info("serving Go profiles", "url", "http://"+ln.Addr().String()+"/debug/pprof/")
	return func() {
		stop()
		_ = srv.Close()
		<-done
	}, nil
}
