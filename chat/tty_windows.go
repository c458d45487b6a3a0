//go:build windows

package chat

import "golang.org/x/sys/windows"

// enableVT turns on the console's processing of escape sequences for fd
// (colours, cursor moves), which Windows Terminal has by default and the
// classic console only when asked; false when the console refuses (before
// Windows 10), and the REPL then prints plain lines.
func enableVT(fd int) bool {
	h := windows.Handle(fd)
	var mode uint32
	if err := windows.GetConsoleMode(h, &mode); err != nil {
		return false
	}
	if mode&windows.ENABLE_VIRTUAL_TERMINAL_PROCESSING != 0 {
		return true
	}
	return windows.SetConsoleMode(h, mode|windows.ENABLE_VIRTUAL_TERMINAL_PROCESSING) == nil
}
