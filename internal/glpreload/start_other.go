//go:build !linux || !cgo

package glpreload

import "log/slog"

// Start does nothing here: only Linux with cgo loads its OpenGL driver
// with dlopen(3) from a library directory this package can find.
func Start(*slog.Logger) (wait func()) { return func() {} }
