package metrics

import (
	"fmt"
	"math"
	"strconv"
	"sync/atomic"
)

// Counter is a monotonically increasing value. Its methods are safe for
// concurrent use and never lock. The zero value is not usable; get a Counter
// from Registry.NewCounter or CounterVec.With.
type Counter struct {
	n atomic.Uint64 // whole increments, exact
	f atomic.Uint64 // float64 bits of fractional (or huge) increments
}

// Inc adds 1.
func (c *Counter) Inc() { c.n.Add(1) }

// Add adds v, which must not be negative or NaN (Add panics: a counter only
// goes up).
func (c *Counter) Add(v float64) {
	if v < 0 || math.IsNaN(v) {
		panic(fmt.Sprintf("metrics: counter cannot add %v", v))
	}
	if v == math.Trunc(v) && v < 1<<64 {
		c.n.Add(uint64(v))
		return
	}
	addFloat(&c.f, v)
}

// Value returns the current count.
func (c *Counter) Value() float64 {
	return float64(c.n.Load()) + math.Float64frombits(c.f.Load())
}

func (c *Counter) appendValue(b []byte) []byte {
	n, f := c.n.Load(), math.Float64frombits(c.f.Load())
	if f == 0 {
		return strconv.AppendUint(b, n, 10)
	}
	return appendFloat(b, float64(n)+f)
}

// addFloat atomically adds v to the float64 whose bits are in a.
func addFloat(a *atomic.Uint64, v float64) {
	for {
		old := a.Load()
		if a.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// CounterVec is a family of counters partitioned by label values.
type CounterVec struct {
	v *vec[*Counter]
}

// With returns the counter for the given label values, one per label name
// in registration order, creating it on first use. Keep the returned
// handle to skip the lookup on later observations. With panics if the
// number of values is wrong. Label values must come from a small set the
// program controls (see the package documentation on cardinality).
func (cv *CounterVec) With(values ...string) *Counter { return cv.v.with(values) }

// Delete removes the counter for the given label values from the output and
// reports whether it existed. Handles to it stay usable but are no longer
// exported.
func (cv *CounterVec) Delete(values ...string) bool { return cv.v.delete(values) }

// counterFamily exposes a Counter or a CounterVec.
type counterFamily struct {
	name, help string
	labels     []string
	single     *Counter
	vec        *CounterVec
}

func (f *counterFamily) familyName() string { return f.name }

func (f *counterFamily) appendText(b []byte) []byte {
	b = appendHeader(b, f.name, f.help, "counter")
	if f.single != nil {
		b = appendSeries(b, f.name, nil, nil, "", "")
		b = f.single.appendValue(b)
		return append(b, '\n')
	}
	for _, e := range f.vec.v.snapshot() {
		b = appendSeries(b, f.name, f.labels, e.values, "", "")
		b = e.m.appendValue(b)
		b = append(b, '\n')
	}
	return b
}
