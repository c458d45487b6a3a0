//go:build cgo

package glpreload

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>

// load opens a library with the flags Mesa's loader opens its drivers
// with, so that the loader's own dlopen later finds it as it left it. The
// handle is kept: the library is the process's until it exits.
static const char *load(const char *path) {
	if (dlopen(path, RTLD_NOW | RTLD_GLOBAL) == NULL) {
		return dlerror();
	}
	return NULL;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"time"
	"unsafe"
)

// Start begins loading the Mesa driver the window will use, if there is
// one, on a goroutine of its own (which also finds the driver, so that the
// caller's start-up does none of it), and returns a function that waits
// until that goroutine has ended (it cannot be stopped: it ends when
// dlopen returns).
func Start(logger *slog.Logger) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		maps, err := os.ReadFile("/proc/self/maps")
		if err != nil {
			logger.Debug("not preloading the OpenGL driver", "err", err)
			return
		}
		path := driverPath(string(maps), os.Getenv, fileExists)
		if path == "" {
			return
		}
		begin := time.Now()
		if err := load(path); err != nil {
			logger.Debug("preloading the OpenGL driver failed", "err", err)
			return
		}
		logger.Debug("preloaded the OpenGL driver", "path", path, "took", time.Since(begin))
	}()
	return func() { <-done }
}

// load opens the library at path and keeps it.
func load(path string) error {
	// dlerror's message belongs to the thread that called dlopen.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	if msg := C.load(cpath); msg != nil {
		return fmt.Errorf("load %s: %w", path, errors.New(C.GoString(msg)))
	}
	return nil
}
