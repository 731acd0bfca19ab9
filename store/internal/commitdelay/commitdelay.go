// Package commitdelay decides when the leader of a group commit
// (store/internal/sqlstore's commit queue) waits for more ops before it
// commits: PostgreSQL's commit_delay and commit_siblings, for the journal.
//
// Group commit lets the ops that arrive while a transaction commits share
// the next one. On a fast store (SQLite with synchronous=NORMAL commits in
// about 100 µs) few arrive meanwhile, and at 8 sessions most of a keyed
// call's two ops (its claim and its completion) paid a transaction of
// their own, each writing the same index and table pages to the WAL.
// A Tracker knows which journal calls are in flight (claimed, not yet
// completing) and lets a leader that is alone in the queue wait a little
// while enough of them are: their completions, and the claims of the
// calls that follow them, join its transaction.
//
// Only the calls claimed recently count (Options.Recent): a call that has
// run for longer is slow, and its completion is not worth a wait; a claim
// whose completion never comes (an outcome in doubt, a process that gave
// up) is forgotten the same way. A lone caller never waits: it has no
// siblings.
package commitdelay

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

// Options are a Tracker's settings.
type Options struct {
	// Max is the longest a leader waits; 0 turns waiting off.
	Max time.Duration
	// Siblings is how many other calls must be in flight for a leader to
	// wait (at least 1).
	Siblings int
	// Recent is how long after its claim a call still counts as in
	// flight (default 20 × Max).
	Recent time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Defaults returns the stores' settings: wait at most 1 ms, while at
// least two other calls are in flight.
func Defaults() Options { return Options{Max: time.Millisecond, Siblings: 2} }

// Tracker tracks the journal calls in flight and answers how long a
// leader waits. Its methods may be called concurrently. A nil Tracker
// never waits.
type Tracker struct {
	o Options

	mu     sync.Mutex
	open   map[store.RecordKey]time.Time // claimed at
	pruned time.Time
	wake   chan struct{} // a lingering leader's, closed by Arrived
	target int

	lingered atomic.Int64
}

// New returns a Tracker, or nil when o.Max is 0.
func New(o Options) *Tracker {
	if o.Max <= 0 {
		return nil
	}
	o.Siblings = max(o.Siblings, 1)
	if o.Recent <= 0 {
		o.Recent = 20 * o.Max
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

// Wait returns how long a leader alone in the queue waits (0: not at all)
// and the queue length at which it stops waiting early: half the calls in
// flight, and itself.
func (t *Tracker) Wait() (d time.Duration, target int) {
	if t == nil {
		return 0, 0
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
	n := len(t.open)
	if n < t.o.Siblings {
		return 0, 0
	}
	return t.o.Max, 1 + (n+1)/2
}

// InFlight returns how many calls count as in flight now (for tests).
func (t *Tracker) InFlight() int {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.open)
}

// Linger blocks a leader that finds queued ops in the queue (itself
// included) for up to Options.Max while enough calls are in flight, and
// returns early once Arrived reports as many queued ops as Wait's target.
// It reports whether it waited.
func (t *Tracker) Linger(queued int) bool {
	d, target := t.Wait()
	if d <= 0 || queued >= target {
		return false
	}
	wake := make(chan struct{})
	t.mu.Lock()
	t.wake, t.target = wake, target
	t.mu.Unlock()
	timer := time.NewTimer(d)
	select {
	case <-wake:
	case <-timer.C:
	}
	timer.Stop()
	t.mu.Lock()
	if t.wake == wake {
		t.wake = nil
	}
	t.mu.Unlock()
	t.lingered.Add(1)
	return true
}

// Arrived tells a lingering leader that the queue holds queued ops.
func (t *Tracker) Arrived(queued int) {
	if t == nil {
		return
	}
	t.mu.Lock()
	if t.wake != nil && queued >= t.target {
		close(t.wake)
		t.wake = nil
	}
	t.mu.Unlock()
}

// Lingered returns how many times a leader waited (for tests).
func (t *Tracker) Lingered() int64 {
	if t == nil {
		return 0
	}
	return t.lingered.Load()
}
