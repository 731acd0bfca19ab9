package metrics

import (
	"testing"
	"time"
)

// go test -run '^$' -bench . -benchmem ./internal/metrics/
//
// The gateway's own benchmarks (recording a call in its catalogue) are in
// package gateway/internal/telemetry.

// BenchmarkVecWith looks a series up by its label values on every
// observation, in a counter vector and a histogram vector.
func BenchmarkVecWith(b *testing.B) {
	r := NewRegistry(nil)
	cv := r.NewCounterVec("calls_total", "h", "tool", "outcome")
	hv := r.NewHistogramVec("call_duration_seconds", "h", nil, "tool")
	cv.With("bank__transfer", "ok").Inc()
	hv.With("bank__transfer").Observe(0.001)
	b.ReportAllocs()
	for b.Loop() {
		cv.With("bank__transfer", "ok").Inc()
		hv.With("bank__transfer").ObserveDuration(1500 * time.Microsecond)
	}
}

func BenchmarkVecWithParallel(b *testing.B) {
	r := NewRegistry(nil)
	cv := r.NewCounterVec("calls_total", "h", "tool", "outcome")
	hv := r.NewHistogramVec("call_duration_seconds", "h", nil, "tool")
	cv.With("bank__transfer", "ok").Inc()
	hv.With("bank__transfer").Observe(0.001)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			cv.With("bank__transfer", "ok").Inc()
			hv.With("bank__transfer").ObserveDuration(1500 * time.Microsecond)
		}
	})
}

func BenchmarkCounterInc(b *testing.B) {
	c := NewRegistry(nil).NewCounterVec("c_total", "h", "tool").With("x")
	b.ReportAllocs()
	for b.Loop() {
		c.Inc()
	}
}

func BenchmarkHistogramObserve(b *testing.B) {
	h := NewRegistry(nil).NewHistogram("h_seconds", "h", nil)
	b.ReportAllocs()
	for b.Loop() {
		h.Observe(0.0015)
	}
}

// BenchmarkScrape writes a registry with 100 tools x 3 outcomes in a
// counter vector and 100 tools in a histogram vector (default buckets),
// beside a gauge vector, a gauge and two function gauges.
func BenchmarkScrape(b *testing.B) {
	r := NewRegistry(nil)
	cv := r.NewCounterVec("calls_total", "h", "tool", "outcome")
	hv := r.NewHistogramVec("call_duration_seconds", "h", nil, "tool")
	r.NewGaugeVec("up", "h", "server").With("server").Set(1)
	r.NewCounterVec("drift_total", "h", "server", "kind")
	r.NewGauge("sessions", "h").Set(3)
	r.NewGaugeFuncOptional("pending", "h", func() (float64, bool) { return 2, true })
	r.NewGaugeFunc("lag_seconds", "h", func() float64 { return 1.5 })
	for i := range 100 {
		tool := "server__tool" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		for _, o := range []string{"ok", "tool_error", "denied"} {
			cv.With(tool, o).Inc()
			hv.With(tool).ObserveDuration(time.Millisecond)
		}
	}
	b.ReportAllocs()
	var n int
	for b.Loop() {
		n = len(r.appendText(nil))
	}
	b.SetBytes(int64(n))
}
