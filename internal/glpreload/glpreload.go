// Package glpreload loads the system's OpenGL driver on a thread of its own
// while the window is being built, so that showing the window does not wait
// for it.
//
// On Linux, Mesa's GLX driver is a 25 MB library that brings LLVM (over
// 100 MB) with it. It is opened with dlopen(3) when the first OpenGL context
// is made, which Fyne does on the main thread once the window's content has
// been measured and before the window is mapped: tens of milliseconds of
// mapping and relocating, the largest part of a window's start that is not
// the app's own. Opened earlier on another thread, the same work overlaps
// the loading of fonts and the building of widgets; Mesa's loader then finds
// the library loaded (glibc knows a loaded object by its device and inode,
// so any of the hard links Mesa's one "megadriver" has, one for each GPU
// driver, is the same library).
//
// Where the display is served by another vendor's driver, or no Mesa driver
// is found, nothing is loaded; other systems have nothing to preload.
package glpreload
