package metrics

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
)

// OverflowLabelValue is the value of every label of the one series into
// which a vector counts new label values once it holds
// RegistryOptions.MaxSeriesPerVec series.
const OverflowLabelValue = "__overflow__"

// entry is one series of a vector: its (sanitized) label values and its
// metric.
type entry[T any] struct {
	values []string
	m      T
}

// vec is the label-value index shared by CounterVec, GaugeVec and
// HistogramVec.
//
// Lookups of an existing series read an immutable map through an atomic
// pointer: no lock, no allocation. New series go to a dirty map under a
// mutex and are promoted into a fresh read map when the dirty map is as
// large as the read map (so bulk creation costs amortized O(1) per series)
// or when lookups that missed the read map have paid for the copy
// (len(dirty) + len(read)/8 of them), the way sync.Map amortizes.
type vec[T any] struct {
	name     string
	labels   []string
	max      int
	newChild func() T

	read atomic.Pointer[map[string]*entry[T]] // immutable once stored

	mu      sync.Mutex
	dirty   map[string]*entry[T] // keys not in read
	misses  int                  // lookups served from dirty since the last promotion
	entries []*entry[T]          // distinct series, in creation order
}

func newVec[T any](name string, labels []string, max int, newChild func() T) *vec[T] {
	v := &vec[T]{
		name:     name,
		labels:   labels,
		max:      max,
		newChild: newChild,
		dirty:    make(map[string]*entry[T]),
	}
	v.read.Store(&map[string]*entry[T]{})
	return v
}

// appendKey appends an unambiguous encoding of values: each value's length
// as a uvarint, then its bytes.
func appendKey(b []byte, values []string) []byte {
	for _, v := range values {
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
	}
	return b
}

func (v *vec[T]) checkArity(values []string) {
	if len(values) != len(v.labels) {
		panic(fmt.Sprintf("metrics: %s: %d label values for %d labels %q", v.name, len(values), len(v.labels), v.labels))
	}
}

// with returns the series for values, creating it if needed.
func (v *vec[T]) with(values []string) T {
	v.checkArity(values)
	var buf [128]byte
	k := appendKey(buf[:0], values)
	if e := (*v.read.Load())[string(k)]; e != nil {
		return e.m
	}
	return v.slow(values, k)
}

// slow finds or creates the series under the mutex.
func (v *vec[T]) slow(values []string, rawKey []byte) T {
	v.mu.Lock()
	defer v.mu.Unlock()
	if e := (*v.read.Load())[string(rawKey)]; e != nil {
		return e.m
	}
	if e := v.dirty[string(rawKey)]; e != nil {
		v.misses++
		v.maybePromoteLocked()
		return e.m
	}
	if len(v.entries) >= v.max {
		return v.overflowLocked()
	}
	sv := make([]string, len(values))
	for i, s := range values {
		sv[i] = sanitizeUTF8(s)
	}
	sk := string(appendKey(nil, sv))
	e := v.lookupLocked(sk)
	if e == nil {
		e = &entry[T]{values: sv, m: v.newChild()}
		v.dirty[sk] = e
		v.entries = append(v.entries, e)
	}
	if string(rawKey) != sk && v.sizeLocked() < 2*v.max {
		// Invalid UTF-8: remember the raw spelling so later lookups
		// are fast. Aliases are bounded too; beyond the bound a raw
		// spelling takes this slow path each time.
		v.dirty[string(rawKey)] = e
	}
	v.maybePromoteLocked()
	return e.m
}

func (v *vec[T]) lookupLocked(k string) *entry[T] {
	if e := (*v.read.Load())[k]; e != nil {
		return e
	}
	return v.dirty[k]
}

func (v *vec[T]) sizeLocked() int { return len(*v.read.Load()) + len(v.dirty) }

// maybePromoteLocked merges dirty into a new read map when that is paid
// for (see vec).
func (v *vec[T]) maybePromoteLocked() {
	r := *v.read.Load()
	if len(v.dirty) == 0 || (len(v.dirty) < len(r) && v.misses < len(v.dirty)+len(r)/8) {
		return
	}
	m := make(map[string]*entry[T], len(r)+len(v.dirty))
	maps.Copy(m, r)
	maps.Copy(m, v.dirty)
	v.read.Store(&m)
	v.dirty = make(map[string]*entry[T])
	v.misses = 0
}

// overflowLocked returns the overflow series, creating it beyond the limit.
func (v *vec[T]) overflowLocked() T {
	sv := make([]string, len(v.labels))
	for i := range sv {
		sv[i] = OverflowLabelValue
	}
	sk := string(appendKey(nil, sv))
	if e := v.lookupLocked(sk); e != nil {
		return e.m
	}
	e := &entry[T]{values: sv, m: v.newChild()}
	v.dirty[sk] = e
	v.entries = append(v.entries, e)
	v.maybePromoteLocked()
	return e.m
}

// delete removes the series for values and reports whether it existed.
func (v *vec[T]) delete(values []string) bool {
	v.checkArity(values)
	sv := make([]string, len(values))
	for i, s := range values {
		sv[i] = sanitizeUTF8(s)
	}
	sk := appendKey(nil, sv)
	v.mu.Lock()
	defer v.mu.Unlock()
	e := v.lookupLocked(string(sk))
	if e == nil {
		return false
	}
	r := *v.read.Load()
	m := make(map[string]*entry[T], len(r))
	for k, x := range r {
		if x != e {
			m[k] = x
		}
	}
	v.read.Store(&m)
	maps.DeleteFunc(v.dirty, func(_ string, x *entry[T]) bool { return x == e })
	v.entries = slices.DeleteFunc(v.entries, func(x *entry[T]) bool { return x == e })
	return true
}

// snapshot returns the series sorted by label values.
func (v *vec[T]) snapshot() []*entry[T] {
	v.mu.Lock()
	es := slices.Clone(v.entries)
	v.mu.Unlock()
	slices.SortFunc(es, func(a, b *entry[T]) int { return slices.Compare(a.values, b.values) })
	return es
}
