//go:build !race

package telemetry

import (
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/metrics"
)

// The hot path allocates nothing once a series exists. (Excluded under
// -race, whose instrumentation may allocate.)
func TestHotPathAllocatesNothing(t *testing.T) {
	r := metrics.NewRegistry(nil)
	g := New(r)
	tm := g.Tool("bank__transfer")
	g.ObserveCall("bank__transfer", "denied", time.Millisecond)
	long := string(make([]byte, 300)) // key longer than the stack buffer
	g.ObserveCall(long, OutcomeOK, time.Millisecond)
	cases := map[string]func(){
		"ObserveCall":             func() { g.ObserveCall("bank__transfer", "denied", time.Millisecond) },
		"Tool.ObserveCall ok":     func() { tm.ObserveCall(OutcomeOK, time.Millisecond) },
		"Tool.ObserveCall denied": func() { tm.ObserveCall("denied", time.Millisecond) },
		"SetUpstreamUp":           func() { g.SetUpstreamUp("bank", true) },
		"DriftEvent":              func() { g.DriftEvent("bank", DriftRemoved) },
		"SessionOpened":           g.SessionOpened,
	}
	g.SetUpstreamUp("bank", true)
	g.DriftEvent("bank", DriftRemoved)
	for name, f := range cases {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %v allocs per call, want 0", name, n)
		}
	}
	// A label key beyond the stack buffer costs one allocation: the
	// documented price of a very long value, not a hidden one.
	if n := testing.AllocsPerRun(100, func() { g.ObserveCall(long, OutcomeOK, time.Millisecond) }); n > 2 {
		t.Errorf("long value: %v allocs per call", n)
	}
}
