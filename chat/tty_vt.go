//go:build !windows

package chat

// enableVT: terminals elsewhere process escape sequences as they are.
func enableVT(fd int) bool { return true }
