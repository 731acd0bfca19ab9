package metrics

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// ContentType is the Content-Type of the text exposition format 0.0.4.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// DefaultMaxSeriesPerVec is the default of RegistryOptions.MaxSeriesPerVec.
const DefaultMaxSeriesPerVec = 10000

// RegistryOptions configures a Registry. The zero value and nil mean
// defaults.
type RegistryOptions struct {
	// MaxSeriesPerVec bounds the number of series (distinct label value
	// combinations) a vector holds; beyond it new combinations are counted
	// in the overflow series (OverflowLabelValue). Zero means
	// DefaultMaxSeriesPerVec.
	MaxSeriesPerVec int
}

// family is one registered metric family.
type family interface {
	familyName() string
	appendText(b []byte) []byte
}

// Registry holds metric families and writes them in the text format. It is
// safe for concurrent use.
type Registry struct {
	maxSeries int
	sizeHint  atomic.Int64 // size of the last exposition, to size the next

	mu    sync.RWMutex
	fams  []family            // sorted by name
	names map[string]struct{} // every series name in use
}

// NewRegistry returns an empty registry. opts may be nil.
func NewRegistry(opts *RegistryOptions) *Registry {
	r := &Registry{maxSeries: DefaultMaxSeriesPerVec, names: make(map[string]struct{})}
	if opts != nil && opts.MaxSeriesPerVec > 0 {
		r.maxSeries = opts.MaxSeriesPerVec
	}
	return r
}

