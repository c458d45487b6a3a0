package ui

import (
	"bytes"
	"flag"
	"image"
	"image/png"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay"
	"github.com/pilotdesk/pilotdesk/settings"
	"github.com/pilotdesk/pilotdesk/ui/uitest"
)

// -update rewrites the screenshots in ../screenshots and the goldens in
// testdata/golden. Without it the key states are compared to the goldens.
var update = flag.Bool("update", false, "write screenshots/*.png and ui/testdata/golden/*.png")

// goldenStates are the states whose pictures are kept as goldens.
var goldenStates = map[string]bool{
	"light-empty":              true,
	"light-streaming":          true,
	"light-plan-banner":        true,
	"light-modal-approval":     true,
	"light-modal-choice":       true,
	"light-modal-text":         true,
	"light-rejected":           true,
	"dark-streaming":           true,
	"light-settings":           true,
	"light-first-run":          true,
	"light-first-run-compact":  true,
	"light-markdown":           true,
	"light-identifiers":        true,
	"light-links":              true,
	"dark-markdown":            true,
	"light-tool-rows":          true,
	"light-minimum-size":       true,
	"light-plan-card":          true,
	"light-usage-credits":      true,
	"dark-tool-rows":           true,
	"light-about":              true,
	"light-usage":              true,
	"dark-usage":               true,
	"light-reconnecting":       true,
	"light-budget-spent":       true,
	"light-share-fits":         true,
	"light-acp-reasoning-plan": true,
	"dark-acp-reasoning-plan":  true,
}

type shooter struct {
	t       *testing.T
	variant string
}

// shot captures the window and writes or checks the picture.
func (s *shooter) shot(h *harness, name string) {
	s.t.Helper()
	full := s.variant + "-" + name
	if h.w.status.state.State == client.StateLive {
		h.waitAgents()
	}
	h.frame()
	// The test canvas does not re-run layouts by itself as the real driver
	// does each frame: refresh once so that shown/hidden parts settle.
	h.w.Window().Content().Refresh()
	for _, o := range h.w.Window().Canvas().Overlays().List() {
		o.Refresh()
	}
	if !*update && !goldenStates[full] {
		// Painting the canvas in software under -race takes seconds; a
		// picture neither kept nor compared is not painted. The state
		// itself was reached (the waits above), and -update paints all.
		return
	}
	// The composer's cursor solid, its blink over: a picture taken in a
	// dimmed step of it would differ by chance.
	h.w.composer.blinkUntil = time.Time{}
	if c := h.w.composer.ownCursor(); c != nil {
		h.w.composer.showCursor(c, false)
	}
	img := h.w.Window().Canvas().Capture()
	if *update {
		writePNG(s.t, filepath.Join("..", "screenshots", full+".png"), img)
		if goldenStates[full] {
			writePNG(s.t, filepath.Join("testdata", "golden", full+".png"), img)
		}
		return
	}
	if goldenStates[full] {
		compareGolden(s.t, full, img)
	}
}

// waitAgents waits for the relay's list notices that name each
// conversation's agent and folder, which may come after the turn's end:
// without them the sidebar's second lines would differ from one run to
// the next.
func (h *harness) waitAgents() {
	h.t.Helper()
	h.waitFor("the agents and folders in the list", func() bool {
		for _, e := range h.w.sidebar.entries {
			if (e.Agent == "" || e.Folder == "") && h.w.store.OnRelay(e.ID) {
				return false
			}
		}
		return true
	})
}

// compareGolden compares img with testdata/golden/name.png pixel by pixel;
// on a difference it writes the picture to testdata/failed/name.png.
func compareGolden(t *testing.T, name string, img image.Image) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "golden", name+".png"))
	if err != nil {
		t.Errorf("golden %s: %v (run with -args -update to write it)", name, err)
		return
	}
	defer f.Close()
	want, err := png.Decode(f)
	if err != nil {
		t.Fatalf("golden %s: %v", name, err)
	}
	if want.Bounds() != img.Bounds() {
		t.Errorf("golden %s: size %v, got %v", name, want.Bounds(), img.Bounds())
		return
	}
	diff, box := 0, image.Rectangle{}
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			r1, g1, b1, a1 := want.At(x, y).RGBA()
			r2, g2, b2, a2 := img.At(x, y).RGBA()
			if r1 != r2 || g1 != g2 || b1 != b2 || a1 != a2 {
				diff++
				box = box.Union(image.Rect(x, y, x+1, y+1))
			}
		}
	}
	if diff > 0 {
		out := filepath.Join("testdata", "failed", name+".png")
		writePNG(t, out, img)
		t.Errorf("golden %s: %d pixels differ in %v; the picture is in %s", name, diff, box, out)
	}
}

