//go:build !unix

package effectserver

import (
	"os"
	"sync"
)

var fileMu sync.Mutex // one process only on systems without flock

func withLock(path string, fn func(f *os.File) error) error {
	fileMu.Lock()
	defer fileMu.Unlock()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	return fn(f)
}
