package checkpoint

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// memFile is a file in memory, closed on exec (the child gets it as one
// of its standard files only).
func memFile(name string) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	return os.NewFile(uintptr(fd), name), nil
}
