package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/norm"
)

// ---- executors ----

const executorCols = `id, instance, started_at, alive_until, stopped_at`

// RegisterExecutor implements store.ExecutorStore: one transaction that
// stops the instance's other running executors and inserts e.
func (s *Store) RegisterExecutor(ctx context.Context, e store.Executor) error {
	e, err := norm.Executor(e, s.now())
	if err != nil {
		return err
	}
	err = s.db.InTx(ctx, func(tx Querier) error {
		if _, err := tx.Exec(ctx, `UPDATE executors SET stopped_at = $3 WHERE instance = $1 AND id <> $2 AND stopped_at = 0`,
			e.Instance, e.ID, norm.MS(e.StartedAt)); err != nil {
			return err
		}
		n, err := tx.Exec(ctx, `INSERT INTO executors (`+executorCols+`) VALUES ($1, $2, $3, $4, 0) ON CONFLICT (id) DO NOTHING`,
			e.ID, e.Instance, norm.MS(e.StartedAt), norm.MS(e.AliveUntil))
		if err != nil {
			return err
		}
		if n == 0 {
			return norm.Conflict("executor %q is already registered", e.ID)
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, store.ErrConflict) {
			return err
		}
		return fmt.Errorf("store: register executor %q: %w", e.ID, err)
	}
	return nil
}

// HeartbeatExecutor implements store.ExecutorStore: one conditional UPDATE.
func (s *Store) HeartbeatExecutor(ctx context.Context, id string, until time.Time) error {
	n, err := s.db.Exec(ctx, `UPDATE executors SET alive_until = $2 WHERE id = $1 AND stopped_at = 0`, id, norm.MS(until))
	if err != nil {
		return fmt.Errorf("store: heartbeat executor %q: %w", id, err)
	}
	if n == 0 {
		e, err := s.GetExecutor(ctx, id)
		if err != nil {
			return err
		}
		return norm.ExecutorStopped(id, e.StoppedAt)
	}
	return nil
}

// StopExecutor implements store.ExecutorStore.
func (s *Store) StopExecutor(ctx context.Context, id string, now time.Time) error {
	n, err := s.db.Exec(ctx, `UPDATE executors SET stopped_at = $2 WHERE id = $1 AND stopped_at = 0`, id, norm.MS(now))
	if err != nil {
		return fmt.Errorf("store: stop executor %q: %w", id, err)
	}
	if n == 0 {
		if _, err := s.GetExecutor(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// GetExecutor implements store.ExecutorStore.
func (s *Store) GetExecutor(ctx context.Context, id string) (store.Executor, error) {
	var e store.Executor
	var started, alive, stopped int64
	err := s.db.QueryRow(ctx, `SELECT `+executorCols+` FROM executors WHERE id = $1`, id).
		Scan(&e.ID, &e.Instance, &started, &alive, &stopped)
	if errors.Is(err, ErrNoRows) {
		return store.Executor{}, norm.ExecutorNotFound(id)
	}
	if err != nil {
		return store.Executor{}, fmt.Errorf("store: get executor %q: %w", id, err)
	}
	e.StartedAt, e.AliveUntil, e.StoppedAt = norm.Time(started), norm.Time(alive), norm.Time(stopped)
	return e, nil
}

// heldByDead is the condition of the two compare-and-swaps below: the
// record ($1-$3) is started, held by $4, and $4 is a registered executor
// dead at $5.
const heldByDead = `scope = $1 AND run_id = $2 AND tool_call_id = $3 AND state = 'started' AND executor = $4
AND EXISTS (SELECT 1 FROM executors WHERE executors.id = $4 AND (executors.stopped_at <> 0 OR executors.alive_until <= $5))`

// MarkInDoubtFromDead implements store.ExecutorStore: one compare-and-swap
// UPDATE.
func (s *Store) MarkInDoubtFromDead(ctx context.Context, key store.RecordKey, holder string, now time.Time) (bool, error) {
	n, err := s.db.Exec(ctx, `UPDATE journal SET state = 'in_doubt', updated_at = $5 WHERE `+heldByDead,
		key.Scope, key.RunID, key.ToolCallID, holder, norm.MS(now))
	if err != nil {
		return false, fmt.Errorf("store: mark in doubt %s: %w", keyString(key), err)
	}
	return s.swapped(ctx, key, n)
}

// TakeOverFromDead implements store.ExecutorStore: one compare-and-swap
// UPDATE.
func (s *Store) TakeOverFromDead(ctx context.Context, key store.RecordKey, holder, newExecutor string, leaseUntil, now time.Time) (bool, error) {
	if newExecutor == "" {
		return false, norm.Invalid("TakeOverFromDead needs an executor")
	}
	n, err := s.db.Exec(ctx, `UPDATE journal SET executor = $6, lease_until = $7, updated_at = $5,
 expires_at = CASE WHEN expires_at <> 0 AND expires_at < $7 THEN $7 ELSE expires_at END
WHERE `+heldByDead,
		key.Scope, key.RunID, key.ToolCallID, holder, norm.MS(now), newExecutor, norm.MS(leaseUntil))
	if err != nil {
		return false, fmt.Errorf("store: take over %s: %w", keyString(key), err)
	}
	return s.swapped(ctx, key, n)
}

// swapped turns a compare-and-swap's row count into its answer:
// ErrNotFound when the record does not exist.
func (s *Store) swapped(ctx context.Context, key store.RecordKey, n int64) (bool, error) {
	if n == 0 {
		if _, err := s.GetRecord(ctx, key); err != nil {
			return false, err
		}
		return false, nil
	}
	return true, nil
}

// SweepExecutors implements store.ExecutorStore.
func (s *Store) SweepExecutors(ctx context.Context, before time.Time) (int64, error) {
	n, err := s.db.Exec(ctx, `DELETE FROM executors WHERE (stopped_at <> 0 AND stopped_at <= $1) OR alive_until <= $1`, norm.MS(before))
	if err != nil {
		return 0, fmt.Errorf("store: sweep executors: %w", err)
	}
	return n, nil
}