func writePNG(t *testing.T, path string, img image.Image) {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestScreenshots drives the window through every state the brief names
// and captures each: `go test ./ui -run TestScreenshots -args -update`
// writes them to screenshots/.
func TestScreenshots(t *testing.T) {
	for _, v := range []struct {
		name    string
		variant fyne.ThemeVariant
		all     bool
	}{
		{"light", theme.VariantLight, true},
		{"dark", theme.VariantDark, false},
	} {
		t.Run(v.name, func(t *testing.T) {
			s := &shooter{t: t, variant: v.name}
			th := FixedVariant(theme.DefaultTheme(), v.variant)
			newH := func() *harness {
				return newHarness(t, harnessConfig{theme: th, fakeClock: true, size: fyne.NewSize(1100, 720)})
			}

			if v.all {
				shootAppDialogs(t, s, th)

				h := newH()
				s.shot(h, "empty")

				h.send("wait for it")
				h.waitFor("thinking", func() bool { return h.w.view.Thinking })
				s.shot(h, "thinking")
			}

			if v.all {
				// The smallest the window gets.
				h := newHarness(t, harnessConfig{theme: th, fakeClock: true, size: minWindowSize})
				h.send("use the tool")
				h.waitFor("the tool turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
				s.shot(h, "minimum-size")

				// A plan turn's card, one step unticked.
				h = newH()
				test.Tap(h.w.mode.toggle.plan)
				h.send("do the work")
				h.waitFor("the plan card", func() bool { return h.lastRow(conversation.RowPlan).Kind == conversation.RowPlan })
				h.frame()
				p := h.shownPlan(len(h.rows()) - 1)
				test.Tap(p.steps.Objects[0].(fyne.Tappable))
				h.w.transcript.scrollToBottom()
				s.shot(h, "plan-card")

				// Usage in credits, with the quota's pace.
				h = newH()
				h.send("credits")
				h.waitFor("the credits turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
				s.shot(h, "usage-credits")

				// The credit budget spent: Send disabled, the bar says why.
				h = newHarness(t, harnessConfig{theme: th, fakeClock: true, size: fyne.NewSize(1100, 720), relay: relay.Config{BudgetCredits: 10}})
				h.send("expensive")
				h.waitFor("the first turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
				h.send("expensive again")
				h.waitFor("the budget spent", func() bool {
					return h.w.budget.spent() && h.hasStatus(protocol.StatusCompleted)
				})
				s.shot(h, "budget-spent")
			}

			// The work a turn did: a shell row and an edit row, expanded.
			h := newH()
			h.send("do the work")
			h.waitFor("the work turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
			for _, i := range rowsOf(h, conversation.RowTool) {
				test.Tap(h.shownTool(i).expand)
				h.frame()
			}
			h.w.transcript.scrollToBottom()
			s.shot(h, "tool-rows")

			// What agents write: a numbered and a nested task list, a quote, a
			// table and highlighted code.
			h = newH()
			h.send("formatting")
			h.waitFor("the formatting turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
			s.shot(h, "markdown")

			// Identifiers with underscores, in plain text, bold and code,
			// each one unbroken word where the lines wrap.
			h = newHarness(t, harnessConfig{theme: th, fakeClock: true, size: fyne.NewSize(860, 560)})
			h.send("identifiers")
			h.waitFor("the identifiers turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
			s.shot(h, "identifiers")

			// Long links (a bare URL, a link labelled with a sentence, one in
			// a list) wrap as text does; then the pointer over one.
			h = newHarness(t, harnessConfig{theme: th, fakeClock: true, size: fyne.NewSize(860, 560)})
			h.send("long links")
			h.waitFor("the long links turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
			s.shot(h, "links")
			if v.all {
				hoverLink(t, h.w.Window(), "https://docs.fyne.io/widget/richtext?topic=wrapping&version=2.7")
				s.shot(h, "links-hover")
				// Tab to the same link: its pieces on both lines outlined.
				test.MoveMouse(h.w.Window().Canvas(), fyne.NewPos(1, 1))
				focusLink(t, h.w.Window(), "https://docs.fyne.io/widget/richtext?topic=wrapping&version=2.7")
				s.shot(h, "links-focus")
			}

			h = newH()
			h.send("show me markdown")
			h.waitFor("the turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
			h.send("use the tool")
			h.waitFor("the tool turn", func() bool { return len(h.rows()) > 8 && h.hasStatus(protocol.StatusCompleted) })
			s.shot(h, "usage")
			h.send("stream a reply")
			h.waitFor("the streamed code", func() bool { return h.lastCode() == "make test" })
			s.shot(h, "streaming")

			h = newH()
			test.Tap(h.w.mode.toggle.plan)
			h.send("use the tool")
			h.waitFor("the turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
			s.shot(h, "plan-banner")
			if !v.all {
				h.send("approve the migration")
				h.waitModal(kindApproval)
				h.clock.advance(72 * time.Second)
				s.shot(h, "modal-approval")
				return
			}

			h = newH()
			h.send("approve the migration")
			h.waitModal(kindApproval)
			h.clock.advance(72 * time.Second)
			s.shot(h, "modal-approval")
			h.typeRunes("x")
			s.shot(h, "modal-approval-hint")
			h.typeRunes("r")
			h.waitFor("the rejection", func() bool { return h.hasStatus(protocol.StatusRejected) })
			s.shot(h, "rejected")

			h = newH()
			h.send("choose an environment")
			h.waitModal(kindChoice)
			h.key(fyne.KeyDown)
			h.key(fyne.KeyDown)
			s.shot(h, "modal-choice")

			h = newH()
			h.send("text please")
			h.waitModal(kindText)
			h.key(fyne.KeyReturn)
			s.shot(h, "modal-text")

			h = newH()
			h.send("ask me")
			h.waitModal(kindAsk)
			s.shot(h, "modal-ask")

			// Waiting: the question belongs to a conversation not shown.
			first := h.w.current
			h.w.newConversation()
			h.clock.advance(95 * time.Second)
			h.frame()
			s.shot(h, "waiting-list")
			h.w.switchTo(first)
			h.waitModal(kindAsk)
			h.w.modal.hide() // show the strip behind the modal without the modal
			s.shot(h, "waiting-indicator")

			// A backoff of a minute holds the first attempt on screen: with
			// the harness's 20 ms the pill's attempt count went on rising
			// while the picture was taken.
			h = newHarness(t, harnessConfig{theme: th, fakeClock: true, size: fyne.NewSize(1100, 720), minBackoff: time.Minute})
			h.send("show me markdown")
			h.waitFor("the turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
			h.waitAgents()
			h.proxy.SetRefuse(true)
			h.proxy.DropAll()
			h.waitFor("reconnecting", func() bool { return h.w.status.state.State == client.StateReconnecting })
			if a := h.w.status.state.Attempt; a != 0 {
				t.Fatalf("reconnecting after %d failed attempts, want the first", a)
			}
			s.shot(h, "reconnecting")
		})
	}
}

// shootAppDialogs captures the first-run notice, the Settings dialog, the
// About dialog, and the notice once a prompt was sent.
func shootAppDialogs(t *testing.T, s *shooter, th fyne.Theme) {
	h := newHarness(t, harnessConfig{theme: th, fakeClock: true, size: fyne.NewSize(1100, 720), options: Options{
		Version:    "0.1.0",
		Agent:      "script",
		DemoReason: "No GitHub Copilot CLI was found on this computer.",
		Restart:    func(done func(error)) { done(nil) },
	}})
	s.shot(h, "first-run")

	// Settings as a user who set a model and a provider key sees them,
	// with two ACP agents on PATH (and only those: the picture must not
	// depend on the machine's).
	bin := t.TempDir()
	for _, prog := range []string{"opencode", "goose"} {
		if err := os.WriteFile(filepath.Join(bin, prog), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin)
	saved := settings.Defaults()
	saved.Model = "gpt-5"
	saved.ProviderKey = "sk-example"
	settings.Save(h.app.Preferences(), saved)
	h.w.ShowSettings()
	h.w.Window().Canvas().Unfocus() // no blinking cursor in the picture
	s.shot(h, "settings")
	// The messages in red make the groups taller than a 720 px window:
	// the picture of them is taken in a taller one, with nothing scrolled
	// out of sight. The test canvas's painter clips the text of an entry
	// to the entry alone, not to the scroll around it, so an entry
	// scrolled out of sight would still show its text in the picture.
	h.w.Window().Resize(fyne.NewSize(1100, 860))
	h.w.settings.entry(settings.FieldWorkDir).SetText("/no/such/folder")
	h.w.settings.selectEntry(settings.FieldInputTimeout).SetText("soon")
	test.Tap(h.w.settings.apply)
	// The groups as tall as they need: twice, as a message wraps at the
	// width it was last laid out to.
	for range 2 {
		h.frame()
		h.w.settings.scroll.SetMinSize(fyne.NewSize(settingsWidth, h.w.settings.body.MinSize().Height))
		h.w.settings.dlg.Resize(h.w.settings.dlg.MinSize())
	}
	h.w.Window().Canvas().Unfocus()
	s.shot(h, "settings-invalid")
	h.w.settings.close()
	h.w.Window().Resize(fyne.NewSize(1100, 720))

	// The dialog names the relay the client dialled; the test relay's port
	// is random, so the picture shows it as a fixed one of the same width
	// (ports given out by the system have five digits).
	h.w.ShowAbout()
	relayLine := findLabel(t, h.w.Window().Canvas().Overlays().Top(), "embedded in this app, "+h.w.clientURL())
	u, err := url.Parse(h.w.clientURL())
	if err != nil {
		t.Fatal(err)
	}
	u.Host = "127.0.0.1:40000"
	relayLine.SetText("embedded in this app, " + u.String())
	s.shot(h, "about")
	h.w.about.Hide()

	// A prompt to the demo turns its notice into one line.
	h.send("help")
	h.waitFor("the help turn", func() bool { return h.hasStatus(protocol.StatusCompleted) })
	h.w.Window().Canvas().Unfocus()
	s.shot(h, "first-run-compact")
}

// findLabel returns the label under o that reads text, failing the test
// when there is none.
func findLabel(t *testing.T, o fyne.CanvasObject, text string) *widget.Label {
	t.Helper()
	var found *widget.Label
	uitest.Walk(o, func(o fyne.CanvasObject) bool {
		l, ok := o.(*widget.Label)
		if ok && l.Text == text {
			found = l
		}
		return !ok
	})
	if found == nil {
		t.Fatalf("no label reads %q", text)
	}
	return found
}
