package cli

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pilotdesk/pilotdesk/internal/testbin"
)

// runCLI runs the command line in-process and returns its exit status and
// what it printed.
func runCLI(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	return runCLIEnv(t, ctx, map[string]string{natsPasswordEnv: "env-s3cret"}, args...) // read only with --nats
}

// runCLIEnv is runCLI with env as the environment.
func runCLIEnv(t *testing.T, ctx context.Context, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Run(ctx, args, Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Getenv: func(k string) string { return env[k] }})
	return code, stdout.String(), stderr.String()
}

func TestServeRefusesBadInvocations(t *testing.T) {
	dir := t.TempDir()
	badScript := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(badScript, []byte(`{"turns":[{"steps":[{"dleta":"x"}]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	aFile := filepath.Join(dir, "a-file")
	if err := os.WriteFile(aFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		want string // in stderr
	}{
		{"unknown flag", []string{"serve", "--bogus"}, 2, "flag provided but not defined: -bogus"},
		{"bad duration", []string{"serve", "--input-timeout", "soon"}, 2, "input-timeout"},
		{"bad agent", []string{"serve", "--agent", "gpt"}, 2, `--agent must be auto, copilot, acp or script, not "gpt"`},
		{"acp without command", []string{"serve", "--agent", "acp"}, 2, "--agent acp needs --acp-command CMD"},
		{"acp command unsplittable", []string{"serve", "--agent", "acp", "--acp-command", "agent 'open"}, 2, "--acp-command: the command line has an unterminated ' quote"},
		{"acp command with a pipe", []string{"serve", "--agent", "acp", "--acp-command", "agent | tee"}, 2, "no shell runs it"},
		{"acp agent missing", []string{"serve", "--listen", "127.0.0.1:0", "--data-dir", memoryDataDir, "--agent", "acp", "--acp-command", "no-such-acp-agent-here acp"}, 1, "the ACP agent cannot start"},
		{"script with acp", []string{"serve", "--agent", "acp", "--acp-command", "opencode acp", "--script", "x.json"}, 2, "cannot be used with --agent acp"},
		{"bad provider type", []string{"serve", "--provider-type", "llama"}, 2, "--provider-type"},
		{"bad provider url", []string{"serve", "--provider-url", "localhost:8080"}, 2, "--provider-url"},
		{"tls cert without key", []string{"serve", "--tls-cert", "c.pem"}, 2, "--tls-cert and --tls-key go together"},
		{"bad listen", []string{"serve", "--listen", "7420"}, 2, "--listen must be HOST:PORT"},
		{"positional argument", []string{"serve", "now"}, 2, `unexpected argument "now"`},
		{"non-loopback without token", []string{"serve", "--listen", "0.0.0.0:0", "--data-dir", memoryDataDir, "--agent", "script"}, 2, "refusing to listen on 0.0.0.0:0 without a token"},
		{"non-loopback with a short token", []string{"serve", "--listen", "0.0.0.0:0", "--token", "owner-token-15c", "--data-dir", memoryDataDir, "--agent", "script"}, 2,
			"refusing to listen on 0.0.0.0:0 with a token of 15 characters: anyone who can reach it could guess one under 16"},
		{"bad script", []string{"serve", "--listen", "127.0.0.1:0", "--data-dir", memoryDataDir, "--agent", "script", "--script", badScript}, 1, "bad.json"},
		{"missing script", []string{"serve", "--listen", "127.0.0.1:0", "--data-dir", memoryDataDir, "--agent", "script", "--script", filepath.Join(dir, "nope.json")}, 1, "nope.json"},
		{"data dir that cannot be made", []string{"serve", "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(aFile, "data"), "--agent", "script"}, 1, "the data dir cannot be made (choose another with --data-dir): creating " + filepath.Join(aFile, "data")},
		{"NATS password and creds", []string{"serve", "--nats", "nats://relay@127.0.0.1:4222", "--nats-creds", "x.creds"}, 2, "PILOTDESK_NATS_PASSWORD and --nats-creds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, context.Background(), tt.args...)
			if code != tt.code {
				t.Errorf("exit status %d, want %d; stderr:\n%s", code, tt.code, stderr)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr does not say %q:\n%s", tt.want, stderr)
			}
		})
	}
}

func TestServeHelpListsFlags(t *testing.T) {
	code, stdout, _ := runCLI(t, context.Background(), "serve", "-h")
	if code != 0 {
		t.Fatalf("serve -h exited %d", code)
	}
	for _, flag := range []string{"-listen", "-token", "-insecure-no-auth", "-agent", "-script", "-copilot-path", "-model",
		"-provider-url", "-provider-type", "-provider-key", "-workdir", "-heartbeat-timeout", "-input-timeout",
		"-data-dir", "-history-max-age", "-tls-cert", "-tls-key"} {
		if !strings.Contains(stdout, flag+" ") && !strings.Contains(stdout, flag+"\n") {
			t.Errorf("serve -h does not list %s", flag)
		}
	}
}

func TestVersion(t *testing.T) {
	code, stdout, _ := runCLI(t, context.Background(), "--version")
	if code != 0 || strings.TrimSpace(stdout) != "pilotdesk "+Version {
		t.Errorf("--version = %d %q", code, stdout)
	}
}

// pilotdeskBinary is the real binary, built once per test run.
func pilotdeskBinary(t *testing.T) string { return testbin.Build(t) }

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

// startServe starts `pilotdesk serve` and waits for its "relay listening"
// line; it returns the process, the relay's address and a reader of the rest
// of its log.
func startServe(t *testing.T, args ...string) (*serveProc, string, *testbin.LogTail) {
	t.Helper()
	cmd := exec.Command(pilotdeskBinary(t), append([]string{"serve"}, args...)...)
	cmd.Env = append(os.Environ(), "PILOTDESK_TOKEN=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tail := testbin.NewLogTail(stderr)
	p := &serveProc{Cmd: cmd, log: tail}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = p.Wait() })
	line, ok := tail.WaitFor(regexp.MustCompile(`relay listening`), 60*time.Second)
	if !ok {
		t.Fatalf("serve did not start; log:\n%s", tail.String())
	}
	m := regexp.MustCompile(`url=wss?://([^/]+)/ws`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("no url in %q", line)
	}
	return p, m[1], tail
}

// serveProc is a started `pilotdesk serve` whose log a LogTail reads from
// its stderr pipe. Its Wait returns once the log is read to its end:
// exec.Cmd.Wait closes the pipe as soon as the process has exited, and the
// lines the reader had not reached yet (the clean-stop line, the last one)
// were lost, or read after the test had looked (TestServeProcess's "no
// clean-stop line in the log" on a busy machine).
type serveProc struct {
	*exec.Cmd
	log *testbin.LogTail
}

// Wait waits for the log's end, then for the process.
func (p *serveProc) Wait() error {
	p.log.WaitDone()
	return p.Cmd.Wait()
}

// servedDataDir is a fresh data dir for `pilotdesk serve` of the chat script
// (writeChatScript) to hold and `pilotdesk chat` to find its relay in.
type servedDataDir struct {
	t      *testing.T
	dir    string
	script string // one script for every serve of dir, as a user restarting serve would
}

// newServedDataDir makes the data dir and the script; it skips under -short,
// as the binary has to be built.
func newServedDataDir(t *testing.T) servedDataDir {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	return servedDataDir{t: t, dir: t.TempDir(), script: writeChatScript(t)}
}

// serve starts `pilotdesk serve` of the chat script on the data dir, on a
// free local port, with owner token token; it returns the process and the
// relay's address.
func (d servedDataDir) serve(token string) (*serveProc, string) {
	d.t.Helper()
	cmd, addr, _ := startServe(d.t, "--listen", "127.0.0.1:0", "--agent", "script", "--script", d.script, "--data-dir", d.dir, "--token", token)
	return cmd, addr
}

// chat is `pilotdesk chat --data-dir` on the data dir, with no owner token in
// its environment (it has to find the relay's in the data dir) and no
// colour, for the caller to wire and start.
func (d servedDataDir) chat() *exec.Cmd {
	d.t.Helper()
	chat := exec.Command(pilotdeskBinary(d.t), "chat", "--data-dir", d.dir)
	chat.Env = append(os.Environ(), "PILOTDESK_TOKEN=", "NO_COLOR=1")
	return chat
}

func TestServeProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	// A data dir that does not exist yet, as on a fresh host: made, the
	// user's alone.
	dataDir := filepath.Join(t.TempDir(), "fresh", "pilotdesk")
	cmd, addr, tail := startServe(t, "--listen", "127.0.0.1:0", "--agent", "script", "--data-dir", dataDir, "--token", "s3cret-token-value")
	if fi, err := os.Stat(dataDir); err != nil || !fi.IsDir() || (runtime.GOOS != "windows" && fi.Mode().Perm() != 0o700) {
		t.Errorf("the data dir: %v, %v; want a directory of mode 0700", fi, err)
	}

	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz = %d", resp.StatusCode)
	}

	t.Run("port in use", func(t *testing.T) {
		out, err := exec.Command(pilotdeskBinary(t), "serve", "--listen", addr, "--agent", "script", "--data-dir", memoryDataDir).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Fatalf("second serve on %s: err %v, want exit 1; output:\n%s", addr, err, out)
		}
		if !strings.Contains(string(out), "the port is in use") {
			t.Errorf("no clear message:\n%s", out)
		}
	})

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve exited with %v after SIGTERM; log:\n%s", err, tail.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not stop within 30 s of SIGTERM; log:\n%s", tail.String())
	}
	log := tail.String()
	if !strings.Contains(log, "stopped") {
		t.Errorf("no clean-stop line in the log:\n%s", log)
	}
	if strings.Contains(log, "s3cret-token-value") {
		t.Errorf("the token appears in the log:\n%s", log)
	}
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Errorf("%s still accepts connections after shutdown", addr)
	}
}

// TestHelpNamesTheCommand: -h says how to call the command, once.
func TestHelpNamesTheCommand(t *testing.T) {
	for args, want := range map[string]string{"-h": "Usage: pilotdesk [flags]\n", "serve -h": "Usage: pilotdesk serve [flags]\n", "chat -h": "Usage: pilotdesk chat [flags]\n"} {
		code, stdout, _ := runCLI(t, context.Background(), strings.Fields(args)...)
		if code != 0 || !strings.HasPrefix(stdout, want) {
			t.Errorf("pilotdesk %s = %d, %q…; want it to start %q", args, code, stdout[:min(len(stdout), 60)], want)
		}
	}
}
