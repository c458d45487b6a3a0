package cli

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/internal/testsupport"
	"github.com/pilotdesk/pilotdesk/relay/history/jetstream/natstest"
)

func TestNATSFlags(t *testing.T) {
	ok := natsSettings{Replicas: 3, Streams: 1, withStreams: true, Lease: 15 * time.Second}
	for _, c := range []struct {
		name    string
		n       natsSettings
		dataDir string
		want    string // "" for valid
	}{
		{"none", natsSettings{Replicas: 3, Lease: time.Second}, "/d", ""},
		{"creds without --nats", natsSettings{Creds: "x.creds", Replicas: 3, Lease: time.Second}, "/d", "go with --nats"},
		{"cluster", func() natsSettings { n := ok; n.URLs = "nats://a:4222,nats://b:4222"; return n }(), "/d", ""},
		{"empty URL", func() natsSettings { n := ok; n.URLs = "nats://a:4222,,nats://b:4222"; return n }(), "/d", "empty URL"},
		{"replicas", func() natsSettings { n := ok; n.URLs = "nats://a:4222"; n.Replicas = 0; return n }(), "/d", "--nats-replicas"},
		{"no streams", func() natsSettings { n := ok; n.URLs = "nats://a:4222"; n.Streams = 0; return n }(), "/d", "--nats-streams must be 1 to 64, not 0"},
		{"too many streams", func() natsSettings { n := ok; n.URLs = "nats://a:4222"; n.Streams = 65; return n }(), "/d", "--nats-streams must be 1 to 64, not 65"},
		{"streams", func() natsSettings { n := ok; n.URLs = "nats://a:4222"; n.Streams = 3; return n }(), "/d", ""},
		{"the history's streams (token)", func() natsSettings {
			n := ok
			n.URLs, n.Streams, n.withStreams = "nats://a:4222", 0, false
			return n
		}(), "/d", ""},
		{"lease", func() natsSettings { n := ok; n.URLs = "nats://a:4222"; n.Lease = 0; return n }(), "/d", "--nats-lease"},
		{"embedded", func() natsSettings { n := ok; n.URLs = natsEmbedded; return n }(), "/d", ""},
		{"embedded in memory", func() natsSettings { n := ok; n.URLs = natsEmbedded; return n }(), memoryDataDir, "give it a directory"},
		{"embedded with creds", func() natsSettings { n := ok; n.URLs = natsEmbedded; n.Creds = "x"; return n }(), "/d", "not --nats embedded"},
		{"password", func() natsSettings {
			n := ok
			n.URLs, n.Password = "nats://relay@a:4222, nats://relay@b:4222", "pw"
			return n
		}(), "/d", ""},
		{"password without a user", func() natsSettings { n := ok; n.URLs, n.Password = "nats://relay@a:4222,nats://b:4222", "pw"; return n }(), "/d", "nats://b:4222 names none"},
		{"password twice", func() natsSettings { n := ok; n.URLs, n.Password = "nats://relay:old@a:4222", "pw"; return n }(), "/d", "carries a password"},
		{"password of two users", func() natsSettings {
			n := ok
			n.URLs, n.Password = "nats://relay@a:4222,nats://admin@b:4222", "pw"
			return n
		}(), "/d", "two users"},
		{"password and creds", func() natsSettings {
			n := ok
			n.URLs, n.Password, n.Creds = "nats://relay@a:4222", "pw", "x.creds"
			return n
		}(), "/d", "give one"},
		{"password without --nats", func() natsSettings { n := ok; n.Password = "pw"; return n }(), "/d", ""},
		{"password with embedded", func() natsSettings { n := ok; n.URLs, n.Password = natsEmbedded, "pw"; return n }(), "/d", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.n.validate(c.dataDir)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("validate: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, errUsage)):
				t.Fatalf("validate = %v; want a usage error with %q", err, c.want)
			}
		})
	}
}

