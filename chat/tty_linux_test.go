package chat

import (
	"os"
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
	case <-time.After(10 * time.Second):
		t.Fatal("a read deadline did not interrupt the read")
	}
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
