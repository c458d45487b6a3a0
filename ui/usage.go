package ui

import (
	"fmt"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/pilotdesk/pilotdesk/client"
	"github.com/pilotdesk/pilotdesk/ui/model"
)

// statusBar is the bottom bar: the connection badge on the left, the usage
// of the current conversation on the right (model, premium requests and
// quota left per snapshot, cost multiplier, cache tokens, session totals).
type statusBar struct {
	dot    *canvas.Circle
	conn   *widget.Label
	notice *widget.Label
	usage  *widget.Label
	totals *widget.Label
	root   fyne.CanvasObject
	state  client.StateChange
}

func newStatusBar() *statusBar {
	b := &statusBar{}
	b.dot = canvas.NewCircle(colors(theme.Current()).reconnecting)
	b.conn = widget.NewLabel("connecting…")
	b.conn.SizeName = theme.SizeNameCaptionText
	b.notice = widget.NewLabel("")
	b.notice.SizeName = theme.SizeNameCaptionText
	b.notice.Importance = widget.DangerImportance
	b.notice.Truncation = fyne.TextTruncateEllipsis
	b.notice.Hide()
	b.usage = widget.NewLabel("No usage reported yet")
	b.usage.SizeName = theme.SizeNameCaptionText
	b.usage.Importance = widget.LowImportance
	b.usage.Truncation = fyne.TextTruncateEllipsis
	b.totals = widget.NewLabel("")
	b.totals.SizeName = theme.SizeNameCaptionText
	b.totals.Truncation = fyne.TextTruncateEllipsis
	b.totals.Importance = widget.LowImportance
	dot := container.NewCenter(container.NewGridWrap(fyne.NewSize(10, 10), b.dot))
	badge := container.NewHBox(dot, b.conn)
	right := container.NewVBox(b.usage, b.totals)
	bg := canvas.NewRectangle(theme.Color(theme.ColorNameHeaderBackground))
	b.root = container.NewStack(bg, container.NewBorder(nil, nil, badge, nil, container.NewBorder(nil, nil, b.notice, nil, right)))
	return b
}

// setConn shows the connection state.
func (b *statusBar) setConn(sc client.StateChange, now time.Time) {
	b.state = sc
	p := colors(theme.Current())
	switch sc.State {
	case client.StateLive:
		b.dot.FillColor = p.live
		b.conn.SetText("live")
	case client.StateConnecting:
		b.dot.FillColor = p.reconnecting
		b.conn.SetText("connecting…")
	case client.StateReconnecting:
		b.dot.FillColor = p.reconnecting
		b.conn.SetText(fmt.Sprintf("reconnecting… (attempt %d)", sc.Attempt+1))
	case client.StateOffline:
		b.dot.FillColor = p.offline
		b.conn.SetText("offline — retrying")
	default:
		b.dot.FillColor = p.offline
		b.conn.SetText("disconnected")
	}
	b.dot.Refresh()
}

func (b *statusBar) setNotice(text string) {
	if text == "" {
		b.notice.Hide()
		return
	}
	b.notice.SetText(text)
	b.notice.Show()
}

// setUsage shows a conversation's usage.
func (b *statusBar) setUsage(u model.Usage) {
	b.usage.SetText(usageLine(u))
	if u.Empty() {
		b.usage.Importance = widget.LowImportance
	} else {
		b.usage.Importance = widget.MediumImportance
	}
	b.usage.Refresh()
	if t := totalsLine(u); t != "" {
		b.totals.Importance = widget.MediumImportance
		b.totals.SetText(t)
	} else {
		b.totals.Importance = widget.LowImportance
		b.totals.SetText("Session totals appear when the agent session ends")
	}
}

// usageLine is the usage bar's first line.
func usageLine(u model.Usage) string {
	if u.Empty() {
		return "No usage reported yet"
	}
	var parts []string
	if u.Model != "" {
		parts = append(parts, "Model "+u.Model)
	}
	for _, q := range u.Quotas {
		name := strings.ReplaceAll(q.Name, "_", " ")
		switch {
		case q.Unlimited:
			parts = append(parts, name+": unlimited")
		case q.Entitlement > 0:
			s := fmt.Sprintf("%s: %s of %s used", name, num(q.Used), num(q.Entitlement))
			if q.HasRemaining {
				s += fmt.Sprintf(", %s%% left", num(q.RemainingPercent))
			}
			parts = append(parts, s)
		case q.HasRemaining:
			parts = append(parts, fmt.Sprintf("%s: %s%% left", name, num(q.RemainingPercent)))
		}
	}
	if u.Cost != nil {
		parts = append(parts, "×"+num(*u.Cost)+" premium per request")
	}
	if u.CacheReadTokens != nil || u.CacheWriteTokens != nil {
		var r, w int64
		if u.CacheReadTokens != nil {
			r = *u.CacheReadTokens
		}
		if u.CacheWriteTokens != nil {
			w = *u.CacheWriteTokens
		}
		parts = append(parts, fmt.Sprintf("cache %s read / %s written", tokens(r), tokens(w)))
	}
	return strings.Join(parts, "  ·  ")
}

// totalsLine is the session totals from copilot:shutdown.
func totalsLine(u model.Usage) string {
	if !u.HaveTotals {
		return ""
	}
	s := "Session total: " + plural(u.TotalPremiumRequests, "premium request")
	for _, m := range u.Models {
		s += fmt.Sprintf("  ·  %s: %s, %s tokens in / %s out", m.Model, plural(m.Requests, "request"), tokens(m.InputTokens), tokens(m.OutputTokens))
	}
	return s
}

func plural(n float64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return num(n) + " " + what + "s"
}

func num(f float64) string {
	if f == float64(int64(f)) {
		return fmt.Sprintf("%d", int64(f))
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", f), "0"), ".")
}

func tokens(n int64) string {
	if n >= 10000 {
		return fmt.Sprintf("%.1fk", float64(n)/1000)
	}
	return fmt.Sprintf("%d", n)
}
