// Package gcfloor keeps the garbage collector's heap goal at least a
// floor above the live heap.
//
// With Go's default (GOGC=100) a collection starts once the heap has grown
// by as much as survived the last one, and at least 4 MB. A gateway's live
// heap is a few megabytes while it allocates some kilobytes a call, so it
// collects every few hundred calls, and each collection's fixed cost
// (waking its workers, its pauses, the write barrier while it marks) is
// paid that often: about 4% of a plain call's CPU (docs/BENCHMARKS.md).
// A Floor raises GOGC after every collection so that the next one starts
// no sooner than the floor's bytes past the live heap; once the live heap
// is larger than the floor, GOGC is what it was at Start and Go's pacing
// is unchanged.
//
//	f := gcfloor.Start(32 << 20)
//	defer f.Stop() // GOGC as it was
//
// The process's memory grows by up to the floor. Start leaves a
// collector that is off (GOGC=off) alone; a program that sets GOGC or a
// memory limit itself should not start one. GOGC is the process's: run
// one Floor at a time (a second would read the first one's GOGC as the
// value to give back).
package gcfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// maxPercent bounds the GOGC a Floor sets (a live heap of a few kilobytes
// would otherwise ask for millions).
const maxPercent = 1_000_000

// minLive is the least live heap a goal is computed from (the collector's
// own least goal is 4 MB).
const minLive = 1 << 20

// Floor is a running floor under the heap goal; Stop ends it.
type Floor struct {
	floor uint64
	base  int // GOGC at Start

	mu      sync.Mutex
	stopped bool
	percent int // the GOGC set last
	samples []metrics.Sample
}

// Start sets GOGC so that the heap may grow by at least floor bytes past
// the live heap before the next collection, and again after every
// collection, until Stop. With the collector off, or floor 0, it changes
// nothing.
func Start(floor uint64) *Floor {
	f := &Floor{floor: floor, samples: []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/gogc:percent"}}}
	metrics.Read(f.samples)
	// The metric is 0 when the collector is off (GOGC=off).
	f.base = int(f.samples[1].Value.Uint64())
	f.percent = f.base
	if f.base <= 0 || floor == 0 {
		f.stopped = true
		return f
	}
	f.mu.Lock()
	if f.samples[0].Value.Uint64() > 0 {
		// Before the first collection nothing is measured: a goal set
		// from a guess could let the heap grow far past the floor (the
		// program's start may hold more than the guess).
		f.adjust()
	}
	f.arm()
	f.mu.Unlock()
	return f
}

// Percent returns the GOGC the floor set last (GOGC at Start once
// stopped).
func (f *Floor) Percent() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.percent
}

// Stop restores GOGC as it was at Start and stops adjusting it.
func (f *Floor) Stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return
	}
	f.stopped = true
	if f.percent != f.base {
		debug.SetGCPercent(f.base)
		f.percent = f.base
	}
}

// sentinel is allocated and dropped once a collection: its cleanup runs
// after the collection that found it unreachable. It is large enough not
// to share a tiny allocation block, whose cleanups may never run.
type sentinel struct{ _ [32]byte }

// arm drops a sentinel whose cleanup adjusts GOGC after the next
// collection and arms the one after it. f.mu is held.
func (f *Floor) arm() {
	runtime.AddCleanup(new(sentinel), (*Floor).collected, f)
}

// collected runs after each collection.
func (f *Floor) collected() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return
	}
	f.adjust()
	f.arm()
}

// adjust sets GOGC so that the goal, live*(1+GOGC/100), is at least
// live+floor, and never below GOGC at Start. f.mu is held.
func (f *Floor) adjust() {
	metrics.Read(f.samples[:1])
	live := max(f.samples[0].Value.Uint64(), minLive)
	want := uint64(f.base)
	if p := (f.floor*100 + live - 1) / live; p > want {
		want = min(p, maxPercent)
	}
	if int(want) != f.percent {
		debug.SetGCPercent(int(want))
		f.percent = int(want)
	}
}
