package metrics

import (
	"testing"
	"time"
)

// go test -run '^$' -bench . -benchmem ./internal/metrics/

func BenchmarkObserveCall(b *testing.B) {
	g := NewGateway(NewRegistry(nil))
	g.ObserveCall("bank__transfer", OutcomeOK, time.Millisecond)
	b.ReportAllocs()
	for b.Loop() {
		g.ObserveCall("bank__transfer", OutcomeOK, 1500*time.Microsecond)
	}
}

func BenchmarkObserveCallPreResolved(b *testing.B) {
	g := NewGateway(NewRegistry(nil))
	tm := g.Tool("bank__transfer")
	b.ReportAllocs()
	for b.Loop() {
		tm.ObserveCall(OutcomeOK, 1500*time.Microsecond)
	}
}

func BenchmarkObserveCallParallel(b *testing.B) {
	g := NewGateway(NewRegistry(nil))
	g.ObserveCall("bank__transfer", OutcomeOK, time.Millisecond)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			g.ObserveCall("bank__transfer", OutcomeOK, 1500*time.Microsecond)
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

// BenchmarkScrape writes a gateway registry with 100 tools x 3 outcomes.
func BenchmarkScrape(b *testing.B) {
	r := NewRegistry(nil)
	g := NewGateway(r)
	for i := range 100 {
		tool := "server__tool" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		for _, o := range []string{OutcomeOK, OutcomeToolError, "denied"} {
			g.ObserveCall(tool, o, time.Millisecond)
		}
	}
	b.ReportAllocs()
	var n int
	for b.Loop() {
		n = len(r.appendText(nil))
	}
	b.SetBytes(int64(n))
}
