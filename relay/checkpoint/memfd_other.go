//go:build !linux

package checkpoint

import (
	"errors"
	"os"
)

// memFile: no files in memory here; output uses pipes.
func memFile(string) (*os.File, error) {
	return nil, errors.ErrUnsupported
}
