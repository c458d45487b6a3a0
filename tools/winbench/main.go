// Command winbench measures the real (GL) pilotdesk window under Xvfb next
// to Fyne floor programs on the same X server, and prints the ratios next
// to the speed targets of issues #17 and #28 (docs/performance.md):
//
//	idle 20 s, composer focused       pilotdesk ≤ 0.3× floor-idle (a focused multi-line entry)
//	a 600-token reply at 50 tokens/s  pilotdesk ≤ 0.3× floor-naive (one RichText re-parsed per token)
//	start to mapped window            pilotdesk ≤ 1.0× floor-minimal (rounding: ≤ 1.05×)
//	open a stored 5,000-message conversation: < 0.5 s, RSS < 150 MiB
//	scroll it with the mouse wheel: no frame dropped
//
// CPU is utime+stime of the program's process from /proc (clock ticks,
// 1/100 s) over the same fixed window for both programs; a run measures both,
// in alternating order, and there are -runs runs. pilotdesk runs its embedded
// relay with the scripted agent (--agent script) on a fresh data dir, so the
// relay, the agent and the SQLite history are in its figures; the floors
// have none of that. Everything listens on 127.0.0.1 only.
//
//	make bench-window                      # builds everything, three runs
//	go run ./tools/winbench -bin ./pilotdesk -floors .tools/winbench -runs 1 -only idle
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pilotdesk/pilotdesk/internal/procstat"
)

type config struct {
	bin       string
	floors    string
	work      string
	runs      int
	only      map[string]bool
	idle      time.Duration
	settle    time.Duration
	tokens    int
	rate      int
	messages  int
	perf      string
	keepGoing bool
}

func main() {
	var cfg config
	var only string
	flag.StringVar(&cfg.bin, "bin", "./pilotdesk", "the real pilotdesk binary (go build ., not -tags ci)")
	flag.StringVar(&cfg.floors, "floors", ".tools/winbench", "the directory holding floor-minimal, floor-idle and floor-naive")
	flag.StringVar(&cfg.work, "work", ".tools/winbench/work", "scratch directory: data dirs, logs, the stored conversation (kept between runs)")
	flag.IntVar(&cfg.runs, "runs", 3, "runs; each measures pilotdesk and its floor")
	flag.StringVar(&only, "only", "start,idle,stream,open,scroll", "the measurements to make, comma-separated (scroll scrolls the conversation open opened)")
	flag.DurationVar(&cfg.idle, "idle", 20*time.Second, "the idle measurement's window")
	flag.DurationVar(&cfg.settle, "settle", 3*time.Second, "wait after a window is mapped before measuring")
	flag.IntVar(&cfg.tokens, "tokens", 600, "tokens in the streamed reply")
	flag.IntVar(&cfg.rate, "rate", 50, "tokens per second")
	flag.IntVar(&cfg.messages, "messages", 5000, "messages in the stored conversation (a prompt and a reply per turn)")
	flag.StringVar(&cfg.perf, "perf", "", "record `DIR`/idle-N.perf.data and stream-N.perf.data with perf(1) while pilotdesk is measured")
	flag.BoolVar(&cfg.keepGoing, "keep-going", false, "go on after a measurement fails")
	flag.Parse()
	cfg.only = map[string]bool{}
	for _, s := range strings.Split(only, ",") {
		switch s = strings.TrimSpace(s); s {
		case "start", "idle", "stream", "open", "scroll":
			cfg.only[s] = true
		case "":
		default:
			fmt.Fprintf(os.Stderr, "winbench: unknown measurement %q (start, idle, stream, open, scroll)\n", s)
			os.Exit(2)
		}
	}
	if cfg.only["scroll"] {
		cfg.only["open"] = true // it scrolls the conversation open opens
	}
	if cfg.runs < 1 || cfg.tokens < 1 || cfg.rate < 1 || cfg.messages < 2 {
		fmt.Fprintln(os.Stderr, "winbench: -runs, -tokens, -rate must be positive and -messages at least 2")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, cfg)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "winbench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg config) error {
	for _, p := range []string{cfg.bin, filepath.Join(cfg.floors, "floor-minimal"), filepath.Join(cfg.floors, "floor-idle"), filepath.Join(cfg.floors, "floor-naive")} {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("%w (make bench-window builds it)", err)
		}
	}
	for _, tool := range []string{"Xvfb", "xdotool"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is not installed (scripts/deps.sh bench installs it): %w", tool, err)
		}
	}
	if err := os.MkdirAll(cfg.work, 0o755); err != nil {
		return fmt.Errorf("creating the work directory: %w", err)
	}
	work, err := filepath.Abs(cfg.work)
	if err != nil {
		return err
	}
	cfg.work = work

	x, err := startXvfb(ctx, cfg.work)
	if err != nil {
		return err
	}
	defer x.stop()
	b := &bench{cfg: cfg, x: x}
	if err := b.prepare(ctx); err != nil {
		return err
	}
	fmt.Printf("winbench: %s and its floors on Xvfb :%d (1280x800x24), %d runs, alternating order\n", cfg.bin, x.display, cfg.runs)

	var rep report
	for r := 1; r <= cfg.runs; r++ {
		pdFirst := r%2 == 0
		fmt.Printf("run %d/%d\n", r, cfg.runs)
		steps := []struct {
			name string
			f    func(context.Context, int, bool) error
		}{
			{"start", func(ctx context.Context, r int, pdFirst bool) error { return b.startPair(ctx, &rep, pdFirst) }},
			{"idle", func(ctx context.Context, r int, pdFirst bool) error { return b.idlePair(ctx, &rep, r, pdFirst) }},
			{"stream", func(ctx context.Context, r int, pdFirst bool) error { return b.streamPair(ctx, &rep, r, pdFirst) }},
			{"open", func(ctx context.Context, r int, pdFirst bool) error { return b.open(ctx, &rep) }},
		}
		for _, s := range steps {
			if !cfg.only[s.name] {
				continue
			}
			if err := s.f(ctx, r, pdFirst); err != nil {
				if ctx.Err() != nil || !cfg.keepGoing {
					return fmt.Errorf("run %d, %s: %w", r, s.name, err)
				}
				fmt.Printf("  %s: FAILED: %v\n", s.name, err)
			}
		}
	}
	rep.print(os.Stdout, cfg)
	return nil
}

