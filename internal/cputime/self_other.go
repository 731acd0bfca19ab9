//go:build !unix

package cputime

import (
	"errors"
	"fmt"
	"time"
)

func self() (time.Duration, error) {
	return 0, fmt.Errorf("cputime: no getrusage on this system: %w", errors.ErrUnsupported)
}
