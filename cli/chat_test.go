package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestChatPiped: with stdin and stdout pipes (scripted use) the chat reads
// lines, answers questions with the lines typed ahead, prints plain lines
// and ends with the input.
func TestChatPiped(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := pilotdeskBinary(t)
	scriptPath := writeChatScript(t)
	cmd := exec.Command(bin, "chat", "--agent", "script", "--script", scriptPath, "--data-dir", memoryDataDir)
	cmd.Env = append(os.Environ(), "PILOTDESK_TOKEN=", "NO_COLOR=", "LANG=en_US.UTF-8")
	cmd.Stdin = strings.NewReader("approve\nx\na\nchoose\n9\n3\nname\n\nAurora\nhello\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("chat: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
		}
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("chat did not end with its input\nstdout:\n%s", stdout.String())
	}
	out := untimed(stdout.String())
	if strings.Contains(out, "\x1b") {
		t.Errorf("escape sequences in piped output:\n%q", out)
	}
	for _, want := range []string{
		"act> approve\nI will migrate the database. \nRun the migration?\n  a/1) Run it\n  r/2) Skip\n› x\nPlease answer a/1 or r/2.\n› a\nMigrated (approve).\n",
		"act> choose\nThree ways to go. \nWhich environment?\n  1) staging\n  2) prod\n  3) qa\n  r) Reject\n› 9\n9 is not on the list. Please choose 1-3 or r.\n› 3\nDeploying to qa (index 2).\n",
		"act> name\nNaming time. \nWhat should the release be called?\n  Type your answer, or r or /reject to reject.\n? \nAn answer is required: type it, or r or /reject to reject.\n? Aurora\nRelease Aurora.\n",
		"act> hello\nEcho: hello\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks:\n%s\nit is:\n%s", want, out)
		}
	}
	if stderr.Len() > 0 {
		t.Errorf("stderr:\n%s", stderr.String())
	}
}

func TestChatRefusesBadInvocations(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"bad conversation id", []string{"chat", "--conversation", "nope"}, 2, `--conversation must be a conversation ID`},
		{"bad connect url", []string{"chat", "--connect", "http//x"}, 2, "--connect must be a ws:// or wss:// URL"},
		{"positional argument", []string{"chat", "hello"}, 2, `unexpected argument "hello"`},
		{"unreachable relay", []string{"chat", "--connect", "ws://127.0.0.1:1/ws"}, 1, "connect to ws://127.0.0.1:1/ws"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, context.Background(), tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, tt.code, tt.want)
			}
		})
	}
	code, stdout, _ := runCLI(t, context.Background(), "chat", "-h")
	if code != 0 || !strings.Contains(stdout, "-conversation") || !strings.Contains(stdout, "-connect") || !strings.Contains(stdout, "-log-file") {
		t.Errorf("chat -h = %d:\n%s", code, stdout)
	}
}

// TestChatInProcess runs the command with buffers for stdin and stdout
// (plain lines), on the embedded relay: the wiring without a terminal.
func TestChatInProcess(t *testing.T) {
	scriptPath := writeChatScript(t)
	var stdout, stderr bytes.Buffer
	env := Env{
		Stdin:  strings.NewReader("hello\n/quit\n"),
		Stdout: &stdout,
		Stderr: &stderr,
		Getenv: func(string) string { return "" },
	}
	code := Run(context.Background(), []string{"chat", "--agent", "script", "--script", scriptPath, "--data-dir", memoryDataDir}, env)
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "act> hello\nEcho: hello\n") {
		t.Errorf("stdout:\n%s", stdout.String())
	}
}

// TestChatLogs: the embedded relay's warnings show in the chat as "log:"
// lines; with --log-file they go to the file instead, info lines too.
func TestChatLogs(t *testing.T) {
	scriptPath := writeChatScript(t)
	run := func(extra ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		env := Env{Stdin: strings.NewReader("broken\n"), Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" }}
		args := append([]string{"chat", "--agent", "script", "--script", scriptPath, "--data-dir", memoryDataDir}, extra...)
		if code := Run(context.Background(), args, env); code != 0 {
			t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
		}
		if !strings.Contains(stdout.String(), "Went on (invalid).") {
			t.Errorf("stdout:\n%s", stdout.String())
		}
		return stdout.String()
	}
	out := run()
	if !strings.Contains(out, "log: level=WARN") || !strings.Contains(out, "a choice request needs choices") {
		t.Errorf("the relay's warning is not in the chat:\n%s", out)
	}
	logPath := filepath.Join(t.TempDir(), "chat.log")
	out = run("--log-file", logPath)
	if strings.Contains(out, "log:") {
		t.Errorf("log lines in the chat with --log-file:\n%s", out)
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "a choice request needs choices") {
		t.Errorf("the log file lacks the warning:\n%s", b)
	}
}
