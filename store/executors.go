package store

import (
	"context"
	"errors"
	"time"
)

// ErrExecutorStopped: an executor was stopped (it shut down, or a newer
// incarnation of its instance registered) and cannot heartbeat again.
var ErrExecutorStopped = errors.New("store: executor stopped")

// Executor is one registered incarnation of a process that claims journal
// records (a gateway): the name it writes into Record.Executor, the
// instance it is an incarnation of, and whether it is alive.
//
// A record held by a registered executor that is dead may be taken over or
// marked in doubt at once, without waiting for the record's lease (see
// ExecutorStore.MarkInDoubtFromDead). A record held by an executor the
// store does not know keeps the lease rules of JournalStore.
type Executor struct {
	// ID is the string the process writes into Record.Executor. Unique.
	ID string
	// Instance names the process across its restarts (stable on one host
	// for one store, for example). Every start registers a new ID under
	// the same instance; registering one stops the others.
	Instance string
	// StartedAt is when it registered; RegisterExecutor fills it from the
	// store's clock when zero.
	StartedAt time.Time
	// AliveUntil is when the executor counts as dead unless it heartbeats
	// before: its last heartbeat plus its lease.
	AliveUntil time.Time
	// StoppedAt is when it stopped (a clean shutdown) or was superseded by
	// a newer incarnation of its instance; zero while it runs.
	StoppedAt time.Time
}

// Dead reports whether e counts as dead at now: stopped, or AliveUntil at
// or before now.
func (e Executor) Dead(now time.Time) bool {
	return !e.StoppedAt.IsZero() || !e.AliveUntil.After(now)
}

// ExecutorStore records which executors are alive, so that a claim whose
// executor died (its process restarted, or stopped heartbeating) is
// recognised at once. Every method is one statement or one transaction and
// is atomic across processes sharing the store.
type ExecutorStore interface {
	// RegisterExecutor records e as running (e.StoppedAt is ignored) and,
	// in the same transaction, stops every other running executor of
	// e.Instance at e.StartedAt: the instance restarted, so they are dead.
	// An empty ID or Instance, or a zero AliveUntil, is ErrInvalid; an ID
	// already registered is ErrConflict.
	RegisterExecutor(ctx context.Context, e Executor) error
	// HeartbeatExecutor sets a running executor's AliveUntil to until. It
	// fails with ErrNotFound, or ErrExecutorStopped when the executor was
	// stopped (a stopped executor stays dead).
	HeartbeatExecutor(ctx context.Context, id string, until time.Time) error
	// StopExecutor marks a running executor stopped at now (a clean
	// shutdown). Stopping a stopped executor changes nothing; an unknown
	// one is ErrNotFound.
	StopExecutor(ctx context.Context, id string, now time.Time) error
	// GetExecutor returns the executor or ErrNotFound.
	GetExecutor(ctx context.Context, id string) (Executor, error)
	// MarkInDoubtFromDead moves a started record to in_doubt when it is
	// still held by holder and holder is a registered executor dead at
	// now, whatever the record's lease (compare-and-swap on the holder and
	// its death, in one statement). It reports whether it did; ErrNotFound
	// when there is no record.
	MarkInDoubtFromDead(ctx context.Context, key RecordKey, holder string, now time.Time) (bool, error)
	// TakeOverFromDead gives a started record still held by holder, a
	// registered executor dead at now, to newExecutor with a new lease
	// (compare-and-swap as MarkInDoubtFromDead). It reports whether it
	// did; ErrNotFound when there is no record.
	TakeOverFromDead(ctx context.Context, key RecordKey, holder, newExecutor string, leaseUntil, now time.Time) (bool, error)
	// SweepExecutors deletes the executors stopped at or before before,
	// and those whose AliveUntil is at or before before, and returns how
	// many. Records they held then keep the lease rules.
	SweepExecutors(ctx context.Context, before time.Time) (int64, error)
}
