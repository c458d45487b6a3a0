package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/pilotdesk/pilotdesk/internal/ctxtime"
	"github.com/pilotdesk/pilotdesk/internal/procstat"
)

type bench struct {
	cfg         config
	x           *xserver
	tokensFile  string // the reply's tokens, for floor-naive
	streamJSON  string // the script that streams them to pilotdesk
	historyDir  string // the data dir holding the stored conversation
	historyJSON string // the script that wrote it (the window runs it too)
}

// replyText is the streamed reply: what an agent writes, paragraphs, a
// numbered list, a bullet list and a fenced code block, repeated with
// variations until it has enough tokens.
const replyText = `I looked at how the relay stores a conversation before it fans the events out, and the order of the writes is what keeps a reconnecting window consistent. Here is what happens to one delta on its way to the screen:

1. The agent's process writes a JSON-RPC frame, which the reader goroutine decodes.
2. The relay gives the event the next sequence number and encodes it once.
3. The committer writes a batch of events to SQLite in one transaction.
4. Every subscriber's writer sends the same bytes in one corked write.

The window folds the event into its store and asks for a frame; the frame takes only the rows that changed. A few things follow from that:

- a reconnecting client asks for what it missed with ` + "`sinceSeq`" + ` and never shows a delta twice;
- a slow subscriber is disconnected instead of slowing the others down;
- the history on disk is never behind what any client saw.

` + "```go" + `
for ev := range c.Events() {
	store.Apply(ev)
	w.requestFrame()
}
` + "```" + `

The loop above is the whole pump; everything else is bookkeeping. If you want, I can add a test that kills the relay in the middle of a turn and checks that the window shows the same text after the restart.

`

