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

func (g gitCmd) cmd(ctx context.Context) (*exec.Cmd, *capped.Buffer) {
	cmd := exec.CommandContext(ctx, g.s.git, g.args...)
	cmd.Dir = g.dir
	cmd.Env = append(append([]string(nil), g.s.env...), g.env...)
	cmd.Stdin = g.in
	stderr := capped.NewBuffer(4096)
	cmd.Stderr = stderr
	return cmd, stderr
}

// output runs the command and returns its stdout.
func (g gitCmd) output(ctx context.Context) ([]byte, error) {
	cmd, stderr := g.cmd(ctx)
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return out.Bytes(), g.fail(err, stderr)
	}
	return out.Bytes(), nil
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
