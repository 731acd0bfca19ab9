//go:build !race

package telemetry

import (
	"testing"
	"time"
)

// The hot path allocates nothing once a series exists. (Excluded under
// -race, whose instrumentation may allocate.)
func TestHotPathAllocatesNothing(t *testing.T) {
	g := NewInstruments(nil, t.Context(), nil).Metrics
	tm := g.Tool("bank__transfer")
	g.ObserveCall("bank__transfer", "denied", time.Millisecond)
	long := string(make([]byte, 300)) // a long label value costs nothing more
	g.ObserveCall(long, OutcomeOK, time.Millisecond)
	cases := map[string]func(){
		"ObserveCall":             func() { g.ObserveCall("bank__transfer", "denied", time.Millisecond) },
		"ObserveCall long":        func() { g.ObserveCall(long, OutcomeOK, time.Millisecond) },
		"Tool.ObserveCall ok":     func() { tm.ObserveCall(OutcomeOK, time.Millisecond) },
		"Tool.ObserveCall denied": func() { tm.ObserveCall("denied", time.Millisecond) },
		"SetUpstreamUp":           func() { g.SetUpstreamUp("bank", true) },
		"DriftEvent":              func() { g.DriftEvent("bank", DriftRemoved) },
		"NotificationDropped":     func() { g.NotificationDropped("bank", DroppedProgress) },
		"UpstreamSessionCapped":   func() { g.UpstreamSessionCapped("bank", CappedServer) },
		"SessionOpened":           g.SessionOpened,
	}
	for _, f := range cases {
		f() // the series exists
	}
	for name, f := range cases {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %v allocs per call, want 0", name, n)
		}
	}
}
