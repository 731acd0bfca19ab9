package telemetry

import (
	"context"
	"io"
	"net/http/httptest"
	"testing"
	"time"
)

// go test -run '^$' -bench . -benchmem ./gateway/internal/telemetry/

func BenchmarkObserveCall(b *testing.B) {
	g := NewInstruments(nil, context.Background(), nil).Metrics
	g.ObserveCall("bank__transfer", OutcomeOK, time.Millisecond)
	b.ReportAllocs()
	for b.Loop() {
		g.ObserveCall("bank__transfer", OutcomeOK, 1500*time.Microsecond)
	}
}

func BenchmarkObserveCallPreResolved(b *testing.B) {
	g := NewInstruments(nil, context.Background(), nil).Metrics
	tm := g.Tool("bank__transfer")
	b.ReportAllocs()
	for b.Loop() {
		tm.ObserveCall(OutcomeOK, 1500*time.Microsecond)
	}
}

func BenchmarkObserveCallParallel(b *testing.B) {
	g := NewInstruments(nil, context.Background(), nil).Metrics
	g.ObserveCall("bank__transfer", OutcomeOK, time.Millisecond)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			g.ObserveCall("bank__transfer", OutcomeOK, 1500*time.Microsecond)
		}
	})
}

// BenchmarkScrape serves /metrics for the catalogue with 100 tools x 3
// outcomes and both scrape-time gauges set.
func BenchmarkScrape(b *testing.B) {
	ins := NewInstruments(nil, context.Background(), nil)
	g := ins.Metrics
	for i := range 100 {
		tool := "server__tool" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		for _, o := range []string{OutcomeOK, OutcomeToolError, "denied"} {
			g.ObserveCall(tool, o, time.Millisecond)
		}
	}
	g.SetApprovalsPendingSource(func() (int, error) { return 3, nil })
	g.SetJournalSource(func() (time.Time, error) { return time.Now().Add(-time.Second), nil })
	h := ins.Handler()
	scrape := func() int {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
		n, _ := io.Copy(io.Discard, w.Body)
		return int(n)
	}
	b.ReportAllocs()
	n := scrape()
	for b.Loop() {
		scrape()
	}
	b.SetBytes(int64(n))
}
