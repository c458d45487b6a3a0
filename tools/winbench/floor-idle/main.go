// Command floor-idle is the idle floor of the window benchmark
// (tools/winbench): a window of pilotdesk's size holding only a focused
// multi-line entry of the composer's size, at the bottom. Its CPU while
// nothing happens is what Fyne itself costs: the cursor's blink animation
// repaints the whole window a dozen times a second, and that cost grows with
// the window's area, so the floor has pilotdesk's size and pilotdesk's idle
// cost is compared with it.
package main

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/app"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"
)

func main() {
	a := app.NewWithID("io.github.pilotdesk.winbench.idle")
	w := a.NewWindow("winbench floor-idle")
	e := widget.NewMultiLineEntry()
	e.Wrapping = fyne.TextWrapWord
	e.SetMinRowsVisible(3)
	e.SetPlaceHolder("Ask the agent…")
	w.SetContent(container.NewBorder(nil, e, nil, nil))
	w.Resize(fyne.NewSize(1100, 720))
	w.Canvas().Focus(e)
	w.ShowAndRun()
}
