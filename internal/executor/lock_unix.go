//go:build unix

package executor

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes an exclusive flock on path without waiting; errLocked when
// another process holds it. The kernel releases it when the process dies.
func tryLock(path string) (release func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errLocked
		}
		return nil, err
	}
	return func() { _ = f.Close() }, nil
}
