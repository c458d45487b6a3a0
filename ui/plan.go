package ui

import (
	"context"
	"fmt"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/pilotdesk/pilotdesk/conversation"
	"github.com/pilotdesk/pilotdesk/protocol"
)

// planView is the card under a turn whose tool calls Plan denied: the
// steps the agent wanted to take, each ticked, and "Run in Act", which
// switches the conversation to Act and asks the agent to carry out exactly
// the ticked steps.
type planView struct {
	t     *transcript
	obj   *fyne.Container
	bg    cardBackground
	title *widget.Label
	steps *fyne.Container
	run   *rowButton
	row   int
	plan  []conversation.PlanStep
	// ticked is the card's state, kept by the transcript per plan so that
	// it survives the row being scrolled out and back.
	ticked []bool
	// ran is true once the plan was run in Act (Run in Act pressed here,
	// or its prompt in the conversation): the card is done, and cannot
	// run it twice by accident.
	ran bool
}

func newPlanView(t *transcript) *planView {
	v := &planView{t: t}
	v.bg = newCardBackground(amberCard)
	v.title = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	v.steps = container.NewVBox()
	v.run = t.newButton(conversation.RunInAct, theme.MediaPlayIcon(), v.runTicked)
	v.run.Importance = widget.HighImportance
	hint := smallNote(conversation.PlanCardHint)
	body := container.NewVBox(v.title, v.steps, container.NewBorder(nil, nil, nil, v.run, hint))
	v.obj = container.NewStack(v.bg.rect, container.NewPadded(body))
	return v
}

func (v *planView) set(row int, rows []conversation.Row) {
	v.bg.repaint()
	v.row = row
	v.plan = conversation.PlanSteps(rows, row)
	v.ticked = v.t.planTicks(rows[row].MessageID, len(v.plan))
	v.ran = v.t.ranPlans[rows[row].MessageID] || conversation.PlanRan(rows, row)
	v.title.SetText(conversation.PlanCardTitle(len(v.plan), v.ran))
	// The checkboxes are kept and changed, not made anew: the card is set
	// again whenever its turn's rows change, and a new checkbox would take
	// the keyboard from one that Tab reached.
	checks := v.steps.Objects
	for i, p := range v.plan {
		if i == len(checks) {
			checks = append(checks, v.t.newCheck("", func(on bool) {
				v.ticked[i] = on
				v.refreshRun()
			}))
		}
		c := checks[i].(*rowCheck)
		if v.ran != c.Disabled() {
			if v.ran {
				c.Disable()
			} else {
				c.Enable()
			}
		}
		if text := fmt.Sprintf("%d. %s", i+1, conversation.StepText(p)); c.Text != text || c.Checked != v.ticked[i] {
			c.Text, c.Checked = text, v.ticked[i] // not SetChecked: nothing changed the plan's ticks
			c.Refresh()
		}
	}
	if len(v.plan) != len(v.steps.Objects) {
		v.steps.Objects = checks[:len(v.plan)]
		v.steps.Refresh()
	}
	v.refreshRun()
	relayout(v.obj)
}

func (v *planView) refreshRun() {
	if v.ran {
		v.run.SetText(conversation.RanInAct)
		v.run.SetIcon(theme.ConfirmIcon())
		v.run.Disable()
		return
	}
	if v.run.Text != conversation.RunInAct {
		v.run.SetText(conversation.RunInAct)
		v.run.SetIcon(theme.MediaPlayIcon())
	}
	for _, on := range v.ticked {
		if on {
			v.run.Enable()
			return
		}
	}
	v.run.Disable()
}

func (v *planView) runTicked() {
	var chosen []conversation.PlanStep
	for i, p := range v.plan {
		if v.ticked[i] {
			chosen = append(chosen, p)
		}
	}
	if len(chosen) > 0 && !v.ran && v.t.win.runPlan(conversation.PlanPrompt(chosen)) {
		v.t.ranPlans[v.t.rows[v.row].MessageID] = true
		v.set(v.row, v.t.rows)
	}
}

// planTicks returns the ticks of the plan id (every step ticked at first).
func (t *transcript) planTicks(id string, n int) []bool {
	ticks, ok := t.ticks[id]
	if !ok || len(ticks) != n {
		ticks = make([]bool, n)
		for i := range ticks {
			ticks[i] = true
		}
		t.ticks[id] = ticks
	}
	return ticks
}

// planGivenBack makes the plan cards whose Run in Act prompt never ran
// (lost, or refused, and given back to the user) runnable again: a card
// stays done only for a prompt the conversation holds
// (conversation.PlanRan).
func (t *transcript) planGivenBack() {
	if len(t.ranPlans) == 0 {
		return
	}
	clear(t.ranPlans)
	t.ranGen++
	t.list.Refresh()
}

// runPlan switches the current conversation to Act and sends prompt, the
// chosen steps of its plan, and says whether it did: a turn that still
// runs keeps it from starting.
func (w *Window) runPlan(prompt string) bool {
	if w.view.Streaming {
		w.store.AddNote(w.current, conversation.NoteWarn, conversation.PlanBusy)
		return false
	}
	id, modelName := w.current, w.opts.Model
	w.mode.set(id, protocol.ModeAct)
	w.focusComposer()
	w.enqueue(func(ctx context.Context) {
		// A send carries the mode its turn runs in: Act, from now on.
		if err := w.client.Send(ctx, id, prompt, protocol.ModeAct, modelName); err != nil {
			w.store.AddNote(id, conversation.NoteError, "The plan was not sent: "+err.Error())
			w.onUI(w.transcript.planGivenBack)
		}
	})
	return true
}
