package telemetry

import (
	"maps"
	"slices"
	"sync"
	"sync/atomic"
)

// maxSeries bounds the series each family keeps: the cache of precomputed
// attribute sets below, and the SDK's aggregation (its cardinality limit,
// beyond which new series are counted in one overflow series). Label
// values come from closed sets (see the package doc), so this is a last
// line of defence, as the 10,000 series per vector of the exposition this
// package replaced.
const maxSeries = 10000

// series maps a series' label values to what an observation passes the
// SDK (its precomputed attribute set), so that an observation of a series
// seen before computes and allocates nothing: a lookup in an immutable map
// read through an atomic pointer. A new series copies the map under a
// mutex (series are few and created once). Beyond maxSeries entries a
// new series is built on each use and not kept.
type series[K comparable, V any] struct {
	read  atomic.Pointer[map[K]V]
	mu    sync.Mutex
	build func(K) V
}

// init sets the function that builds a series' value.
func (s *series[K, V]) init(build func(K) V) {
	s.build = build
	s.read.Store(&map[K]V{})
}

// get returns k's value, building it on first use.
func (s *series[K, V]) get(k K) V {
	if v, ok := (*s.read.Load())[k]; ok {
		return v
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := *s.read.Load()
	if v, ok := r[k]; ok {
		return v
	}
	v := s.build(k)
	if len(r) >= maxSeries {
		return v
	}
	m := make(map[K]V, len(r)+1)
	maps.Copy(m, r)
	m[k] = v
	s.read.Store(&m)
	return v
}

// remove forgets k.
func (s *series[K, V]) remove(k K) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := *s.read.Load()
	if _, ok := r[k]; !ok {
		return
	}
	m := maps.Clone(r)
	delete(m, k)
	s.read.Store(&m)
}

// all returns every value, in no particular order.
func (s *series[K, V]) all() []V {
	return slices.Collect(maps.Values(*s.read.Load()))
}
