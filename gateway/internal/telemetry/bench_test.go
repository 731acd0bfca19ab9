package telemetry

import (
	"io"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/metrics"
)

// go test -run '^$' -bench . -benchmem ./gateway/internal/telemetry/

func BenchmarkObserveCall(b *testing.B) {
	g := New(metrics.NewRegistry(nil))
	g.ObserveCall("bank__transfer", OutcomeOK, time.Millisecond)
	b.ReportAllocs()
	for b.Loop() {
		g.ObserveCall("bank__transfer", OutcomeOK, 1500*time.Microsecond)
	}
}

func BenchmarkObserveCallPreResolved(b *testing.B) {
	g := New(metrics.NewRegistry(nil))
	tm := g.Tool("bank__transfer")
	b.ReportAllocs()
	for b.Loop() {
		tm.ObserveCall(OutcomeOK, 1500*time.Microsecond)
	}
}

func BenchmarkObserveCallParallel(b *testing.B) {
	g := New(metrics.NewRegistry(nil))
	g.ObserveCall("bank__transfer", OutcomeOK, time.Millisecond)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			g.ObserveCall("bank__transfer", OutcomeOK, 1500*time.Microsecond)
		}
	})
}

// BenchmarkScrape writes the catalogue with 100 tools x 3 outcomes and
// both scrape-time gauges set.
func BenchmarkScrape(b *testing.B) {
	r := metrics.NewRegistry(nil)
	g := New(r)
	for i := range 100 {
		tool := "server__tool" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		for _, o := range []string{OutcomeOK, OutcomeToolError, "denied"} {
			g.ObserveCall(tool, o, time.Millisecond)
		}
	}
	g.SetApprovalsPendingSource(func() (int, error) { return 3, nil })
	g.SetJournalSource(func() (time.Time, error) { return time.Now().Add(-time.Second), nil })
	b.ReportAllocs()
	n, _ := r.WriteTo(io.Discard)
	for b.Loop() {
		if _, err := r.WriteTo(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(n)
}
