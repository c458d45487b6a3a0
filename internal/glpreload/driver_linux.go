package glpreload

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// mesaDriver is the file name of the Mesa driver to preload. Mesa builds its
// GLX drivers as one library with a hard link per driver, and the software
// one, swrast, is part of every build: loading it loads the driver of
// whatever GPU (or none) the display has.
const mesaDriver = "swrast_dri.so"

// EnvOff is the environment variable that, set to "off", turns the preload
// off: for a display whose driver is neither Mesa's nor NVIDIA's (which
// this package cannot tell from Mesa's), where loading Mesa is memory for
// nothing, and to compare a start with and without it.
const EnvOff = "PILOTDESK_GL_PRELOAD"

// driverPath is the Mesa driver to preload, or "" when there is none to
// preload. maps is the process's memory map (/proc/self/maps): the
// directory of the loaded libGL (or, before it is loaded, of the C
// library) is the system's library directory, whose dri/ subdirectory
// holds Mesa's drivers. getenv and exists are os.Getenv and a file test.
func driverPath(maps string, getenv func(string) string, exists func(string) bool) string {
	if getenv(EnvOff) == "off" {
		return ""
	}
	// libglvnd's override of the vendor: only Mesa's driver is Mesa's.
	if v := getenv("__GLX_VENDOR_LIBRARY_NAME"); v != "" && v != "mesa" {
		return ""
	}
	// NVIDIA's own driver serves the display: Mesa would be loaded for
	// nothing (a hybrid laptop that displays with Mesa just starts as it
	// would without this package).
	if exists("/proc/driver/nvidia/version") {
		return ""
	}
	var dirs []string
	if p := getenv("LIBGL_DRIVERS_PATH"); p != "" {
		// Mesa's own override of where its drivers are.
		dirs = filepath.SplitList(p)
	} else {
		dirs = libraryDirs(maps)
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if p := filepath.Join(d, mesaDriver); exists(p) {
			return p
		}
	}
	return ""
}

// libraryDirs is the dri/ directory next to the libGL and next to the C
// library of a memory map, in that order, without repeats.
func libraryDirs(maps string) []string {
	var gl, libc []string
	sc := bufio.NewScanner(strings.NewReader(maps))
	for sc.Scan() {
		// address perms offset dev inode path
		f := strings.Fields(sc.Text())
		if len(f) < 6 || !strings.HasPrefix(f[5], "/") {
			continue
		}
		dir, name := filepath.Split(f[5])
		dri := filepath.Join(dir, "dri")
		switch {
		case strings.HasPrefix(name, "libGL.so") || strings.HasPrefix(name, "libGLX.so"):
			gl = appendNew(gl, dri)
		case strings.HasPrefix(name, "libc.so"):
			libc = appendNew(libc, dri)
		}
	}
	dirs := gl
	for _, d := range libc {
		dirs = appendNew(dirs, d)
	}
	return dirs
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// fileExists reports whether path names a file (following links).
func fileExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir()
}
