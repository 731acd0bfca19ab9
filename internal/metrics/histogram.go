package metrics

import (
	"math"
	"sync/atomic"
	"time"
)

// DefaultLatencyBuckets returns the default histogram buckets for latencies
// in seconds, from 100 µs to 10 s. Each call returns a new slice.
func DefaultLatencyBuckets() []float64 {
	return []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
}

// Histogram counts observations into fixed buckets and keeps their sum. Its
// methods are safe for concurrent use and never lock. Get one from
// Registry.NewHistogram or HistogramVec.With.
type Histogram struct {
	upper  []float64       // bucket upper bounds, increasing, without +Inf
	counts []atomic.Uint64 // per bucket (not cumulative); the last is +Inf
	sum    atomic.Uint64   // float64 bits
}

func newHistogram(upper []float64) *Histogram {
	return &Histogram{upper: upper, counts: make([]atomic.Uint64, len(upper)+1)}
}

// Observe records v. A NaN is ignored: it has no bucket and would poison
// the sum forever.
func (h *Histogram) Observe(v float64) {
	if v != v {
		return
	}
	// First bucket whose upper bound is >= v ("le" is inclusive).
	lo, hi := 0, len(h.upper)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if h.upper[mid] < v {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	h.counts[lo].Add(1)
	addFloat(&h.sum, v)
}

// ObserveDuration records d in seconds.
func (h *Histogram) ObserveDuration(d time.Duration) { h.Observe(d.Seconds()) }

// HistogramVec is a family of histograms with the same buckets,
// partitioned by label values.
type HistogramVec struct {
	v *vec[*Histogram]
}

// With returns the histogram for the given label values, creating it on
// first use; see CounterVec.With.
func (hv *HistogramVec) With(values ...string) *Histogram { return hv.v.with(values) }

// Delete removes the histogram for the given label values from the output
// and reports whether it existed.
func (hv *HistogramVec) Delete(values ...string) bool { return hv.v.delete(values) }

// histogramFamily exposes a Histogram or a HistogramVec.
type histogramFamily struct {
	name, help string
	labels     []string
	bounds     []float64 // bucket upper bounds without +Inf
	le         []string  // formatted bounds, then "+Inf"
	bucketName string    // name_bucket
	sumName    string    // name_sum
	countName  string    // name_count
	single     *Histogram
	vec        *HistogramVec
}

func (f *histogramFamily) familyName() string { return f.name }

func (f *histogramFamily) appendText(b []byte) []byte {
	b = appendHeader(b, f.name, f.help, "histogram")
	if f.single != nil {
		return f.appendOne(b, nil, f.single)
	}
	for _, e := range f.vec.v.snapshot() {
		b = f.appendOne(b, e.values, e.m)
	}
	return b
}

func (f *histogramFamily) appendOne(b []byte, values []string, h *Histogram) []byte {
	var cum uint64
	for i := range h.counts {
		cum += h.counts[i].Load()
		b = appendSeries(b, f.bucketName, f.labels, values, "le", f.le[i])
		b = appendUint(b, cum)
	}
	b = appendSeries(b, f.sumName, f.labels, values, "", "")
	b = appendFloat(b, math.Float64frombits(h.sum.Load()))
	b = append(b, '\n')
	b = appendSeries(b, f.countName, f.labels, values, "", "")
	return appendUint(b, cum)
}
