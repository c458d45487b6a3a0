package chat

import (
	"io"
	"os"
	"syscall"
	"time"
)

// cancellableReader returns a reader of f whose Read a read deadline can
// interrupt, so that Run can stop its reader goroutine: a non-blocking
// duplicate of the descriptor, served by the runtime's poller. The returned
// function puts the descriptor back in blocking mode (the shell shares it)
// and closes the duplicate. When that cannot be arranged it returns f.
func cancellableReader(f *os.File) (io.Reader, func()) {
	fd, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		return f, func() {}
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return f, func() {}
	}
	nf := os.NewFile(uintptr(fd), f.Name())
	if nf.SetReadDeadline(time.Time{}) != nil {
		// Not served by the poller: reads would fail with EAGAIN.
		_ = syscall.SetNonblock(fd, false)
		nf.Close()
		return f, func() {}
	}
	return nf, func() {
		_ = syscall.SetNonblock(fd, false)
		nf.Close()
	}
}
