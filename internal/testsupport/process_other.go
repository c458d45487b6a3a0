//go:build !unix

package testsupport

import (
	"testing"
	"time"
)

// WaitGone cannot probe a pid portably here; the stop path is checked on
// unix.
func WaitGone(t testing.TB, pid int, within time.Duration) {}

// WaitNoProcessWithEnv cannot see other processes' environment here.
func WaitNoProcessWithEnv(t testing.TB, kv string, within time.Duration) {}

// ProcessesWithEnv returns nil: there is no /proc here.
func ProcessesWithEnv(kv string) []int { return nil }
