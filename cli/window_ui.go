package cli

import (
	"context"
	"errors"
)

// showWindow is replaced by the Fyne window once ui/ lands (issue 5).
func showWindow(ctx context.Context, cf *clientFlags, env Env) error {
	return errors.New("the desktop window is not wired yet")
}
