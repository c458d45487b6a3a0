package uitest

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
)

// Walk visits o and, where visit returns true, what it holds: a
// container's objects and a widget's renderer's, in order, depth first.
// visit decides what to skip (hidden objects, a list's lazily drawn rows).
func Walk(o fyne.CanvasObject, visit func(fyne.CanvasObject) bool) {
	if o == nil || !visit(o) {
		return
	}
	switch v := o.(type) {
	case *fyne.Container:
		for _, c := range v.Objects {
			Walk(c, visit)
		}
	case fyne.Widget:
		for _, c := range test.WidgetRenderer(v).Objects() {
			Walk(c, visit)
		}
	}
}
