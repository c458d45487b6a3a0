// Command floor-naive is the streaming floor of the window benchmark
// (tools/winbench): the naive chat window pilotdesk's transcript must beat.
// One markdown RichText holds the whole reply; every token re-parses all of
// it (ParseMarkdown) and scrolls to the bottom, on the UI goroutine through
// fyne.Do. Pressing Enter in the entry below starts the reply: the tokens of
// -tokens (a JSON array of strings), at -rate tokens a second, the same
// tokens the benchmark's scripted agent streams to pilotdesk. With -fill N
// it shows the reply N times over at once, scrolled to the bottom, and is
// the floor of scrolling a long conversation.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/app"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"
)

func main() {
	tokensFile := flag.String("tokens", "", "the reply's tokens to stream (a JSON array of strings)")
	rate := flag.Int("rate", 50, "tokens per second")
	fill := flag.Int("fill", 0, "show the reply N times at once, scrolled to the bottom, and stream nothing (the floor of scrolling)")
	flag.Parse()
	var tokens []string
	b, err := os.ReadFile(*tokensFile)
	if err == nil {
		err = json.Unmarshal(b, &tokens)
	}
	if err != nil || *rate <= 0 {
		fmt.Fprintln(os.Stderr, "floor-naive: need -tokens FILE (a JSON array of strings) and a positive -rate:", err)
		os.Exit(2)
	}

	a := app.NewWithID("io.github.pilotdesk.winbench.naive")
	w := a.NewWindow("winbench floor-naive")
	rt := widget.NewRichText()
	rt.Wrapping = fyne.TextWrapWord
	scroll := container.NewVScroll(rt)
	entry := newEnterEntry()
	started := false
	entry.onEnter = func() {
		if started {
			return
		}
		started = true
		entry.SetText("")
		go stream(tokens, *rate, rt, scroll)
	}
	if *fill > 0 {
		started = true
		var all strings.Builder
		for range *fill {
			all.WriteString(strings.Join(tokens, ""))
		}
		rt.ParseMarkdown(all.String())
	}
	w.SetContent(container.NewBorder(nil, entry, nil, nil, scroll))
	w.Resize(fyne.NewSize(1100, 720))
	if *fill > 0 {
		scroll.ScrollToBottom()
	}
	w.Canvas().Focus(entry)
	w.ShowAndRun()
}

// stream appends one token per tick and redraws the whole reply each time.
func stream(tokens []string, rate int, rt *widget.RichText, scroll *container.Scroll) {
	t := time.NewTicker(time.Second / time.Duration(rate))
	defer t.Stop()
	text := ""
	for _, tok := range tokens {
		<-t.C
		text += tok
		md := text
		fyne.Do(func() {
			rt.ParseMarkdown(md)
			scroll.ScrollToBottom()
		})
	}
}

// enterEntry is a multi-line entry whose Enter starts the reply, like
// pilotdesk's composer.
type enterEntry struct {
	widget.Entry
	onEnter func()
}

func newEnterEntry() *enterEntry {
	e := &enterEntry{}
	e.MultiLine = true
	e.Wrapping = fyne.TextWrapWord
	e.SetMinRowsVisible(3)
	e.ExtendBaseWidget(e)
	return e
}

func (e *enterEntry) TypedKey(k *fyne.KeyEvent) {
	if k.Name == fyne.KeyReturn || k.Name == fyne.KeyEnter {
		e.onEnter()
		return
	}
	e.Entry.TypedKey(k)
}
