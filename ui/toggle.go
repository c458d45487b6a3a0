package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// PlanActToggle is the segmented two-button control of a conversation's
// mode (docs/protocol.md, Modes): Plan and Act side by side, the active one
// filled. Act is the default.
type PlanActToggle struct {
	widget.BaseWidget
	// OnChanged is called when the user picks the other mode (not by
	// SetMode).
	OnChanged func(protocol.Mode)

	mode      protocol.Mode
	plan, act *widget.Button
	bg        *canvas.Rectangle
}

// NewPlanActToggle returns a toggle in Act mode.
func NewPlanActToggle(onChanged func(protocol.Mode)) *PlanActToggle {
	t := &PlanActToggle{OnChanged: onChanged, mode: protocol.ModeAct}
	t.plan = widget.NewButton("Plan", func() { t.pick(protocol.ModePlan) })
	t.act = widget.NewButton("Act", func() { t.pick(protocol.ModeAct) })
	t.bg = canvas.NewRectangle(theme.Color(theme.ColorNameInputBackground))
	t.bg.CornerRadius = theme.InputRadiusSize()
	t.ExtendBaseWidget(t)
	t.style()
	return t
}

// Mode returns the mode shown.
func (t *PlanActToggle) Mode() protocol.Mode { return t.mode }

// SetMode shows mode without calling OnChanged.
func (t *PlanActToggle) SetMode(mode protocol.Mode) {
	if !mode.Valid() || mode == t.mode {
		return
	}
	t.mode = mode
	t.style()
}

// Toggle switches to the other mode as a click would.
func (t *PlanActToggle) Toggle() {
	if t.mode == protocol.ModePlan {
		t.pick(protocol.ModeAct)
	} else {
		t.pick(protocol.ModePlan)
	}
}

func (t *PlanActToggle) pick(mode protocol.Mode) {
	if mode == t.mode {
		return
	}
	t.mode = mode
	t.style()
	if t.OnChanged != nil {
		t.OnChanged(mode)
	}
}

func (t *PlanActToggle) style() {
	if t.mode == protocol.ModePlan {
		t.plan.Importance = widget.WarningImportance
		t.act.Importance = widget.LowImportance
	} else {
		t.plan.Importance = widget.LowImportance
		t.act.Importance = widget.HighImportance
	}
	t.plan.Refresh()
	t.act.Refresh()
}

func (t *PlanActToggle) CreateRenderer() fyne.WidgetRenderer {
	return widget.NewSimpleRenderer(container.NewStack(t.bg, container.New(segmentLayout{}, t.plan, t.act)))
}

// Refresh follows theme changes.
func (t *PlanActToggle) Refresh() {
	t.bg.FillColor = theme.Color(theme.ColorNameInputBackground)
	t.bg.Refresh()
	t.BaseWidget.Refresh()
}

// segmentLayout puts its objects side by side, equally wide, with no gap.
type segmentLayout struct{}

func (segmentLayout) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	if len(objs) == 0 {
		return
	}
	w := size.Width / float32(len(objs))
	for i, o := range objs {
		o.Move(fyne.NewPos(float32(i)*w, 0))
		o.Resize(fyne.NewSize(w, size.Height))
	}
}

func (segmentLayout) MinSize(objs []fyne.CanvasObject) fyne.Size {
	var w, h float32
	for _, o := range objs {
		m := o.MinSize()
		w = max(w, m.Width)
		h = max(h, m.Height)
	}
	return fyne.NewSize(w*float32(len(objs)), h)
}

// PlanBannerText is the amber banner shown above the composer in plan mode.
const PlanBannerText = "Plan mode: the agent can read your request but every tool call is denied"

// modeSwitch is the composer's Plan/Act toggle with the plan banner above
// the composer, and the mode the user picked that the relay has not yet
// confirmed. A pick shows at once, although the relay may take a while
// to confirm it (or refuse it): until the conversation's own mode catches
// up, the switch shows the pick, so that a frame drawn meanwhile does not
// flip the toggle back. It belongs to the UI goroutine.
type modeSwitch struct {
	toggle     *PlanActToggle
	banner     fyne.CanvasObject
	bannerBg   cardBackground
	bannerText *widget.RichText
	// want is the mode the user picked and the relay has not confirmed
	// ("" when none), for the conversation wantConv.
	want     protocol.Mode
	wantConv string
}

// newModeSwitch builds the toggle, which calls onPick with the mode the
// user picks, and the banner, hidden.
func newModeSwitch(onPick func(protocol.Mode)) *modeSwitch {
	m := &modeSwitch{toggle: NewPlanActToggle(onPick)}
	m.bannerBg = newCardBackground(amberCard)
	// Wrapping text, so that a narrow window does not cut the banner, in
	// the banner's colour, which the app's theme names: it was a Label in
	// a theme override, and Fyne parses the faces of every style drawn in
	// an override again for it (the bold Noto and DejaVu faces, 4 MB of Go
	// heap kept from the first switch to Plan on). The segment is the one
	// a bold Label makes, but for its colour, which the icon takes too.
	m.bannerText = widget.NewRichText(&widget.TextSegment{Text: PlanBannerText, Style: widget.RichTextStyle{
		ColorName: colorNameBanner, Inline: true, TextStyle: fyne.TextStyle{Bold: true}, SizeName: theme.SizeNameText,
	}})
	m.bannerText.Wrapping = fyne.TextWrapWord
	warn := widget.NewIcon(theme.NewColoredResource(theme.WarningIcon(), colorNameBanner))
	m.banner = container.NewStack(m.bannerBg.rect, container.NewBorder(nil, nil, container.NewPadded(warn), nil, m.bannerText))
	m.banner.Hide()
	return m
}

// picked notes the mode the user picked for conv, and shows its banner
// before the relay confirms it.
func (m *modeSwitch) picked(conv string, mode protocol.Mode) {
	m.want, m.wantConv = mode, conv
	m.showBanner(mode == protocol.ModePlan)
}

// set shows mode for conv at once, as the user's pick (Run in Act).
func (m *modeSwitch) set(conv string, mode protocol.Mode) {
	m.want, m.wantConv = mode, conv
	m.toggle.SetMode(mode)
	m.showBanner(mode == protocol.ModePlan)
}

// refused forgets the pick for conv: the relay did not take it.
func (m *modeSwitch) refused(conv string) {
	if m.wantConv == conv {
		m.want = ""
	}
}

// forget drops any pick (another conversation, another relay).
func (m *modeSwitch) forget() { m.want = "" }

// shown is the mode shown: the pick, else the conversation's mode (have),
// else Act.
func (m *modeSwitch) shown(have protocol.Mode) protocol.Mode {
	if m.want != "" {
		return m.want
	}
	if have.Valid() {
		return have
	}
	return protocol.ModeAct
}

// show draws the mode of conv, whose mode on the relay is have: the pick
// is over once the relay confirms it, or once another conversation shows.
func (m *modeSwitch) show(conv string, have protocol.Mode) {
	if m.want != "" && (m.wantConv != conv || have == m.want) {
		m.want = ""
	}
	mode := m.shown(have)
	m.toggle.SetMode(mode)
	m.showBanner(mode == protocol.ModePlan)
}

func (m *modeSwitch) showBanner(on bool) {
	if on == m.banner.Visible() {
		return
	}
	if on {
		m.bannerBg.repaint()
		m.banner.Show()
	} else {
		m.banner.Hide()
	}
}
