//go:build unix

package plugin

import (
	"syscall"
	"testing"
)

// mkfifo creates a named pipe: opening it for reading would block forever
// if the loader opened it the ordinary way.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
}
