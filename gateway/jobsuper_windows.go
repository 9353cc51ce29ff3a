package gateway

import (
	"context"
	"errors"
	"os"
)

// Supervise is not supported on Windows yet: background jobs need a Unix supervisor.
func Supervise(ctx context.Context, opts Options, root, id string, ready *os.File) error {
	return errors.ErrUnsupported
}