// tokenize cuts text into words, each with the spaces and newlines after
// it: what a model streams, roughly.
func tokenize(text string) []string {
	var out []string
	start := 0
	for i := 1; i < len(text); i++ {
		if text[i] != ' ' && text[i] != '\n' && (text[i-1] == ' ' || text[i-1] == '\n') {
			out = append(out, text[start:i])
			start = i
		}
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	return out
}

// replyTokens returns n tokens of replyText, repeated as needed.
func replyTokens(n int) []string {
	base := tokenize(replyText)
	out := make([]string, 0, n)
	for len(out) < n {
		out = append(out, base[:min(len(base), n-len(out))]...)
	}
	return out
}

type step map[string]any

type scriptTurn struct {
	Match string `json:"match,omitempty"`
	Steps []step `json:"steps"`
}

type script struct {
	Turns []scriptTurn `json:"turns"`
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// prepare writes the reply and the scripts, and the stored conversation if
// the work directory does not hold it yet.
func (b *bench) prepare(ctx context.Context) error {
	toks := replyTokens(b.cfg.tokens)
	b.tokensFile = filepath.Join(b.cfg.work, "tokens.json")
	if err := writeJSON(b.tokensFile, toks); err != nil {
		return err
	}
	// The scripted agent streams the same tokens, paced by sleep steps, for
	// any prompt.
	pace := (time.Second / time.Duration(b.cfg.rate)).String()
	var steps []step
	for i, t := range toks {
		if i > 0 {
			steps = append(steps, step{"sleep": pace})
		}
		steps = append(steps, step{"delta": t})
	}
	b.streamJSON = filepath.Join(b.cfg.work, "stream.json")
	if err := writeJSON(b.streamJSON, script{Turns: []scriptTurn{{Steps: steps}}}); err != nil {
		return err
	}
	if b.cfg.only["open"] {
		return b.prepareHistory(ctx)
	}
	return nil
}

// streamWindow is how long a streaming measurement lasts: the reply's time
// at the rate, and 1.5 s for the prompt's round trip and the last frames.
func (b *bench) streamWindow() time.Duration {
	return time.Duration(b.cfg.tokens)*time.Second/time.Duration(b.cfg.rate) + 1500*time.Millisecond
}

// runDir is a fresh directory for one measurement's data dir and logs.
func (b *bench) runDir(name string) (string, error) {
	dir := filepath.Join(b.cfg.work, "runs", name)
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return dir, nil
}

// pilotdesk starts the real window on an embedded relay with the scripted
// agent and a data dir of its own.
func (b *bench) pilotdesk(name, scriptPath, dataDir string) (*proc, error) {
	dir, err := b.runDir(name)
	if err != nil {
		return nil, err
	}
	if dataDir == "" {
		dataDir = filepath.Join(dir, "data")
	}
	return b.startProc("pilotdesk", dir, b.cfg.bin, "--agent", "script", "--script", scriptPath, "--data-dir", dataDir)
}

func (b *bench) floor(name string, args ...string) (*proc, error) {
	dir, err := b.runDir(name)
	if err != nil {
		return nil, err
	}
	return b.startProc(name, dir, filepath.Join(b.cfg.floors, name), args...)
}

// mapped waits for p's window and returns it with the time from exec.
func (b *bench) mapped(p *proc, mark int) (mapEvent, time.Duration, error) {
	ev, err := b.x.conn.waitMapped(mark, 60*time.Second)
	if err != nil {
		if aerr := p.alive(); aerr != nil {
			return mapEvent{}, 0, aerr
		}
		return mapEvent{}, 0, fmt.Errorf("%s: %w", p.name, err)
	}
	return ev, ev.at.Sub(p.started), nil
}

// ready starts a program, waits for its window, lets it settle, gives it
// the keyboard focus and parks the pointer outside it.
func (b *bench) ready(ctx context.Context, start func() (*proc, error)) (*proc, mapEvent, error) {
	mark := b.x.conn.mark()
	p, err := start()
	if err != nil {
		return nil, mapEvent{}, err
	}
	ev, _, err := b.mapped(p, mark)
	if err == nil {
		err = ctxtime.Sleep(ctx, b.cfg.settle)
	}
	if err == nil {
		err = b.x.conn.warp(1279, 799)
	}
	if err == nil {
		err = b.x.conn.focus(ev.window)
	}
	if err == nil {
		err = ctxtime.Sleep(ctx, 500*time.Millisecond)
	}
	if err == nil {
		err = p.alive()
	}
	if err != nil {
		p.stop()
		return nil, mapEvent{}, err
	}
	return p, ev, nil
}

// cpu is a measurement's CPU: the program's and the X server's ticks.
type cpu struct{ prog, xserver int64 }

// measure returns the CPU p and the X server use while f runs.
func (b *bench) measure(p *proc, f func() error) (cpu, error) {
	p0, err1 := procstat.Ticks(p.pid())
	x0, err2 := procstat.Ticks(b.x.cmd.Process.Pid)
	if err := joinErr(err1, err2); err != nil {
		return cpu{}, err
	}
	if err := f(); err != nil {
		return cpu{}, err
	}
	if err := p.alive(); err != nil {
		return cpu{}, err
	}
	p1, err1 := procstat.Ticks(p.pid())
	x1, err2 := procstat.Ticks(b.x.cmd.Process.Pid)
	if err := joinErr(err1, err2); err != nil {
		return cpu{}, err
	}
	return cpu{p1 - p0, x1 - x0}, nil
}

func joinErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// withPerf runs f while perf records p, when -perf is set.
func (b *bench) withPerf(p *proc, name string, d time.Duration, f func() error) error {
	if b.cfg.perf == "" {
		return f()
	}
	if err := os.MkdirAll(b.cfg.perf, 0o755); err != nil {
		return err
	}
	out := filepath.Join(b.cfg.perf, name+".perf.data")
	cmd := exec.Command("perf", "record", "-F", "499", "-g", "-p", fmt.Sprint(p.pid()), "-o", out, "--", "sleep", fmt.Sprint(d.Seconds()))
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("perf: %w", err)
	}
	err := f()
	if werr := cmd.Wait(); werr != nil && err == nil {
		fmt.Printf("  perf record: %v\n", werr)
	}
	return err
}

// ---- the measurements ----

// startPair times exec to mapped window for floor-minimal and pilotdesk,
// startSamples times each in alternation, one right after the other; a
// run's ratio is the median of each pair's ratio, as one start is about a
// hundred milliseconds at the mercy of the scheduler and of whatever else
// the machine runs, which changes less within a pair than over a run.
func (b *bench) startPair(ctx context.Context, rep *report, pdFirst bool) error {
	var pds, fls []float64
	// The CPU each had used when its window was mapped (all its threads,
	// in ticks): less at the mercy of the machine's load than the time.
	var pdCPU, flCPU []float64
	one := func(isPD bool) error {
		mark := b.x.conn.mark()
		var p *proc
		var err error
		if isPD {
			p, err = b.pilotdesk("start-pilotdesk", b.streamJSON, "")
		} else {
			p, err = b.floor("floor-minimal")
		}
		if err != nil {
			return err
		}
		defer p.stop()
		_, d, err := b.mapped(p, mark)
		if err != nil {
			return err
		}
		used, err := procstat.Ticks(p.pid())
		if err != nil {
			return err
		}
		if isPD {
			pds = append(pds, float64(d.Milliseconds()))
			pdCPU = append(pdCPU, float64(used))
		} else {
			fls = append(fls, float64(d.Milliseconds()))
			flCPU = append(flCPU, float64(used))
		}
		// Let it finish starting, so that stopping it is the usual stop.
		return ctxtime.Sleep(ctx, 500*time.Millisecond)
	}
	for i := range startSamples {
		if err := pair(pdFirst != (i%2 == 1), one); err != nil {
			return err
		}
	}
	var ratios []float64
	for i := range pds {
		ratios = append(ratios, ratio(pds[i], fls[i]))
	}
	res := result{pd: median(pds), floor: median(fls), paired: median(ratios)}
	fmt.Printf("  start to mapped window (medians of %d): pilotdesk %.0f ms, floor-minimal %.0f ms; ratio of each pair, median: %.2f× (CPU by then: %.1f / %.1f ticks, mean)\n",
		startSamples, res.pd, res.floor, res.ratio(), mean(pdCPU), mean(flCPU))
	rep.start = append(rep.start, res)
	return nil
}

const startSamples = 15

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// idlePair measures CPU over cfg.idle with the composer (the entry)
// focused and nothing happening.
func (b *bench) idlePair(ctx context.Context, rep *report, run int, pdFirst bool) error {
	start := func(isPD bool) (*proc, error) {
		if isPD {
			return b.pilotdesk("idle-pilotdesk", b.streamJSON, "")
		}
		return b.floor("floor-idle")
	}
	wait := func() error { return ctxtime.Sleep(ctx, b.cfg.idle) }
	res, err := b.cpuPair(ctx, pdFirst, fmt.Sprintf("idle-%d", run), b.cfg.idle, start, wait)
	if err != nil {
		return err
	}
	fmt.Printf("  idle %s, composer focused: pilotdesk %.0f ticks, floor-idle %.0f ticks: %.2f× (frames %d / %d; X server %d / %d; RSS %.0f / %.0f MiB)\n",
		b.cfg.idle, res.pd, res.floor, ratio(res.pd, res.floor), res.pdFrames, res.floorFrames, res.pdX, res.floorX, res.pdRSS, res.floorRSS)
	rep.idle = append(rep.idle, res)
	return nil
}

// streamPair types a prompt and measures CPU while the reply streams.
func (b *bench) streamPair(ctx context.Context, rep *report, run int, pdFirst bool) error {
	window := b.streamWindow()
	start := func(isPD bool) (*proc, error) {
		if isPD {
			return b.pilotdesk("stream-pilotdesk", b.streamJSON, "")
		}
		return b.floor("floor-naive", "-tokens", b.tokensFile, "-rate", fmt.Sprint(b.cfg.rate))
	}
	// The measurement starts before the prompt is typed, so typing
	// costs both the same.
	streamOnce := func() error {
		t0 := time.Now()
		if err := b.x.xdotool("type", "--delay", "20", "stream"); err != nil {
			return err
		}
		if err := b.x.xdotool("key", "Return"); err != nil {
			return err
		}
		return ctxtime.Sleep(ctx, window-time.Since(t0))
	}
	res, err := b.cpuPair(ctx, pdFirst, fmt.Sprintf("stream-%d", run), window, start, streamOnce)
	if err != nil {
		return err
	}
	fmt.Printf("  %d tokens at %d/s (%s window): pilotdesk %.0f ticks, floor-naive %.0f ticks: %.2f× (frames %d / %d; X server %d / %d; RSS %.0f / %.0f MiB)\n",
		b.cfg.tokens, b.cfg.rate, window, res.pd, res.floor, ratio(res.pd, res.floor), res.pdFrames, res.floorFrames, res.pdX, res.floorX, res.pdRSS, res.floorRSS)
	rep.stream = append(rep.stream, res)
	return nil
}

// cpuPair measures, for pilotdesk and its floor (pair's order), the CPU
// that each program started by start and the X server use while work runs
// (pilotdesk's under perf as perfName, for d), and each one's RSS after.
func (b *bench) cpuPair(ctx context.Context, pdFirst bool, perfName string, d time.Duration, start func(isPD bool) (*proc, error), work func() error) (result, error) {
	var res result
	one := func(isPD bool) error {
		p, ev, err := b.ready(ctx, func() (*proc, error) { return start(isPD) })
		if err != nil {
			return err
		}
		defer p.stop()
		// The frames it draws meanwhile, as the X server's DAMAGE events
		// tell them: a frame repaints the whole window, whatever changed.
		if err := b.x.conn.watchFrames(ev.window); err != nil {
			return err
		}
		mark := b.x.conn.frameMark()
		var c cpu
		if isPD {
			err = b.withPerf(p, perfName, d, func() error {
				c, err = b.measure(p, work)
				return err
			})
		} else {
			c, err = b.measure(p, work)
		}
		if err != nil {
			return err
		}
		frames := b.x.conn.frameMark() - mark
		rss, _, err := memory(p.pid())
		if err != nil {
			return err
		}
		if isPD {
			res.pd, res.pdX, res.pdRSS, res.pdFrames = float64(c.prog), c.xserver, rss, frames
		} else {
			res.floor, res.floorX, res.floorRSS, res.floorFrames = float64(c.prog), c.xserver, rss, frames
		}
		return nil
	}
	err := pair(pdFirst, one)
	return res, err
}

// pair runs one(true) for pilotdesk and one(false) for its floor, in the
// order given: runs alternate, so that a drift of the machine's speed
// does not favour one side.
func pair(pdFirst bool, one func(isPD bool) error) error {
	order := []bool{false, true}
	if pdFirst {
		order = []bool{true, false}
	}
	for _, isPD := range order {
		if err := one(isPD); err != nil {
			return err
		}
	}
	return nil
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// shortPrompt is the prompt of the short conversation stored after the
// long one (prepareHistory), which its script answers in one line.
const shortPrompt = "is the history kept?"

// words for the stored conversation's script.
func historyScript() script {
	reply := []step{
		{"delta": "You asked: {{prompt}}. I read the code around it first, and here is what I would change and why, in the order I would do it.\n\n"},
		{"delta": "1. Split the parser's state machine so that fenced blocks are found before inline markup.\n"},
		{"delta": "2. Measure each finished block once and keep its height.\n3. Re-parse only the block that is still growing.\n\n"},
		{"tool": map[string]any{"name": "bash", "arguments": map[string]any{"command": "go test ./conversation/ -run TestBlocks"}, "result": "ok  \tgithub.com/pilotdesk/pilotdesk/conversation\t0.041s"}},
		{"delta": "The tests pass. The change to the loop is small:\n\n```go\nfor _, b := range blocks {\n\tif b.done {\n\t\tcontinue\n\t}\n\tb.segs = parse(b.text)\n}\n```\n\n"},
		{"delta": "With that, a long reply costs the same per token at its end as at its start, and a `make bench` run shows it."},
	}
	short := scriptTurn{Match: shortPrompt, Steps: []step{{"delta": "Yes: the relay keeps every conversation."}}}
	return script{Turns: []scriptTurn{short, {Steps: reply}}}
}
