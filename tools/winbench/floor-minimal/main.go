// Command floor-minimal is the start-up floor of the window benchmark
// (tools/winbench): the least a Fyne window can be, one label in a window
// of pilotdesk's size. Its time from exec to a mapped window is what Fyne
// itself costs, so pilotdesk's start-up is compared with it.
package main

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/app"
	"fyne.io/fyne/v2/widget"
)

func main() {
	a := app.NewWithID("io.github.pilotdesk.winbench.minimal")
	w := a.NewWindow("winbench floor-minimal")
	w.SetContent(widget.NewLabel("Hello"))
	w.Resize(fyne.NewSize(1100, 720))
	w.ShowAndRun()
}
