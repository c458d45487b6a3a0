package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
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
func (b *bench) prepareHistory(ctx context.Context) error {
	turns := b.cfg.messages / 2
	dir := filepath.Join(b.cfg.work, fmt.Sprintf("history-%d", turns))
	b.historyDir = filepath.Join(dir, "data")
	b.historyJSON = filepath.Join(dir, "script.json")
	if _, err := os.Stat(filepath.Join(dir, "complete")); err == nil {
		return nil
	}
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
		prompt := fmt.Sprintf("step %d of the plan: make the transcript's parser incremental", i)
		if err := c.Send(ctx, id, prompt, protocol.ModeAct, ""); err != nil {
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
	fmt.Printf("winbench: stored in %s\n", time.Since(t0).Round(time.Second))
	return os.WriteFile(filepath.Join(dir, "complete"), []byte(time.Now().Format(time.RFC3339)+"\n"), 0o644)
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

// open opens the stored conversation in the window: a click on its entry in
// the list, then CPU sampled every 100 ms until the window settles: 2 s
// without a busy interval, one above half a core that ends 500 ms above
// 40 % of a core. The second condition leaves out the cursor's blink, which
// the click starts: one of its fades, six frames in a row twice a second,
// can take half a core for 100 ms when a long list makes every frame dear.
// The open time is from the click to the end of the last busy interval.
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
	// The list holds the window's new, empty conversation first and the
	// stored one second; a click there opens it.
	click := time.Now()
	if err := b.x.xdotool("mousemove", "130", "182", "click", "1"); err != nil {
		return err
	}
	if err := b.x.conn.warp(1279, 799); err != nil {
		return err
	}
	lastBusy, settledTicks, err := settle(ctx, p, t0, click)
	if err != nil {
		return err
	}
	if err := p.alive(); err != nil {
		return err
	}
	if settledTicks == 0 {
		return fmt.Errorf("the click at (130, 182) opened nothing: no busy interval (see %s)", p.logPath)
	}
	rss, peak, err := memory(p.pid())
	if err != nil {
		return err
	}
	res := openResult{seconds: lastBusy.Sub(click).Seconds(), ticks: settledTicks, rssBefore: rss0, rss: rss, peak: peak}
	settled := fmt.Sprintf("settled %.2f s after the click", res.seconds)
	if lastBusy.Sub(click) > settleLimit {
		res.unsettled = true
		settled = fmt.Sprintf("still busy %s after the click", settleLimit)
	}
	fmt.Printf("  open %d messages: %s, %d ticks; RSS %.0f → %.0f MiB (peak %.0f)\n",
		b.cfg.messages, settled, res.ticks, res.rssBefore, res.rss, res.peak)
	rep.open = append(rep.open, res)
	if !b.cfg.only["scroll"] {
		return nil
	}
	return b.scrollPair(ctx, rep, p, win.window)
}

// settleLimit is how long open waits for the window to settle: one still
// busy then costs what it cost so far.
const settleLimit = 90 * time.Second

// settle samples p's CPU every 100 ms from the click until the window
// settles (open says when), and returns the end of the last busy interval
// and the ticks used by then since t0.
func settle(ctx context.Context, p *proc, t0 int64, click time.Time) (lastBusy time.Time, settledTicks int64, err error) {
	const (
		interval = 100 * time.Millisecond
		busy     = 5  // ticks per interval: half a core
		span     = 5  // intervals: 500 ms
		spanBusy = 20 // ticks per span: 40 % of a core
		quiet    = 2 * time.Second
		limit    = settleLimit
	)
	last := click
	prev := t0
	lastBusy = click
	var recent []int64 // the last span intervals' ticks
	for {
		if err := ctxtime.Sleep(ctx, interval); err != nil {
			return lastBusy, settledTicks, err
		}
		now := time.Now()
		tk, err := procstat.Ticks(p.pid())
		if err != nil {
			return lastBusy, settledTicks, err
		}
		recent = append(recent, tk-prev)
		if len(recent) > span {
			recent = recent[1:]
		}
		var sum int64
		for _, n := range recent {
			sum += n
		}
		if tk-prev >= busy && sum >= spanBusy {
			lastBusy = now
			settledTicks = tk - t0
		}
		prev, last = tk, now
		if last.Sub(lastBusy) >= quiet {
			break
		}
		if last.Sub(click) > limit {
			// Still busy: what it cost so far is the figure.
			lastBusy, settledTicks = last, tk-t0
			break
		}
	}
	return lastBusy, settledTicks, nil
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
