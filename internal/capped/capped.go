// Package capped keeps the start of what a child process writes, for the
// error that says why it failed (git's stderr, xdg-open's reason), bounded
// whatever the process prints.
package capped

import "bytes"

// Buffer keeps the first bytes (NewBuffer's limit) written to it and drops the rest. A
// write never fails nor comes up short, so the process is never stopped
// by a full buffer (os/exec reports a short write as the command's error).
// As an exec.Cmd's Stdout and Stderr both, it is written by one goroutine
// at a time; it is not for concurrent writers otherwise.
type Buffer struct {
	limit int
	buf   bytes.Buffer
}

// NewBuffer returns a Buffer that keeps the first limit bytes.
func NewBuffer(limit int) *Buffer { return &Buffer{limit: limit} }

func (b *Buffer) Write(p []byte) (int, error) {
	if room := b.limit - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// String is what was kept.
func (b *Buffer) String() string { return b.buf.String() }
