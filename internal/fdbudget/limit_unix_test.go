//go:build unix

package fdbudget

import (
	"syscall"
	"testing"
)

// TestFDLimit reads the process's soft RLIMIT_NOFILE; an infinite one is
// read as MaxInt32.
func TestFDLimit(t *testing.T) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	got, err := Limit()
	if err != nil || got != clampFDLimit(uint64(rl.Cur)) || got <= 0 {
		t.Errorf("Limit() = %d, %v; RLIMIT_NOFILE is %d", got, err, rl.Cur)
	}
	if clampFDLimit(^uint64(0)) != 1<<31-1 {
		t.Error("an infinite limit is not clamped")
	}
}