func TestRedactURLs(t *testing.T) {
	got := redactURLs("nats://relay:s3cret@a:4222,nats://b:4222")
	if strings.Contains(got, "s3cret") || !strings.Contains(got, "relay:xxxxx@a:4222") || !strings.Contains(got, "nats://b:4222") {
		t.Fatalf("redactURLs = %q", got)
	}
}

// A relay's own shutdown closes its NATS connection: nothing alarming is
// logged; a node that goes away is still a warning. The password comes
// from PILOTDESK_NATS_PASSWORD for the user the URL names, and is never
// logged; one on the command line is warned of.
func TestNATSDisconnectLog(t *testing.T) {
	c := natstest.Start(t, 1)
	logs := &testsupport.Buffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	addr := fmt.Sprintf("nats://%s@127.0.0.1:%d", url.User(c.User), c.Nodes[0].ClientPort)
	withPassword := fmt.Sprintf("nats://%s@127.0.0.1:%d", url.UserPassword(c.User, c.Password), c.Nodes[0].ClientPort)
	waitLog := func(want string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(logs.String(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q in the log:\n%s", want, logs.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	nc, err := connectNATS(natsSettings{URLs: addr, Password: c.Password}, "pilotdesk test", logger)
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
	waitLog("NATS connection closed")
	if strings.Contains(logs.String(), "level=WARN") || strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("a clean close logged a warning:\n%s", logs.String())
	}

	nc, err = connectNATS(natsSettings{URLs: withPassword}, "pilotdesk test", logger)
	if err != nil {
		t.Fatal(err)
	}
	waitLog("the NATS password is on the command line")
	if strings.Contains(logs.String(), c.Password) {
		t.Errorf("the NATS password is in the log:\n%s", logs.String())
	}
	defer nc.Close()
	c.Kill(0)
	waitLog(`level=WARN msg="NATS disconnected; reconnecting"`)
}

// silentProxy forwards TCP connections to addr until silence is called;
// from then on it forwards nothing either way and closes nothing, as a
// network partition does: the connections stay open and hear nothing.
func silentProxy(t *testing.T, addr string) (hostport string, silence func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var silent atomic.Bool
	var mu sync.Mutex
	var conns []net.Conn
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", addr)
			if err != nil {
				in.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, in, out)
			mu.Unlock()
			for _, pair := range [][2]net.Conn{{in, out}, {out, in}} {
				wg.Go(func() { _, _ = io.Copy(gate{&silent, pair[1]}, pair[0]) })
			}
		}
	})
	return ln.Addr().String(), func() { silent.Store(true) }
}

// gate writes to w until silent is set, then drops what it is given.
type gate struct {
	silent *atomic.Bool
	w      io.Writer
}

func (g gate) Write(b []byte) (int, error) {
	if g.silent.Load() {
		return len(b), nil
	}
	return g.w.Write(b)
}

// A relay whose NATS node goes silent (cut off the network: the
// connection stays open and nothing comes) leaves it well within its
// lease, so that it can renew the lease through another node before the
// other relays take its conversations over. With nats.go's default pings
// (2 minutes) it noticed minutes later (make chaos, node-partition: turns
// closed "relay lost" although no relay was lost).
func TestNATSLeavesASilentNode(t *testing.T) {
	c := natstest.Start(t, 1)
	const lease = 5 * time.Second
	addr, silence := silentProxy(t, fmt.Sprintf("127.0.0.1:%d", c.Nodes[0].ClientPort))
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	nc, err := connectNATS(natsSettings{URLs: fmt.Sprintf("nats://%s@%s", url.User(c.User), addr), Password: c.Password, Lease: lease}, "pilotdesk test", logger)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	silence()
	start := time.Now()
	for nc.IsConnected() {
		if time.Since(start) > lease {
			t.Fatalf("the relay still holds its silent NATS node's connection %v after it went silent (its lease is %v)", time.Since(start).Round(time.Millisecond), lease)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("left the silent node after %v (lease %v)", time.Since(start).Round(time.Millisecond), lease)
	if got := natsPingInterval(15 * time.Second); got != 3*time.Second {
		t.Errorf("with the default lease the relay pings every %v, want 3s", got)
	}
}