// ---- Xvfb ----

type xserver struct {
	cmd     *exec.Cmd
	display int
	conn    *xconn
	env     []string
}

// startXvfb starts an X server on a free display (Xvfb picks it and
// writes it to -displayfd), without TCP.
func startXvfb(ctx context.Context, work string) (*xserver, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(work, "xvfb.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("Xvfb", "-displayfd", "3", "-screen", "0", "1280x800x24", "-nolisten", "tcp", "-noreset")
	cmd.ExtraFiles = []*os.File{w}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		log.Close()
		return nil, fmt.Errorf("starting Xvfb: %w", err)
	}
	w.Close()
	log.Close()
	got := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(r, 64))
		r.Close()
		got <- strings.TrimSpace(string(b))
	}()
	var display int
	select {
	case s := <-got:
		display, err = strconv.Atoi(s)
		if err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return nil, fmt.Errorf("no display number from Xvfb (see %s)", filepath.Join(work, "xvfb.log"))
		}
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, errors.New("no Xvfb display within 20 s")
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, ctx.Err()
	}
	x := &xserver{cmd: cmd, display: display}
	x.conn, err = dialX(display)
	if err != nil {
		x.stop()
		return nil, err
	}
	// The programs keep their preferences (pilotdesk's settings and window
	// size) in a config dir of the benchmark's, not the user's: saved
	// settings would change what is measured, and a run would change them.
	x.env = append(os.Environ(), fmt.Sprintf("DISPLAY=:%d", display), "LANG=en_US.UTF-8",
		"XDG_CONFIG_HOME="+filepath.Join(work, "config"))
	return x, nil
}

func (x *xserver) stop() {
	if x.conn != nil {
		x.conn.Close()
	}
	_ = x.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = x.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = x.cmd.Process.Kill()
		<-done
	}
}

// xdotool runs xdotool on the benchmark's display.
func (x *xserver) xdotool(args ...string) error {
	cmd := exec.Command("xdotool", args...)
	cmd.Env = x.env
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("xdotool %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// ---- processes ----

// proc is a program under measurement.
type proc struct {
	name    string
	cmd     *exec.Cmd
	started time.Time
	done    chan struct{}
	logPath string
}

// startProc starts bin with args on the X server; its output goes to a log
// file in dir.
func (b *bench) startProc(name, dir, bin string, args ...string) (*proc, error) {
	logPath := filepath.Join(dir, name+".log")
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = b.x.env
	cmd.Stdout, cmd.Stderr = log, log
	p := &proc{name: name, cmd: cmd, done: make(chan struct{}), logPath: logPath}
	p.started = time.Now()
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	go func() {
		_ = cmd.Wait()
		log.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// alive reports an error if the program has exited.
func (p *proc) alive() error {
	select {
	case <-p.done:
		return fmt.Errorf("%s exited early (%v); its log is %s", p.name, p.cmd.ProcessState, p.logPath)
	default:
		return nil
	}
}

// stop ends the program (SIGTERM, then SIGKILL after 15 s) and waits.
func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// rssParts splits the process's resident set (MiB): anon is its own memory
// (the Go heap, the C heap, SQLite's, Mesa's), file the pages of files it
// maps (the binary, libLLVM and the other libraries, fonts), which the
// page cache holds whether or not the process runs and which the kernel
// maps with the cached neighbours of each page touched (on Linux 6.18 most
// likely a whole large folio), so their share follows how the file was
// written more than what the process ran (the same pilotdesk binary maps
// 42 MB written by the linker, 34 MB once copied with cp).
func rssParts(pid int) (anon, file float64, err error) {
	return statusMiB(pid, "RssAnon", "RssFile")
}

// memory returns the process's resident set and its peak, in MiB.
func memory(pid int) (rss, peak float64, err error) {
	return statusMiB(pid, "VmRSS", "VmHWM")
}

// statusMiB reads two fields of /proc/PID/status (in kB there) in MiB.
func statusMiB(pid int, a, b string) (float64, float64, error) {
	aKiB, err1 := procstat.Field(pid, a)
	bKiB, err2 := procstat.Field(pid, b)
	if err := errors.Join(err1, err2); err != nil {
		return 0, 0, err
	}
	return float64(aKiB) / 1024, float64(bKiB) / 1024, nil
}
