package script

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// effect carries out a tool step's effect on the folder (docs/script-agent.md,
// Steps that change files) and returns the tool's result: the step's
// result, or a command's combined output.
func (p *player) effect(ctx context.Context, st ToolStep) (string, error) {
	switch {
	case st.Write != nil:
		full, err := p.inside(st.Write.Path)
		if err != nil {
			return "", err
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return "", fmt.Errorf("write %s: %w", st.Write.Path, err)
		}
		if err := os.WriteFile(full, []byte(st.Write.Content), 0o644); err != nil {
			return "", fmt.Errorf("write %s: %w", st.Write.Path, err)
		}
	case st.Remove != "":
		full, err := p.inside(st.Remove)
		if err != nil {
			return "", err
		}
		if err := os.Remove(full); err != nil {
			return "", fmt.Errorf("remove %s: %w", st.Remove, err)
		}
	case st.Run != "":
		if p.dir == "" {
			return "", errors.New("run: the session has no folder")
		}
		cmd := exec.CommandContext(ctx, "sh", "-c", st.Run)
		cmd.Dir = p.dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			// The reason first: a tool row shows the start of the
			// result, and the command is the call's own argument, shown
			// beside it already.
			if msg := strings.TrimSpace(string(out)); msg != "" {
				return "", fmt.Errorf("%w: %s (running %s)", err, msg, st.Run)
			}
			return "", fmt.Errorf("%w (running %s)", err, st.Run)
		}
		return string(out), nil
	}
	return st.Result, nil
}

// inside resolves a path of a step relative to the folder, refusing one
// that leaves it (.., an absolute path, a symlink out).
func (p *player) inside(rel string) (string, error) {
	if p.dir == "" {
		return "", fmt.Errorf("%s: the session has no folder", rel)
	}
	if rel == "" || filepath.IsAbs(rel) {
		return "", fmt.Errorf("%s: a path relative to the folder is needed", rel)
	}
	root, err := filepath.EvalSymlinks(p.dir)
	if err != nil {
		return "", fmt.Errorf("%s: %w", rel, err)
	}
	full := filepath.Join(root, filepath.FromSlash(rel))
	if !within(root, full) {
		return "", fmt.Errorf("%s leaves the folder", rel)
	}
	// The deepest part that exists must resolve inside too (a symlink out).
	for d := full; within(root, d) || d == root; d = filepath.Dir(d) {
		if real, err := filepath.EvalSymlinks(d); err == nil {
			if real != root && !within(root, real) {
				return "", fmt.Errorf("%s leaves the folder (through a symlink)", rel)
			}
			break
		}
	}
	return full, nil
}

func within(root, p string) bool {
	r, err := filepath.Rel(root, p)
	return err == nil && r != "." && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator))
}
