package metrics

import (
	"math"
	"sync/atomic"
)

// Gauge is a value that goes up and down. Its methods are safe for
// concurrent use and never lock. Get one from Registry.NewGauge or
// GaugeVec.With.
type Gauge struct {
	bits atomic.Uint64
}

// Set sets the gauge to v.
func (g *Gauge) Set(v float64) { g.bits.Store(math.Float64bits(v)) }

// Add adds v (which may be negative).
func (g *Gauge) Add(v float64) { addFloat(&g.bits, v) }

// Sub subtracts v.
func (g *Gauge) Sub(v float64) { addFloat(&g.bits, -v) }

// Inc adds 1.
func (g *Gauge) Inc() { addFloat(&g.bits, 1) }

// Dec subtracts 1.
func (g *Gauge) Dec() { addFloat(&g.bits, -1) }

// Value returns the current value.
func (g *Gauge) Value() float64 { return math.Float64frombits(g.bits.Load()) }

// GaugeVec is a family of gauges partitioned by label values.
type GaugeVec struct {
	v *vec[*Gauge]
}

// With returns the gauge for the given label values, creating it on first
// use; see CounterVec.With.
func (gv *GaugeVec) With(values ...string) *Gauge { return gv.v.with(values) }

// Delete removes the gauge for the given label values from the output and
// reports whether it existed.
func (gv *GaugeVec) Delete(values ...string) bool { return gv.v.delete(values) }

// gaugeFamily exposes a Gauge, a GaugeVec or a function.
type gaugeFamily struct {
	name, help string
	labels     []string
	single     *Gauge
	vec        *GaugeVec
	fn         func() (float64, bool)
}

func (f *gaugeFamily) familyName() string { return f.name }

func (f *gaugeFamily) appendText(b []byte) []byte {
	b = appendHeader(b, f.name, f.help, "gauge")
	switch {
	case f.single != nil:
		b = appendSeries(b, f.name, nil, nil, "", "")
		b = appendFloat(b, f.single.Value())
		b = append(b, '\n')
	case f.fn != nil:
		if v, ok := f.fn(); ok {
			b = appendSeries(b, f.name, nil, nil, "", "")
			b = appendFloat(b, v)
			b = append(b, '\n')
		}
	default:
		for _, e := range f.vec.v.snapshot() {
			b = appendSeries(b, f.name, f.labels, e.values, "", "")
			b = appendFloat(b, e.m.Value())
			b = append(b, '\n')
		}
	}
	return b
}
