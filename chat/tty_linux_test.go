package chat

import (
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// echoOn reports whether the terminal echoes and edits lines (cooked mode).
func echoOn(t *testing.T, tty *os.File) bool {
	t.Helper()
	tio, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	return tio.Lflag&unix.ECHO != 0 && tio.Lflag&unix.ICANON != 0
}

// TestOpenTerminal checks what OpenTerminal makes of a real pseudo-terminal,
// NO_COLOR, TERM=dumb and a pipe.
func TestOpenTerminal(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 30, Cols: 77}); err != nil {
		t.Fatal(err)
	}
	env := func(kv map[string]string) func(string) string {
		return func(k string) string { return kv[k] }
	}

	tm, in, restore, err := OpenTerminal(tty, tty, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !tm.Raw || !tm.Live || !tm.Color || !tm.Spinner {
		t.Errorf("a terminal: %+v, want raw, live, colour and spinner", tm)
	}
	if w := tm.Width(); w != 77 {
		t.Errorf("width = %d, want 77", w)
	}
	// The reader Run gets can be interrupted, so Run can stop its reader.
	checkDeadlineInterrupts(t, in)
	if echoOn(t, tty) {
		t.Error("raw mode left echo on")
	}
	restore()
	// Restored: echo and line editing on again, and blocking reads (the
	// shell shares the descriptor).
	if !echoOn(t, tty) {
		t.Error("echo is still off after restore")
	}
	if fl, err := unix.FcntlInt(tty.Fd(), unix.F_GETFL, 0); err != nil || fl&unix.O_NONBLOCK != 0 {
		t.Errorf("the terminal is left non-blocking (flags %#x, %v)", fl, err)
	}

	tm, _, restore, err = OpenTerminal(tty, tty, env(map[string]string{"NO_COLOR": "1"}))
	if err != nil {
		t.Fatal(err)
	}
	restore()
	if !tm.Raw || !tm.Live || tm.Color || tm.Spinner {
		t.Errorf("NO_COLOR: %+v, want raw and live without colour or spinner", tm)
	}

	tm, _, restore, err = OpenTerminal(tty, tty, env(map[string]string{"TERM": "dumb"}))
	if err != nil {
		t.Fatal(err)
	}
	restore()
	if tm.Raw || tm.Live || tm.Color {
		t.Errorf("TERM=dumb: %+v, want plain lines", tm)
	}

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	tm, in, restore, err = OpenTerminal(r, w, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	restore()
	if tm.Raw || tm.Live || tm.Color || tm.Spinner || in != r {
		t.Errorf("pipes: %+v, want plain lines from the pipe itself", tm)
	}
	// stdin a pipe, stdout a terminal: redrawing (the spinner) yes, raw keys no.
	tm, _, restore, err = OpenTerminal(r, tty, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	restore()
	if tm.Raw || !tm.Live || !tm.Color {
		t.Errorf("piped stdin, terminal stdout: %+v", tm)
	}
}

// TestTerminalOutputStaysBlocking checks that reading keys leaves the
// terminal's stdout blocking: a shell gives stdin and stdout one open file
// description, and a non-blocking one made a write of a long replay, which
// the terminal had not drawn yet, fail with EAGAIN and end the chat.
func TestTerminalOutputStaysBlocking(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	// As a shell hands it over: one blocking description, which os.NewFile
	// leaves blocking (os.OpenFile would make it non-blocking itself).
	fd, err := syscall.Open(tty.Name(), syscall.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	term := os.NewFile(uintptr(fd), tty.Name())
	defer term.Close()

	tm, in, restore, err := OpenTerminal(term, term, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	defer restore()
	if !tm.Raw {
		t.Fatalf("a terminal: %+v, want raw", tm)
	}
	if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err != nil || fl&unix.O_NONBLOCK != 0 {
		t.Errorf("stdout is non-blocking while the chat reads keys (flags %#x, %v)", fl, err)
	}
	// The keys still come through the reader, and a deadline still stops it.
	if _, err := ptmx.Write([]byte("k")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4)
	if n, err := in.Read(b); err != nil || string(b[:n]) != "k" {
		t.Errorf("read %q, %v; want the key k", b[:n], err)
	}
	checkDeadlineInterrupts(t, in)
}

// checkDeadlineInterrupts checks that a read deadline stops a read of in
// that nothing answers, as Run does to stop its reader goroutine.
func checkDeadlineInterrupts(t *testing.T, in io.Reader) {
	t.Helper()
	d, ok := in.(interface{ SetReadDeadline(time.Time) error })
	if !ok {
		t.Fatalf("the reader %T takes no deadline", in)
	}
	readDone := make(chan error, 1)
	go func() {
		_, err := in.Read(make([]byte, 16))
		readDone <- err
	}()
	if err := d.SetReadDeadline(time.Now()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-readDone:
		if !os.IsTimeout(err) {
			t.Errorf("the interrupted read returned %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a read deadline did not interrupt the read")
	}
}
