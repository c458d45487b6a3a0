//go:build !unix

package copilot_test

import "testing"

// waitGone cannot probe a pid portably here; the stop path is checked on
// unix.
func waitGone(t *testing.T, pid int) {}

func waitNoProcessWithEnv(t *testing.T, kv string) {}

func processesWithEnv(kv string) []int { return nil }
