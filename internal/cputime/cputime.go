// Package cputime reads the CPU time this process has used: user and system
// time, every thread, as getrusage(2) reports it. Benchmarks divide it by
// their operations ("cpu-ns/op"): on a machine shared with other work it is
// a steadier figure than wall time, which counts the waits for a core.
package cputime

import (
	"testing"
	"time"
)

// Self returns the user and system CPU time this process has used so far.
// Where the system has no getrusage (Windows, Plan 9, WebAssembly) it
// returns an error that wraps [errors.ErrUnsupported].
func Self() (time.Duration, error) { return self() }

// Start is Self for a test or benchmark: the CPU time so far, or the
// test fails when it cannot be read. Give it to Report when the measured
// operations are done.
func Start(tb testing.TB) time.Duration {
	tb.Helper()
	d, err := Self()
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

// Report reports the CPU this process used since start (a value Start or
// Self returned) over b.N operations as the benchmark's "cpu-ns/op"; it
// reports nothing when b.N is 0.
func Report(b *testing.B, start time.Duration) {
	b.Helper()
	if b.N <= 0 {
		return
	}
	b.ReportMetric(float64(Start(b)-start)/float64(b.N), "cpu-ns/op")
}
