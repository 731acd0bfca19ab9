package durable

import (
	"context"
	"errors"
	"fmt"

	"github.com/gatehouse-dev/gatehouse/internal/executor"
	"github.com/gatehouse-dev/gatehouse/store"
)

// The journal's own executor (JournalOptions.StoreDSN): what lets a
// program that embeds a journal, killed and started again, answer for the
// calls it left started at once, as a restarted gateway does.

// errClosed is the error of every call after Close.
var errClosed = fmt.Errorf("durable: the journal is closed: %w", store.ErrClosed)

// ownExecutor gives the journal an executor of its own when its options
// leave the name to it (Executor empty), its store registers executors,
// and the store can be named on this host: StoreDSN, or a SQLite store's
// file. Otherwise, or when no instance slot can be locked, the journal
// keeps a random name and the lease rules (logged).
func (j *Journal) ownExecutor() {
	exs := j.o.Executors
	if exs == nil {
		exs, _ = j.s.(store.ExecutorStore)
	}
	if exs == nil {
		return
	}
	dsn := j.o.StoreDSN
	if dsn == "" {
		// A SQLite store's (store/sqlite.Store.Path).
		if p, ok := j.s.(interface{ Path() string }); ok && p.Path() != "" {
			dsn = "sqlite:" + p.Path()
		}
	}
	if dsn == "" {
		return
	}
	own, err := executor.NewOnDemand(exs, dsn, j.o.TTL)
	if err != nil {
		j.log.Warn("durable: no executor instance for this journal: a restart will see the calls it left started as run_busy until their lease runs out",
			"store", store.Redact(dsn), "err", err)
		return
	}
	j.own, j.o.Executor, j.o.Executors = own, own.ID(), exs
}

// alive refuses a claim after Close and makes sure the journal's own
// executor, if any, is registered and alive before it claims.
func (j *Journal) alive(ctx context.Context) error {
	if j.closed.Load() {
		return errClosed
	}
	if j.own == nil {
		return nil
	}
	if err := j.own.Alive(ctx, j.o.Clock()); err != nil {
		if errors.Is(err, executor.ErrStopped) && j.closed.Load() {
			return errClosed
		}
		return fmt.Errorf("durable: executor of this journal: %w", err)
	}
	return nil
}

// Close ends the journal: it takes no more calls (they fail with an error
// wrapping store.ErrClosed) and, when it has an executor of its own
// (JournalOptions.StoreDSN), marks that executor stopped in the store, so
// that a call it left started is decided at once by whoever asks next,
// and releases its instance. Close the journal after its last call has
// returned, and before its store (Close does not close the store). It may
// be called more than once. A journal never closed looks to the store like
// one whose process crashed: decided at once when its instance is taken
// again, otherwise when its calls' leases run out.
func (j *Journal) Close() error {
	if !j.closed.CompareAndSwap(false, true) || j.own == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
	defer cancel()
	if err := j.own.Stop(ctx, j.o.Clock()); err != nil {
		return fmt.Errorf("durable: close: %w", err)
	}
	return nil
}
