package cli

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestNATSFlags(t *testing.T) {
	ok := natsSettings{Replicas: 3, Lease: 15 * time.Second}
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
		{"lease", func() natsSettings { n := ok; n.URLs = "nats://a:4222"; n.Lease = 0; return n }(), "/d", "--nats-lease"},
		{"embedded", func() natsSettings { n := ok; n.URLs = natsEmbedded; return n }(), "/d", ""},
		{"embedded in memory", func() natsSettings { n := ok; n.URLs = natsEmbedded; return n }(), memoryDataDir, "give it a directory"},
		{"embedded with creds", func() natsSettings { n := ok; n.URLs = natsEmbedded; n.Creds = "x"; return n }(), "/d", "not --nats embedded"},
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
