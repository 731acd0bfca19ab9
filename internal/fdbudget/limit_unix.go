//go:build unix

package fdbudget

import (
	"fmt"
	"syscall"
)

// FDLimit returns the process's file-descriptor limit: the soft
// RLIMIT_NOFILE, which Go's os package has raised to the hard limit at
// start (a huge or infinite one is read as math.MaxInt32).
func Limit() (int, error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, fmt.Errorf("fdbudget: reading RLIMIT_NOFILE: %w", err)
	}
	return clampFDLimit(uint64(rl.Cur)), nil // Cur is an int64 on some systems
}
