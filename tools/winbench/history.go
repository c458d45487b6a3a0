package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/internal/ctxtime"
	"github.com/pilotdesk/pilotdesk/internal/procstat"
	"github.com/pilotdesk/pilotdesk/internal/relayproc"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// relayStopWait is how long the relay that stored the history may take to
// write what it has and exit after SIGTERM.
const relayStopWait = 5 * time.Minute

// prepareHistory makes the stored conversation the open measurement opens:
// cfg.messages/2 turns played through a real relay (`pilotdesk serve` with
// the scripted agent, on a data dir in the work directory), so the SQLite
// history holds exactly what a relay writes. It is made once and kept; a
// file named complete marks a finished one.
//
// A short conversation of one turn is stored after it (a file named newer
// marks it): a window started on a data dir goes back to the latest
// conversation, and the window measured must start in a small one for the
// click on the long one to be the open measured.
func (b *bench) prepareHistory(ctx context.Context) error {
	turns := b.cfg.messages / 2
	dir := filepath.Join(b.cfg.work, fmt.Sprintf("history-%d", turns))
	b.historyDir = filepath.Join(dir, "data")
	b.historyJSON = filepath.Join(dir, "script.json")
	if _, err := os.Stat(filepath.Join(dir, "complete")); err != nil {
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := writeJSON(b.historyJSON, historyScript()); err != nil {
			return err
		}
		fmt.Printf("winbench: writing a conversation of %d turns through a relay into %s (once)\n", turns, b.historyDir)
		t0 := time.Now()
		err := b.storeTurns(ctx, dir, turns, func(i int) string {
			return fmt.Sprintf("step %d of the plan: make the transcript's parser incremental", i)
		})
		if err != nil {
			return err
		}
		fmt.Printf("winbench: stored in %s\n", time.Since(t0).Round(time.Second))
		if err := os.WriteFile(filepath.Join(dir, "complete"), []byte(time.Now().Format(time.RFC3339)+"\n"), 0o644); err != nil {
			return err
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "newer")); err == nil {
		return nil
	}
	// A history written before the short conversation was has a script
	// without its turn.
	if err := writeJSON(b.historyJSON, historyScript()); err != nil {
		return err
	}
	if err := b.storeTurns(ctx, dir, 1, func(int) string { return shortPrompt }); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "newer"), []byte(time.Now().Format(time.RFC3339)+"\n"), 0o644)
}

// storeTurns plays turns prompts in a new conversation through a relay on
// dir's data dir, and stops it once it has written them.
func (b *bench) storeTurns(ctx context.Context, dir string, turns int, prompt func(i int) string) error {
	token := relayproc.NewToken()
	r, err := relayproc.Start(ctx, relayproc.Config{
		Bin:     b.cfg.bin,
		Args:    []string{"--agent", "script", "--script", b.historyJSON, "--data-dir", b.historyDir},
		Token:   token,
		LogPath: filepath.Join(dir, "serve.log"),
	})
	if err != nil {
		return err
	}
	// The relay writes what it has before it exits on SIGTERM.
	defer func() { _ = r.Stop(relayStopWait) }()
	url := r.URL

	ctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	c, err := client.Dial(ctx, url, token)
	if err != nil {
		return fmt.Errorf("connecting to the relay: %w", err)
	}
	defer c.Close()
	id := uuid.NewString()
	if err := c.Subscribe(ctx, id, 0); err != nil {
		return fmt.Errorf("subscribing: %w", err)
	}
	for i := 1; i <= turns; i++ {
		if err := c.Send(ctx, id, prompt(i), protocol.ModeAct, ""); err != nil {
			return fmt.Errorf("turn %d: %w", i, err)
		}
		if err := waitIdle(ctx, c, id); err != nil {
			return fmt.Errorf("turn %d: %w", i, err)
		}
		if i%500 == 0 {
			fmt.Printf("winbench: %d turns stored\n", i)
		}
	}
	c.Close()
	if err := r.Stop(relayStopWait); err != nil {
		return fmt.Errorf("the relay did not stop cleanly: %w (log: %s)", err, r.LogPath)
	}
	return nil
}