// register validates and adds f, whose series names are seriesNames.
func (r *Registry) register(f family, labels []string, seriesNames ...string) {
	name := f.familyName()
	if !validMetricName(name) {
		panic(fmt.Sprintf("metrics: invalid metric name %q", name))
	}
	for i, l := range labels {
		if !validLabelName(l) {
			panic(fmt.Sprintf("metrics: %s: invalid label name %q", name, l))
		}
		if slices.Contains(labels[:i], l) {
			panic(fmt.Sprintf("metrics: %s: duplicate label name %q", name, l))
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range seriesNames {
		if _, dup := r.names[n]; dup {
			panic(fmt.Sprintf("metrics: %s: name %q already registered", name, n))
		}
	}
	for _, n := range seriesNames {
		r.names[n] = struct{}{}
	}
	i, _ := slices.BinarySearchFunc(r.fams, name, func(f family, n string) int { return strings.Compare(f.familyName(), n) })
	r.fams = slices.Insert(r.fams, i, f)
}

// NewCounter registers and returns an unlabelled counter. It panics on an
// invalid or already registered name.
func (r *Registry) NewCounter(name, help string) *Counter {
	c := new(Counter)
	r.register(&counterFamily{name: name, help: help, single: c}, nil, name)
	return c
}

// NewCounterVec registers and returns a counter family with the given label
// names. It panics on an invalid or already registered name, or an invalid
// or duplicate label name.
func (r *Registry) NewCounterVec(name, help string, labels ...string) *CounterVec {
	labels = slices.Clone(labels)
	cv := &CounterVec{v: newVec(name, labels, r.maxSeries, func() *Counter { return new(Counter) })}
	r.register(&counterFamily{name: name, help: help, labels: labels, vec: cv}, labels, name)
	return cv
}

// NewGauge registers and returns an unlabelled gauge. It panics like
// NewCounter.
func (r *Registry) NewGauge(name, help string) *Gauge {
	g := new(Gauge)
	r.register(&gaugeFamily{name: name, help: help, single: g}, nil, name)
	return g
}

// NewGaugeVec registers and returns a gauge family with the given label
// names. It panics like NewCounterVec.
func (r *Registry) NewGaugeVec(name, help string, labels ...string) *GaugeVec {
	labels = slices.Clone(labels)
	gv := &GaugeVec{v: newVec(name, labels, r.maxSeries, func() *Gauge { return new(Gauge) })}
	r.register(&gaugeFamily{name: name, help: help, labels: labels, vec: gv}, labels, name)
	return gv
}

// NewGaugeFunc registers an unlabelled gauge whose value is f's result,
// computed on every scrape. f must be safe for concurrent use (scrapes may
// overlap) and quick: it runs inside the scrape's request. It panics like
// NewCounter, or if f is nil.
func (r *Registry) NewGaugeFunc(name, help string, f func() float64) {
	if f == nil {
		panic(fmt.Sprintf("metrics: %s: nil gauge function", name))
	}
	r.register(&gaugeFamily{name: name, help: help, fn: func() (float64, bool) { return f(), true }}, nil, name)
}

// NewGaugeFuncOptional registers an unlabelled gauge like NewGaugeFunc,
// for a value that is not always known: f returns the value and whether it
// has one. When ok is false (a source not configured yet, or failing) the
// scrape writes the family with only its HELP and TYPE lines and no
// sample, rather than a made-up value. f must be safe for concurrent use
// and quick, as for NewGaugeFunc. It panics like NewCounter, or if f is
// nil.
func (r *Registry) NewGaugeFuncOptional(name, help string, f func() (v float64, ok bool)) {
	if f == nil {
		panic(fmt.Sprintf("metrics: %s: nil gauge function", name))
	}
	r.register(&gaugeFamily{name: name, help: help, fn: f}, nil, name)
}

// NewHistogram registers and returns an unlabelled histogram with the given
// bucket upper bounds (nil means DefaultLatencyBuckets). Bounds must be
// finite and strictly increasing; a trailing +Inf is implied and may be
// given. It panics on invalid buckets and like NewCounter.
func (r *Registry) NewHistogram(name, help string, buckets []float64) *Histogram {
	f := newHistogramFamily(name, help, nil, buckets)
	f.single = newHistogram(f.bounds)
	r.register(f, nil, name, f.bucketName, f.sumName, f.countName)
	return f.single
}

// NewHistogramVec registers and returns a histogram family with the given
// buckets (as NewHistogram) and label names ("le" is reserved). It panics
// like NewHistogram and NewCounterVec.
func (r *Registry) NewHistogramVec(name, help string, buckets []float64, labels ...string) *HistogramVec {
	labels = slices.Clone(labels)
	if slices.Contains(labels, "le") {
		panic(fmt.Sprintf("metrics: %s: label name \"le\" is reserved in histograms", name))
	}
	f := newHistogramFamily(name, help, labels, buckets)
	upper := f.bounds
	f.vec = &HistogramVec{v: newVec(name, labels, r.maxSeries, func() *Histogram { return newHistogram(upper) })}
	r.register(f, labels, name, f.bucketName, f.sumName, f.countName)
	return f.vec
}

// newHistogramFamily validates buckets and builds the family (without its
// histograms).
func newHistogramFamily(name, help string, labels []string, buckets []float64) *histogramFamily {
	if buckets == nil {
		buckets = DefaultLatencyBuckets()
	}
	bounds := slices.Clone(buckets)
	if n := len(bounds); n > 0 && math.IsInf(bounds[n-1], +1) {
		bounds = bounds[:n-1]
	}
	for i, b := range bounds {
		if math.IsNaN(b) || math.IsInf(b, 0) {
			panic(fmt.Sprintf("metrics: %s: bucket bound %v is not finite", name, b))
		}
		if i > 0 && b <= bounds[i-1] {
			panic(fmt.Sprintf("metrics: %s: bucket bounds not strictly increasing at %v", name, b))
		}
	}
	le := make([]string, 0, len(bounds)+1)
	for _, b := range bounds {
		le = append(le, string(appendFloat(nil, b)))
	}
	le = append(le, "+Inf")
	return &histogramFamily{
		name: name, help: help, labels: labels, bounds: bounds, le: le,
		bucketName: name + "_bucket", sumName: name + "_sum", countName: name + "_count",
	}
}

// WriteTo writes every family in the text format to w. Families appear in
// name order, series in label-value order.
func (r *Registry) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(r.appendText(nil))
	return int64(n), err
}

// appendText appends the whole exposition to b.
func (r *Registry) appendText(b []byte) []byte {
	if b == nil {
		b = make([]byte, 0, r.sizeHint.Load()+512)
	}
	r.mu.RLock()
	fams := slices.Clone(r.fams)
	r.mu.RUnlock()
	for _, f := range fams {
		b = f.appendText(b)
	}
	r.sizeHint.Store(int64(len(b)))
	return b
}

// Handler returns an http.Handler that serves the registry to GET and HEAD
// requests with Content-Type ContentType. Other methods get 405.
func (r *Registry) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		body := r.appendText(nil)
		h := w.Header()
		h.Set("Content-Type", ContentType)
		h.Set("Content-Length", strconv.Itoa(len(body)))
		h.Set("Cache-Control", "no-store")
		if req.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(body)
	})
}
