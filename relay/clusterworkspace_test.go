package relay_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/relay/history/jetstream"
	"github.com/pilotdesk/pilotdesk/session/script"
)

// TestClusterFolderNotHere: a relay that cannot see a conversation's
// folder (relays must share its volume, docs/operations.md; here the
// folder went away after A started the conversation there) never takes
// the conversation over when its owner dies: a send through B is refused
// with a sentence naming the folder, and B neither runs a turn nor claims
// the conversation. Once the folder is back, the next send through B
// takes it over and runs there.
func TestClusterFolderNotHere(t *testing.T) {
	parallel(t)
	eachBackend(t, func(t *testing.T, b testBackend) {
		root := t.TempDir()
		dir := filepath.Join(root, "project")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		s := clusterScript(t)
		withRoot := func(c *relay.Config) { c.Workspaces = workspaces(t, root, t.TempDir()) }
		opts := jetstream.ClusterOptions{Lease: testLease}
		a := b.relayMod(t, 0, script.New(s), opts, withRoot)
		bb := b.relayMod(t, 1, script.New(s), opts, withRoot)
		ca, cb := a.srv.Dial(t), bb.srv.Dial(t)
		id := "folder-" + b.name

		ca.Send("copilot:send", map[string]any{"conversationId": id, "prompt": "first", "workspace": map[string]any{"path": dir}})
		wantIdle(t, ca, "A's client", "completed")

		if err := os.Rename(dir, dir+".away"); err != nil {
			t.Fatal(err)
		}
		a.cut()
		ca.Close()
		send(cb, id, "second")
		e := cb.WaitFor("error", nil)
		if e.Field("code") != protocol.CodeLimit || !strings.Contains(fmt.Sprint(e.Field("message")), "cannot see the conversation's folder "+dir) {
			t.Fatalf("a send through B with the folder away: %s", e.Raw)
		}
		if owner, _, err := bb.cluster.Owner(context.Background(), id); err != nil || owner == bb.cluster.ID() {
			t.Fatalf("B claimed the conversation whose folder it cannot see (owner %q, %v)", owner, err)
		}

		if err := os.Rename(dir+".away", dir); err != nil {
			t.Fatal(err)
		}
		send(cb, id, "third")
		idle, turn := cb.WaitForCollect("copilot:idle", nil)
		if idle.Field("status") != "completed" || !strings.Contains(fmt.Sprint(frameTexts(turn)), "Echo: third") {
			t.Fatalf("the send through B with the folder back: %s then %s", framesString(turn), idle.Raw)
		}
		for _, f := range turn {
			if f.Type == "copilot:delta" && strings.Contains(fmt.Sprint(f.Field("content")), "second") {
				t.Fatal("the refused send ran after all")
			}
		}
	})
}
