package reliability

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pilotdesk/pilotdesk/relay/relaytest"
)

// TestTokenlessServeRefusesOtherUsers: `serve` on loopback without --token
// makes a token and keeps it in the data dir's relay.json, readable by its
// own user only. Another Unix user (nobody, through setpriv) can neither
// read the file nor connect: `pilotdesk chat --connect` run as nobody is
// refused (401) and no turn starts. Before issue #33 such a relay took any
// local process for its owner, and a turn started by uid 65534 had its
// bash tool approved. The relay's own user reads the token and gets in.
func TestTokenlessServeRefusesOtherUsers(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a client as another user (setpriv --reuid=65534)")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv (util-linux) is not installed: it runs the client as another user")
	}
	dir := t.TempDir()
	p := startRelay(t, nil, "--listen", "127.0.0.1:0", "--agent", "script", "--data-dir", dir)
	running := filepath.Join(dir, "relay.json")
	if _, ok := p.log.WaitFor(regexp.MustCompile(`relay token made for this run.*jq -r \.token`), timeout); !ok {
		t.Fatalf("the relay does not say where its token is; log:\n%s", p.log.String())
	}
	fi, err := os.Stat(running)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("relay.json has mode %v, want 0600", fi.Mode().Perm())
	}
	b, err := os.ReadFile(running)
	if err != nil {
		t.Fatal(err)
	}
	var rj struct{ Token string }
	if err := json.Unmarshal(b, &rj); err != nil || len(rj.Token) < 32 {
		t.Fatalf("relay.json holds no token: %s (%v)", b, err)
	}
	checkNoSecrets(t, p.log.String(), rj.Token)

	// The binary where nobody may run it (the test's temp dirs are 0700).
	binDir, err := os.MkdirTemp("", "pilotdesk-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(binDir) })
	if err := os.Chmod(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(binDir, "pilotdesk")
	copyFile(t, pilotdesk(t), bin, 0o755)

	asNobody := func(args ...string) (string, error) {
		cmd := exec.Command(setpriv, append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", "--"}, args...)...)
		cmd.Env = []string{"HOME=" + binDir, "PATH=/usr/bin:/bin", "PILOTDESK_TOKEN=", "NO_COLOR=1"}
		cmd.Dir = binDir
		cmd.Stdin = strings.NewReader("run: id\n/quit\n")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := asNobody("cat", running); err == nil {
		t.Errorf("nobody read relay.json: %s", out)
	}
	out, err := asNobody(bin, "chat", "--connect", p.URL)
	if err == nil {
		t.Errorf("pilotdesk chat as nobody was not refused:\n%s", out)
	}
	if !strings.Contains(out, "401") && !strings.Contains(strings.ToLower(out), "token") {
		t.Errorf("pilotdesk chat as nobody: no word of the refused token:\n%s", out)
	}

	// The relay's own user gets in with the file's token, and nobody's
	// attempt started nothing.
	cl := relaytest.Dial(t, p.URL, rj.Token)
	cl.Send("copilot:list", map[string]any{})
	list := dataOf(t, cl.Expect("copilot:conversations"))
	if convs, _ := list["conversations"].([]any); len(convs) != 0 {
		t.Errorf("a conversation exists after nobody's attempt: %v", convs)
	}
	if status, _, body := upgrade(t, p.URL, http.Header{"Authorization": {"Bearer " + rj.Token + "x"}}); status != http.StatusUnauthorized {
		t.Errorf("a garbled token: %d %q", status, body)
	}
}

// copyFile copies src to dst with mode perm.
func copyFile(t *testing.T, src, dst string, perm os.FileMode) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
