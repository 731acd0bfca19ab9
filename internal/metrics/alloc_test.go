//go:build !race

package metrics

import (
	"testing"
	"time"
)

// The hot path allocates nothing once a series exists: looking a series up
// with With and observing through it, or observing through a kept handle.
// (Excluded under -race, whose instrumentation may allocate.)
func TestHotPathAllocatesNothing(t *testing.T) {
	r := NewRegistry(nil)
	calls := r.NewCounterVec("calls_total", "h", "tool", "outcome")
	dur := r.NewHistogramVec("call_duration_seconds", "h", nil, "tool")
	up := r.NewGaugeVec("up", "h", "server")
	drift := r.NewCounterVec("drift_total", "h", "server", "kind")
	sessions := r.NewGauge("sessions", "h")
	total := r.NewCounter("total", "h")
	lat := r.NewHistogram("latency_seconds", "h", nil)
	okCalls, okDur := calls.With("bank__transfer", "ok"), dur.With("bank__transfer")
	observe := func(tool, outcome string) { // a call, looked up by name
		calls.With(tool, outcome).Inc()
		dur.With(tool).ObserveDuration(time.Millisecond)
	}
	observe("bank__transfer", "denied")
	long := string(make([]byte, 300)) // key longer than the stack buffer
	observe(long, "ok")
	cases := map[string]func(){
		"CounterVec.With+HistogramVec.With": func() { observe("bank__transfer", "denied") },
		"kept Counter+Histogram": func() {
			okCalls.Inc()
			okDur.ObserveDuration(time.Millisecond)
		},
		"CounterVec.With+kept Histogram": func() {
			calls.With("bank__transfer", "denied").Inc()
			okDur.ObserveDuration(time.Millisecond)
		},
		"GaugeVec.With.Set":   func() { up.With("bank").Set(1) },
		"CounterVec.With.Inc": func() { drift.With("bank", "removed").Inc() },
		"Gauge.Inc":           sessions.Inc,
		"Gauge.Add":           func() { sessions.Add(-1) },
		"Counter.Add":         func() { total.Add(0.5) },
		"Histogram.Observe":   func() { lat.Observe(0.0015) },
	}
	up.With("bank").Set(1)
	drift.With("bank", "removed").Inc()
	for name, f := range cases {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %v allocs per call, want 0", name, n)
		}
	}
	// A label key beyond the stack buffer costs one allocation per lookup:
	// the documented price of a very long value, not a hidden one.
	if n := testing.AllocsPerRun(100, func() { observe(long, "ok") }); n > 2 {
		t.Errorf("long value: %v allocs per call (two lookups)", n)
	}
}