// waitIdle reads events until the conversation's turn ends.
func waitIdle(ctx context.Context, c *client.Client, id string) error {
	for {
		select {
		case ev, ok := <-c.Events():
			if !ok {
				return fmt.Errorf("the connection closed")
			}
			switch d := ev.Data.(type) {
			case *protocol.Idle:
				if d.ConversationID == id {
					if d.Status != protocol.StatusCompleted {
						return fmt.Errorf("the turn ended %s: %s", d.Status, d.Message)
					}
					return nil
				}
			case *protocol.Error:
				return fmt.Errorf("the relay refused: %s", d.Message)
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// open opens the stored conversation in the window by a click on its entry
// in the list, and times it from the click to the first frame the window
// draws with the conversation shown: the window logs "conversation loaded"
// (ui.Window.replayEnded) with the wall clock, in the frame whose paint
// shows the replayed history, and the open ends with the first frame
// (DAMAGE event) that reaches the benchmark after that moment. The RSS is
// read openAfter later (the window returns the replay's garbage to the
// system a second after it), and the floors' RSS next to it (floorMemory).
//
// It used to wait for the CPU to settle (a busy interval above half a
// core, then 2 s without one), which on a loaded machine found none:
// the open, spread thin over more time, never took half a core in 100 ms.
func (b *bench) open(ctx context.Context, rep *report) error {
	dir, err := b.runDir("open-pilotdesk")
	if err != nil {
		return err
	}
	// A copy: opening the window must not change the stored original.
	data := filepath.Join(dir, "data")
	if err := os.CopyFS(data, os.DirFS(b.historyDir)); err != nil {
		return fmt.Errorf("copying the stored conversation: %w", err)
	}
	p, win, err := b.ready(ctx, func() (*proc, error) {
		return b.startProc("pilotdesk", dir, b.cfg.bin, "--agent", "script", "--script", b.historyJSON, "--data-dir", data)
	})
	if err != nil {
		return err
	}
	defer p.stop()
	rss0, _, err := memory(p.pid())
	if err != nil {
		return err
	}
	t0, err := procstat.Ticks(p.pid())
	if err != nil {
		return err
	}
	if err := b.x.conn.watchFrames(win.window); err != nil {
		return err
	}
	mark := b.x.conn.frameMark()
	// The list holds the window's new, empty conversation first and the
	// stored one second; a click there opens it.
	click := time.Now()
	if err := b.x.xdotool("mousemove", "130", "182", "click", "1"); err != nil {
		return err
	}
	if err := b.x.conn.warp(1279, 799); err != nil {
		return err
	}
	loaded, err := waitLoaded(ctx, p, settleLimit)
	if err != nil {
		return err
	}
	// The frame that shows it; the window draws it at its next tick.
	var shown time.Time
	for deadline := time.Now().Add(30 * time.Second); ; {
		if at, ok := b.x.conn.frameAfter(mark, loaded.at); ok {
			shown = at
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no frame drawn within 30 s of the log's \"conversation loaded\" (see %s)", p.logPath)
		}
		if err := ctxtime.Sleep(ctx, 5*time.Millisecond); err != nil {
			return err
		}
	}
	ticksShown, err := procstat.Ticks(p.pid())
	if err != nil {
		return err
	}
	if err := ctxtime.Sleep(ctx, openAfter-time.Since(shown)); err != nil {
		return err
	}
	if err := p.alive(); err != nil {
		return err
	}
	tk, err := procstat.Ticks(p.pid())
	if err != nil {
		return err
	}
	rss, peak, err := memory(p.pid())
	if err != nil {
		return err
	}
	anon, file, err := rssParts(p.pid())
	if err != nil {
		return err
	}
	res := openResult{
		seconds: shown.Sub(click).Seconds(), replay: loaded.took, rows: loaded.rows,
		ticks: ticksShown - t0, ticksAfter: tk - t0, rssBefore: rss0, rss: rss, peak: peak,
	}
	fmt.Printf("  open %d messages (%d rows): shown %.2f s after the click (the replay %s, its frame %s after it), %d ticks by then, %d by %s after; RSS %.0f → %.0f MiB (peak %.0f; anon %.0f, file %.0f)\n",
		b.cfg.messages, res.rows, res.seconds, res.replay, shown.Sub(loaded.at).Round(time.Millisecond), res.ticks, res.ticksAfter, openAfter, res.rssBefore, res.rss, res.peak, anon, file)
	if b.cfg.only["scroll"] {
		if err := b.scrollPair(ctx, rep, p, win.window); err != nil {
			return err
		}
	}
	p.stop()
	res.floorIdle, res.floorNaive, err = b.floorMemory(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("  the floors' RSS, %s after their windows settled: floor-idle %.0f MiB, floor-naive -fill 10 %.0f MiB\n",
		openAfter, res.floorIdle, res.floorNaive)
	rep.open = append(rep.open, res)
	return nil
}

// openAfter is how long after the opened conversation's first frame its
// RSS is read: the window returns the replay's garbage to the system a
// second after that frame.
const openAfter = 3 * time.Second

// settleLimit is how long open waits for the window to say that it loaded
// the conversation.
const settleLimit = 90 * time.Second

// loadedLine is what the window logs when it draws a long replayed
// conversation (ui.Window.replayEnded).
type loadedLine struct {
	at   time.Time     // shownAtMicros: the frame's sync, on the wall clock
	took time.Duration // the replay, from subscribing to that frame
	rows int
}

var (
	loadedMsg    = regexp.MustCompile(`msg="conversation loaded".* rows=(\d+) took=(\S+) shownAtMicros=(\d+)`)
	loadedPoll   = 20 * time.Millisecond
	errNoLoadLog = errors.New(`the window logged no "conversation loaded"`)
)

// waitLoaded waits up to limit for p's log to say that the window drew the
// replayed conversation, and returns what it says.
func waitLoaded(ctx context.Context, p *proc, limit time.Duration) (loadedLine, error) {
	deadline := time.Now().Add(limit)
	for {
		b, err := os.ReadFile(p.logPath)
		if err != nil {
			return loadedLine{}, err
		}
		if l, ok, err := parseLoaded(b); err != nil || ok {
			return l, err
		}
		if err := p.alive(); err != nil {
			return loadedLine{}, err
		}
		if time.Now().After(deadline) {
			return loadedLine{}, fmt.Errorf("%w within %s of the click at (130, 182) (see %s)", errNoLoadLog, limit, p.logPath)
		}
		if err := ctxtime.Sleep(ctx, loadedPoll); err != nil {
			return loadedLine{}, err
		}
	}
}

// parseLoaded finds the window's "conversation loaded" line in its log.
func parseLoaded(log []byte) (loadedLine, bool, error) {
	m := loadedMsg.FindSubmatch(log)
	if m == nil {
		return loadedLine{}, false, nil
	}
	rows, err1 := strconv.Atoi(string(m[1]))
	took, err2 := time.ParseDuration(string(m[2]))
	us, err3 := strconv.ParseInt(string(m[3]), 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return loadedLine{}, false, fmt.Errorf("reading %q: %w", m[0], err)
	}
	return loadedLine{at: time.UnixMicro(us), took: took, rows: rows}, true, nil
}

// floorMemory starts floor-idle (a focused entry: the window's composer
// alone) and floor-naive -fill 10 (a long markdown text in a scroll
// container) in turn and returns the RSS of each, openAfter after its
// window settled: what a bare Fyne window costs on this machine, next to
// which the open's RSS is judged.
func (b *bench) floorMemory(ctx context.Context) (idle, naive float64, err error) {
	one := func(name string, args ...string) (float64, error) {
		p, _, err := b.ready(ctx, func() (*proc, error) { return b.floor(name, args...) })
		if err != nil {
			return 0, err
		}
		defer p.stop()
		if err := ctxtime.Sleep(ctx, openAfter); err != nil {
			return 0, err
		}
		rss, _, err := memory(p.pid())
		if err != nil {
			return 0, err
		}
		anon, file, err := rssParts(p.pid())
		if err != nil {
			return 0, err
		}
		fmt.Printf("  %s: RSS %.0f MiB (anon %.0f, file %.0f)\n", name, rss, anon, file)
		return rss, nil
	}
	if idle, err = one("floor-idle"); err != nil {
		return 0, 0, err
	}
	naive, err = one("floor-naive", "-tokens", b.tokensFile, "-fill", "10")
	return idle, naive, err
}

// scrollPair scrolls the opened conversation up in pilotdesk's window
// (p's, which it stops), then the same in the floor's, and reports both.
func (b *bench) scrollPair(ctx context.Context, rep *report, p *proc, window uint32) error {
	pd, err := b.wheel(ctx, p, window)
	if err != nil {
		return err
	}
	p.stop()
	// The floor: Fyne scrolling a long markdown text in a scroll
	// container, the reply ten times over.
	fl, fwin, err := b.ready(ctx, func() (*proc, error) {
		return b.floor("floor-naive", "-tokens", b.tokensFile, "-fill", "10")
	})
	if err != nil {
		return err
	}
	defer fl.stop()
	floor, err := b.wheel(ctx, fl, fwin.window)
	if err != nil {
		return err
	}
	fmt.Printf("  scroll it up, %d wheel clicks in %s: pilotdesk %d frames over %s, longest gap %s, %d frames dropped, %d ticks (X server %d); floor-naive %d frames, longest gap %s, %d dropped, %d ticks (X server %d)\n",
		pd.clicks, pd.wheel.Round(time.Millisecond), pd.frames, pd.span, pd.longest, pd.dropped, pd.ticks, pd.xTicks,
		floor.frames, floor.longest, floor.dropped, floor.ticks, floor.xTicks)
	rep.scroll = append(rep.scroll, [2]scrollResult{pd, floor})
	return nil
}

// wheel turns the mouse wheel up over a window's text (the opened
// conversation's transcript; wheel clicks at 60 a second, as a quick flick
// of a wheel sends them) and records every frame the window draws
// meanwhile (DAMAGE events, with the X server's time): a window that keeps
// up draws a frame for each click or two, at most 16.7 ms apart while they
// come; a gap of more than two such intervals dropped frames (droppedIn). Its
// CPU and the X server's are read over the same time.
//
// Only the frames that reach winbench up to wheelGrace after the last
// click count, and of the gaps between them only those that open before
// the last click: both programs draw again some time after the wheel
// stopped (a machine with other work on it makes it later), and that gap,
// which no click was waiting in, counted as 12 to 28 dropped frames.
func (b *bench) wheel(ctx context.Context, p *proc, window uint32) (scrollResult, error) {
	if err := b.x.conn.watchFrames(window); err != nil {
		return scrollResult{}, err
	}
	// The pointer over the transcript, then a pause for any hover effect.
	if err := b.x.xdotool("mousemove", "680", "380"); err != nil {
		return scrollResult{}, err
	}
	if err := ctxtime.Sleep(ctx, time.Second); err != nil {
		return scrollResult{}, err
	}
	const clicks, delay = 240, 16 // ms
	mark := b.x.conn.frameMark()
	end := mark
	var wheel time.Duration
	c, err := b.measure(p, func() error {
		t0 := time.Now()
		if err := b.x.xdotool("click", "--repeat", fmt.Sprint(clicks), "--delay", fmt.Sprint(delay), "4"); err != nil {
			return err
		}
		wheel = time.Since(t0)
		// The last frames of the scroll.
		if err := ctxtime.Sleep(ctx, wheelGrace); err != nil {
			return err
		}
		end = b.x.conn.frameMark()
		return ctxtime.Sleep(ctx, 500*time.Millisecond-wheelGrace)
	})
	if err != nil {
		return scrollResult{}, err
	}
	if err := b.x.conn.warp(1279, 799); err != nil {
		return scrollResult{}, err
	}
	frames := b.x.conn.framesSince(mark)
	frames = frames[:min(len(frames), end-mark)]
	if len(frames) < 2 {
		return scrollResult{}, fmt.Errorf("%s drew %d frames while the wheel turned (see %s)", p.name, len(frames), p.logPath)
	}
	res := scrollResult{clicks: clicks, wheel: wheel, frames: len(frames), ticks: c.prog, xTicks: c.xserver}
	// The wheel's last click, on the X server's clock: the first frame
	// follows the first click, so the last click came no later than the
	// wheel's time after the first frame (xdotool also waits its delay
	// after the last click). A gap that opens after it had no click
	// waiting in it: the window had drawn every click and drew again
	// later for a reason of its own (pilotdesk, 50-120 ms after the
	// wheel, four frames in a row, and floor-naive, 300-400 ms after it,
	// each do), so it drops nothing.
	lastClick := int64(frames[0]) + wheel.Milliseconds()
	for i := 1; i < len(frames) && int64(frames[i-1]) < lastClick; i++ {
		gap := time.Duration(frames[i]-frames[i-1]) * time.Millisecond
		res.longest = max(res.longest, gap)
		res.dropped += droppedIn(gap)
	}
	res.span = time.Duration(frames[len(frames)-1]-frames[0]) * time.Millisecond
	return res, nil
}

// frameTime is one frame at 60 Hz, the most Fyne draws.
const frameTime = time.Second / 60

// droppedIn is how many frames a gap between two frames dropped. Fyne
// draws on a 60 Hz tick, so a gap is a whole number of ticks give or take
// how much longer one frame took to draw than the other; the X server
// stamps frames in whole milliseconds. A gap of two ticks is no drop: the
// wheel's clicks come about every 16.6 ms (xdotool's 16 ms and its own
// work) and Fyne's ticks every 16.7 ms, so now and then a tick finds no
// click to draw. A gap of two ticks read as 34 ms, or 39 ms with a slower
// second frame, counted as a dropped frame before: the gap is now rounded
// to the nearest number of ticks.
func droppedIn(gap time.Duration) int {
	ticks := int(math.Round(float64(gap) / float64(frameTime)))
	return max(0, ticks-2)
}

// wheelGrace is how long after the last wheel click a frame still counts:
// six frames, for a window that is behind when the wheel stops.
const wheelGrace = 100 * time.Millisecond
