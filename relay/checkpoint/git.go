package checkpoint

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/pilotdesk/pilotdesk/internal/capped"
)

// gitCmd is one git command run for a location: its own environment (the
// caller's, less every GIT_ variable, plus the location's and the call's),
// its stderr kept for the error.
type gitCmd struct {
	s    *Store
	dir  string   // the working directory
	args []string // after "git"
	env  []string // added to the base environment
	in   io.Reader
}

// baseEnv is the environment git runs in: the process's, without any GIT_
// variable that could point it at another repository, index or work tree,
// with a fixed identity for the snapshots' commits and no prompts.
func baseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GIT_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=pilotdesk", "GIT_AUTHOR_EMAIL=pilotdesk@localhost",
		"GIT_COMMITTER_NAME=pilotdesk", "GIT_COMMITTER_EMAIL=pilotdesk@localhost",
		"LC_ALL=C",
	)
}

// stderrLimit is how much of a command's stderr its error keeps.
const stderrLimit = 4096

func (g gitCmd) cmd(ctx context.Context) (*exec.Cmd, *capped.Buffer) {
	cmd := exec.CommandContext(ctx, g.s.git, g.args...)
	cmd.Dir = g.dir
	cmd.Env = append(append([]string(nil), g.s.env...), g.env...)
	cmd.Stdin = g.in
	stderr := capped.NewBuffer(stderrLimit)
	cmd.Stderr = stderr
	return cmd, stderr
}

// output runs the command and returns its stdout.
//
// The command's stdin, stdout and stderr are files in memory (memfd), not
// pipes: os/exec copies a pipe with a goroutine of its own, and waits for
// them after the process, so each command woke several goroutines, each
// often a parked thread when the relay has little else to do. With files
// the child reads and writes them itself, and the relay reads what it
// wrote once it has exited. A relay runs five git commands a turn
// (checkpoints.go); in the bench-nats load their goroutines started a
// sixth of the thread wake-ups of a relay with a third of the cluster's
// conversations (issue #32, docs/scale-out.md). Where files in memory
// cannot be made (not Linux), pipes as before.
func (g gitCmd) output(ctx context.Context) ([]byte, error) {
	files, err := memFiles(g.in != nil)
	if err != nil {
		return g.outputPiped(ctx)
	}
	defer files.close()
	// The command as cmd makes it, its stdio the files; its stderr is read
	// into the capped buffer once it has exited.
	cmd, stderr := g.cmd(ctx)
	cmd.Stdout, cmd.Stderr = files.out, files.err
	if g.in != nil {
		if _, err := io.Copy(files.in, g.in); err != nil {
			return nil, fmt.Errorf("git: its input: %w", err)
		}
		if _, err := files.in.Seek(0, io.SeekStart); err != nil {
			return nil, fmt.Errorf("git: its input: %w", err)
		}
		cmd.Stdin = files.in
	}
	runErr := cmd.Run()
	out, err := readFrom(files.out, -1)
	if runErr == nil && err != nil {
		runErr = fmt.Errorf("read its output: %w", err)
	}
	if runErr != nil {
		msg, _ := readFrom(files.err, stderrLimit)
		_, _ = stderr.Write(msg)
		return out, g.fail(runErr, stderr)
	}
	return out, nil
}

// outputPiped is output with pipes, where files in memory cannot be made.
func (g gitCmd) outputPiped(ctx context.Context) ([]byte, error) {
	cmd, stderr := g.cmd(ctx)
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return out.Bytes(), g.fail(err, stderr)
	}
	return out.Bytes(), nil
}

// cmdFiles are a command's stdin (nil: none), stdout and stderr in memory.
type cmdFiles struct{ in, out, err *os.File }

func memFiles(withIn bool) (f cmdFiles, err error) {
	if f.out, err = memFile("git-stdout"); err == nil {
		if f.err, err = memFile("git-stderr"); err == nil && withIn {
			f.in, err = memFile("git-stdin")
		}
	}
	if err != nil {
		f.close()
	}
	return f, err
}

func (f cmdFiles) close() {
	for _, file := range []*os.File{f.in, f.out, f.err} {
		if file != nil {
			file.Close()
		}
	}
}

// readFrom reads f from its start: all of it, or at most limit bytes.
func readFrom(f *os.File, limit int64) ([]byte, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	var r io.Reader = f
	if limit >= 0 {
		r = io.LimitReader(f, limit)
	}
	return io.ReadAll(r)
}

// fail wraps a failed git command's error with its stderr, which says why.
func (g gitCmd) fail(err error, stderr *capped.Buffer) error {
	name := "git"
	for i := 0; i < len(g.args); i++ {
		if a := g.args[i]; a == "-c" {
			i++
		} else if !strings.HasPrefix(a, "-") {
			name = "git " + a
			break
		}
	}
	msg := strings.TrimSpace(stderr.String())
	if msg == "" {
		return fmt.Errorf("%s: %w", name, err)
	}
	return fmt.Errorf("%s: %w: %s", name, err, msg)
}
