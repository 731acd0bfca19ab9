package executor

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

// ErrStopped: an OnDemand executor was stopped, or superseded in the store
// by another process under its instance; it claims nothing any more.
var ErrStopped = errors.New("executor stopped")

// OnDemand is a library journal's executor. Its instance is derived as a
// gateway's (host, store, lock-file slot), from the journal slots
// (journal-N.lock), so that a restarted program takes the instance of the
// one that died. It is registered at its first use (Alive), before the
// journal's first claim, so that registering marks the dead incarnation's
// claims dead at once. It starts no goroutine: registered alive for a
// window (the journal's TTL), it is extended by the calls that find less
// than half of it left, and stopped by Stop.
//
// Its liveness in the store only ever says that the process may be alive:
// what proves a claim alive is still the claim's own lease, which the
// journal renews. A process that crashes and is not started again on the
// same host and store is recognised when its claims' leases run out, as
// without an executor.
type OnDemand struct {
	id, instance string
	st           store.ExecutorStore
	window       time.Duration
	release      func()

	// fresh is when (Unix ns, in the callers' clock) Alive must write
	// again; math.MinInt64 sends every call to the slow path.
	fresh atomic.Int64

	mu         sync.Mutex
	registered bool
	err        error // sticky: stopped or superseded
}

// NewOnDemand takes a journal slot of the store named by dsn and returns
// the executor of that instance with a new incarnation, not yet
// registered. window is how long a registration or an extension keeps it
// alive. It fails when no slot can be locked (no DSN, a memory store, no
// file locks, every slot taken).
func NewOnDemand(st store.ExecutorStore, dsn string, window time.Duration) (*OnDemand, error) {
	if st == nil || window <= 0 {
		return nil, errors.New("executor: NewOnDemand needs a store and a positive window")
	}
	inst, release, err := lockInstance(dsn, "journal-")
	if err != nil {
		return nil, err
	}
	e := &OnDemand{id: inst + "#" + randomHex(8), instance: inst, st: st, window: window, release: release}
	e.fresh.Store(math.MinInt64)
	return e, nil
}

// ID returns instance#incarnation, the Executor of the journal's records.
func (e *OnDemand) ID() string { return e.id }

// Instance returns the instance name.
func (e *OnDemand) Instance() string { return e.instance }

// Alive makes sure the executor is registered and alive for at least half
// its window after now: the first call registers it (which stops its
// instance's previous incarnation), a later one extends it when less than
// half is left. It costs a clock comparison otherwise. It fails with the
// store's error (a later call tries again), or ErrStopped once the
// executor was stopped or superseded.
func (e *OnDemand) Alive(ctx context.Context, now time.Time) error {
	if now.UnixNano() < e.fresh.Load() {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err != nil {
		return e.err
	}
	if now.UnixNano() < e.fresh.Load() {
		return nil
	}
	until := now.Add(e.window)
	var err error
	if !e.registered {
		err = e.st.RegisterExecutor(ctx, store.Executor{ID: e.id, Instance: e.instance, StartedAt: now, AliveUntil: until})
		if errors.Is(err, store.ErrConflict) {
			// An earlier registration committed although it reported an
			// error (a connection lost in its COMMIT): extend that one.
			err = e.st.HeartbeatExecutor(ctx, e.id, until)
		}
	} else {
		err = e.st.HeartbeatExecutor(ctx, e.id, until)
		if errors.Is(err, store.ErrNotFound) {
			// Swept while idle for longer than its window: the same
			// incarnation again.
			err = e.st.RegisterExecutor(ctx, store.Executor{ID: e.id, Instance: e.instance, StartedAt: now, AliveUntil: until})
		}
	}
	switch {
	case errors.Is(err, store.ErrExecutorStopped):
		e.err = fmt.Errorf("%w: %s was stopped in the store (another process registered its instance)", ErrStopped, e.id)
		return e.err
	case err != nil:
		return fmt.Errorf("executor: registering %s: %w", e.id, err)
	}
	e.registered = true
	e.fresh.Store(now.Add(e.window / 2).UnixNano())
	return nil
}

// Stop marks the executor stopped in the store, if it was registered (its
// claims are then dead at once), and releases its slot. Alive fails with
// ErrStopped afterwards. It may be called more than once.
func (e *OnDemand) Stop(ctx context.Context, now time.Time) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if errors.Is(e.err, errClosed) {
		return nil
	}
	e.fresh.Store(math.MinInt64)
	var err error
	if e.registered && e.err == nil {
		if serr := e.st.StopExecutor(ctx, e.id, now); serr != nil {
			err = fmt.Errorf("executor: stopping %s: %w", e.id, serr)
		}
	}
	e.err = errClosed
	e.release()
	return err
}

// errClosed is Alive's error after Stop.
var errClosed = fmt.Errorf("%w: closed", ErrStopped)
