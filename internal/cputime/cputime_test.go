package cputime_test

import (
	"crypto/sha256"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/cputime"
)

// spin hashes until this goroutine has run for about d of wall time: CPU
// the process must then report.
func spin(d time.Duration) {
	buf := make([]byte, 4096)
	for end := time.Now().Add(d); time.Now().Before(end); {
		sum := sha256.Sum256(buf)
		buf[0] = sum[0]
	}
}

func TestSelfCountsWork(t *testing.T) {
	before, err := cputime.Self()
	if err != nil {
		t.Fatal(err)
	}
	if before <= 0 {
		t.Fatalf("Self() = %v before any work: a running test has used some CPU", before)
	}
	spin(150 * time.Millisecond)
	after := cputime.Start(t)
	// The goroutine ran for 150 ms of wall time; on a loaded machine it may
	// have had a core for less, but not for nothing.
	if got := after - before; got < 10*time.Millisecond {
		t.Fatalf("150 ms of hashing measured as %v of CPU", got)
	}
}

func TestSelfIsNotWallTime(t *testing.T) {
	// A sleeping process uses (almost) no CPU.
	before := cputime.Start(t)
	time.Sleep(200 * time.Millisecond)
	if got := cputime.Start(t) - before; got >= 150*time.Millisecond {
		t.Fatalf("a 200 ms sleep measured as %v of CPU: that is wall time", got)
	}
}

// BenchmarkSpin hashes for 2 ms an operation: its cpu-ns/op is read back
// by TestReport.
func BenchmarkSpin(b *testing.B) {
	start := cputime.Start(b)
	for b.Loop() {
		spin(2 * time.Millisecond)
	}
	cputime.Report(b, start)
}

func TestReport(t *testing.T) {
	r := testing.Benchmark(BenchmarkSpin)
	if r.N == 0 {
		t.Fatal("the benchmark ran no operation")
	}
	got, ok := r.Extra["cpu-ns/op"]
	if !ok {
		t.Fatalf("no cpu-ns/op reported: %v", r.Extra)
	}
	// 2 ms of wall time an operation: some of it on a core, never more than
	// the two cores of the machine could give.
	if got < float64(100*time.Microsecond) || got > float64(8*time.Millisecond) {
		t.Fatalf("cpu-ns/op = %.0f for 2 ms of hashing an operation", got)
	}
}
