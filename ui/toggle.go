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
