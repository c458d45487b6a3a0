package ui

import (
	"errors"
	"fmt"
	"image/color"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/pilotdesk/pilotdesk/client"
)

// statusBar is the bottom bar: the connection badge on the left, the usage
// of the current conversation on the right (model, premium requests and
// quota left per snapshot, cost multiplier, cache tokens, session totals).
type statusBar struct {
	dot    *canvas.Circle
	pill   *canvas.Rectangle
	conn   *canvas.Text
	notice *widget.Label
	usage  *tintedText
	totals *tintedText
	root   fyne.CanvasObject
	state  client.StateChange
	// What the totals line holds: the session's totals (or a hint), and
	// the relay's credit budget.
	totalsText  string
	budgetText  string
	budgetSpent bool
}

func newStatusBar() *statusBar {
	b := &statusBar{}
	p := colors(theme.Current())
	b.dot = canvas.NewCircle(p.reconnecting)
	b.pill = canvas.NewRectangle(p.reconnecting)
	b.pill.CornerRadius = 9
	b.conn = canvas.NewText("connecting…", theme.Color(theme.ColorNameForegroundOnPrimary))
	b.conn.TextStyle = fyne.TextStyle{Bold: true}
	b.conn.TextSize = theme.CaptionTextSize()
	b.notice = widget.NewLabel("")
	b.notice.SizeName = theme.SizeNameCaptionText
	b.notice.Importance = widget.DangerImportance
	b.notice.Truncation = fyne.TextTruncateEllipsis
	b.notice.Hide()
	b.usage = newTintedText(theme.SizeNameCaptionText, fyne.TextStyle{})
	b.usage.Truncation = fyne.TextTruncateEllipsis
	b.usage.set("No usage reported yet", colorNameHint)
	b.totals = newTintedText(theme.SizeNameCaptionText, fyne.TextStyle{})
	b.totals.Truncation = fyne.TextTruncateEllipsis
	dot := container.NewCenter(container.NewGridWrap(fyne.NewSize(8, 8), b.dot))
	// The badge is a coloured pill so that a dropped connection is seen.
	pillText := container.New(&pillLayout{}, dot, b.conn)
	badge := container.NewCenter(container.NewStack(b.pill, pillText))
	// The notice, when there is one, is a line of its own above the usage:
	// at the side of it, it was cut to "…".
	lines := container.New(&tightVBox{}, b.notice, b.usage, b.totals)
	bg := canvas.NewRectangle(theme.Color(theme.ColorNameHeaderBackground))
	row := container.NewBorder(nil, nil, container.NewPadded(badge), nil, container.NewBorder(nil, nil, nil, nil, lines))
	b.root = container.NewStack(bg, row)
	return b
}

// setConn shows the connection state.
func (b *statusBar) setConn(sc client.StateChange, now time.Time) {
	b.state = sc
	p := colors(theme.Current())
	var fill = p.offline
	switch sc.State {
	case client.StateLive:
		fill = p.live
		b.conn.Text = "live"
	case client.StateConnecting:
		fill = p.reconnecting
		b.conn.Text = "connecting…"
	case client.StateReconnecting:
		fill = p.reconnecting
		b.conn.Text = fmt.Sprintf("reconnecting… (attempt %d)", sc.Attempt+1)
	case client.StateOffline:
		b.conn.Text = "offline — retrying"
	case client.StateClosed:
		b.conn.Text = "disconnected"
		if errors.Is(sc.Err, client.ErrRevoked) {
			b.conn.Text = "token revoked"
		}
	default:
		b.conn.Text = "disconnected"
	}
	b.pill.FillColor = fill
	b.dot.FillColor = color.White
	b.conn.Color = color.White
	b.pill.Refresh()
	b.dot.Refresh()
	b.conn.Refresh()
	// The pill's width follows its text: lay the bar out again.
	if c, ok := b.root.(*fyne.Container); ok {
		c.Refresh()
	}
}

// setBudget shows the credit budget after the session totals; spent says
// new turns are refused, in the danger colour.
func (b *statusBar) setBudget(text string, spent bool) {
	b.budgetText, b.budgetSpent = text, spent
	b.showTotals()
}

func (b *statusBar) setNotice(text string) {
	if errors.Is(b.state.Err, client.ErrRevoked) {
		// The client stopped for good: nothing else matters more.
		text = "The relay closed the connection: this device's token was revoked or expired; ask for a new one."
	}
	if text == "" {
		b.notice.Hide()
		return
	}
	b.notice.SetText(text)
	b.notice.Show()
}

// setUsage shows a conversation's usage: its line and the session's
// totals (conversation.UsageText, TotalsText).
func (b *statusBar) setUsage(line, totals string, empty bool) {
	c := theme.ColorNameForeground
	if empty {
		c = colorNameHint
	}
	b.usage.set(line, c)
	b.totalsText = totals
	b.showTotals()
}

// showTotals draws the second line: the session's totals (or the hint
// that they come), then the budget, each in its own colour: a spent
// budget in the error colour, the hint beside it still a hint.
func (b *statusBar) showTotals() {
	totals := tint{b.totalsText, theme.ColorNameForeground}
	if totals.text == "" {
		totals = tint{"Session totals appear when the agent session ends", colorNameHint}
	}
	if b.budgetText == "" {
		b.totals.setParts(totals)
		return
	}
	budget := tint{"  ·  " + b.budgetText, theme.ColorNameForeground}
	if b.budgetSpent {
		budget.color = theme.ColorNameError
	}
	b.totals.setParts(totals, budget)
}

// pillLayout places a dot and a text side by side with padding around, the
// inside of the connection badge.
type pillLayout struct{}

func (pillLayout) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	dot, text := objs[0], objs[1]
	pad := float32(8)
	d := dot.MinSize()
	dot.Resize(d)
	dot.Move(fyne.NewPos(pad, (size.Height-d.Height)/2))
	t := text.MinSize()
	text.Resize(t)
	text.Move(fyne.NewPos(pad+d.Width+5, (size.Height-t.Height)/2))
}

func (pillLayout) MinSize(objs []fyne.CanvasObject) fyne.Size {
	d, t := objs[0].MinSize(), objs[1].MinSize()
	return fyne.NewSize(8+d.Width+5+t.Width+10, max(d.Height, t.Height)+6)
}

// tightVBox stacks objects with no padding and trims the labels' own
// vertical padding, for the two small lines of the usage bar.
type tightVBox struct{}

func (tightVBox) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	trim := theme.Padding()
	y := -trim / 2
	for _, o := range objs {
		if !o.Visible() {
			continue
		}
		h := o.MinSize().Height
		o.Move(fyne.NewPos(0, y))
		o.Resize(fyne.NewSize(size.Width, h))
		y += h - trim
	}
}

func (tightVBox) MinSize(objs []fyne.CanvasObject) fyne.Size {
	trim := theme.Padding()
	var w, h float32
	for _, o := range objs {
		if !o.Visible() {
			continue
		}
		m := o.MinSize()
		w = max(w, m.Width)
		h += m.Height - trim
	}
	return fyne.NewSize(w, h)
}
