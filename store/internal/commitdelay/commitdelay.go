// Package commitdelay decides when the leader of a group commit
// (store/internal/sqlstore's commit queue) gives the calls in flight a
// chance to join its transaction: PostgreSQL's commit_delay and
// commit_siblings, for the journal, without the delay.
//
// Group commit lets the ops that arrive while a transaction commits share
// the next one. On a fast store (SQLite with synchronous=NORMAL commits in
// about 100 µs) few arrive meanwhile, and at 8 sessions most of a keyed
// call's two ops (its claim and its completion) paid a transaction of
// their own, each writing the same index and table pages to the WAL.
//
// A Tracker knows which journal calls are in flight (claimed, their
// completion not yet queued). A leader alone in the queue while at least
// two of them are yields its processor once (runtime.Gosched) before it
// takes its batch. When the process has CPU to spare nothing else is
// ready to run and the yield returns at once: no wait, no added latency.
// When it is CPU-bound, the goroutines ready to run go first, among them
// the calls whose upstream has answered: their completions (and the
// claims of the calls that follow) queue behind the leader and share its
// transaction, which saves the CPU their own transactions would have
// cost. A timed wait (PostgreSQL's commit_delay) was measured and
// rejected: it saved as much CPU when the machine was saturated, but cost
// 7-8 % of the calls/s of tools that answer in 10-15 ms when it was not.
//
// Only the calls claimed recently count (Options.Recent): a call that has
// run longer is slow, and a claim whose completion never comes (an outcome
// in doubt, a caller that gave up) is forgotten the same way. A lone
// caller never yields: it has no siblings.
package commitdelay

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

// Options are a Tracker's settings.
type Options struct {
	// Siblings is how many other calls must be in flight for a leader to
	// yield; 0 turns yielding off.
	Siblings int
	// Recent is how long after its claim a call still counts as in flight
	// (default 20 ms).
	Recent time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Defaults returns the stores' settings: yield while at least two other
// calls are in flight.
func Defaults() Options { return Options{Siblings: 2} }

// Tracker tracks the journal calls in flight and lets a leader yield.
// Its methods may be called concurrently. A nil Tracker never yields.
type Tracker struct {
	o Options

	mu     sync.Mutex
	open   map[store.RecordKey]time.Time // claimed at
	pruned time.Time

	yielded atomic.Int64
}

// New returns a Tracker, or nil when o.Siblings is 0.
func New(o Options) *Tracker {
	if o.Siblings <= 0 {
		return nil
	}
	if o.Recent <= 0 {
		o.Recent = 20 * time.Millisecond
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Tracker{o: o, open: make(map[store.RecordKey]time.Time)}
}

// Claimed records that the call of k was claimed (it is in flight).
func (t *Tracker) Claimed(k store.RecordKey) {
	if t == nil {
		return
	}
	now := t.o.Now()
	t.mu.Lock()
	t.open[k] = now
	t.mu.Unlock()
}

// Completing records that the call of k is no longer in flight (its
// completion is queued).
func (t *Tracker) Completing(k store.RecordKey) {
	if t == nil {
		return
	}
	t.mu.Lock()
	delete(t.open, k)
	t.mu.Unlock()
}

// InFlight returns how many calls count as in flight now, forgetting those
// claimed longer than Recent ago.
func (t *Tracker) InFlight() int {
	if t == nil {
		return 0
	}
	now := t.o.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if now.Sub(t.pruned) >= t.o.Recent/2 {
		t.pruned = now
		for k, at := range t.open {
			if now.Sub(at) > t.o.Recent {
				delete(t.open, k)
			}
		}
	}
	return len(t.open)
}

// Yield lets the goroutines ready to run go first when the leader of a
// batch holding queued ops (itself included) is alone and at least
// Siblings calls are in flight. It reports whether it yielded.
func (t *Tracker) Yield(queued int) bool {
	if t == nil || queued > 1 || t.InFlight() < t.o.Siblings {
		return false
	}
	runtime.Gosched()
	t.yielded.Add(1)
	return true
}

// Yielded returns how many times a leader yielded (for tests).
func (t *Tracker) Yielded() int64 {
	if t == nil {
		return 0
	}
	return t.yielded.Load()
}
