package chat

import (
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
)

// cancellableReader returns a reader of f whose Read a read deadline can
// interrupt, so that Run can stop its reader goroutine: the terminal opened
// again (through /proc/self/fd), non-blocking and served by the runtime's
// poller. Opened again, not duplicated: a duplicate shares the open file
// description, and with it O_NONBLOCK, with stdout and the shell, so a
// write of a long replay to a terminal that has not drawn it yet failed
// with EAGAIN ("write /dev/stdout: resource temporarily unavailable") and
// ended the chat. The returned function closes it. When that cannot be
// arranged it returns f, whose reads end with the process.
func cancellableReader(f *os.File) (io.Reader, func()) {
	nf, err := os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), os.O_RDONLY|syscall.O_NOCTTY, 0)
	if err != nil {
		return f, func() {}
	}
	if nf.SetReadDeadline(time.Time{}) != nil {
		nf.Close() // not served by the poller: reads could not be interrupted
		return f, func() {}
	}
	return nf, func() { nf.Close() }
}
