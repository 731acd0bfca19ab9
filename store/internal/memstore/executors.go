package memstore

import (
	"context"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/norm"
)

// RegisterExecutor implements store.ExecutorStore.
func (m *Store) RegisterExecutor(ctx context.Context, e store.Executor) error {
	e, err := norm.Executor(e, m.now())
	if err != nil {
		return err
	}
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if m.executors == nil {
		m.executors = map[string]store.Executor{}
	}
	if _, ok := m.executors[e.ID]; ok {
		return norm.Conflict("executor %q is already registered", e.ID)
	}
	for id, o := range m.executors {
		if o.Instance == e.Instance && o.StoppedAt.IsZero() {
			o.StoppedAt = e.StartedAt
			m.executors[id] = o
		}
	}
	m.executors[e.ID] = e
	return nil
}

// runningExecutor returns a running executor, or why there is none.
func (m *Store) runningExecutor(id string) (store.Executor, error) {
	e, ok := m.executors[id]
	if !ok {
		return e, norm.ExecutorNotFound(id)
	}
	if !e.StoppedAt.IsZero() {
		return e, norm.ExecutorStopped(id, e.StoppedAt)
	}
	return e, nil
}

// HeartbeatExecutor implements store.ExecutorStore.
func (m *Store) HeartbeatExecutor(ctx context.Context, id string, until time.Time) error {
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	e, err := m.runningExecutor(id)
	if err != nil {
		return err
	}
	e.AliveUntil = norm.Round(until)
	m.executors[id] = e
	return nil
}

// StopExecutor implements store.ExecutorStore.
func (m *Store) StopExecutor(ctx context.Context, id string, now time.Time) error {
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	e, ok := m.executors[id]
	if !ok {
		return norm.ExecutorNotFound(id)
	}
	if e.StoppedAt.IsZero() {
		e.StoppedAt = norm.Round(now)
		m.executors[id] = e
	}
	return nil
}

// GetExecutor implements store.ExecutorStore.
func (m *Store) GetExecutor(ctx context.Context, id string) (store.Executor, error) {
	if err := m.lock(ctx); err != nil {
		return store.Executor{}, err
	}
	defer m.mu.Unlock()
	e, ok := m.executors[id]
	if !ok {
		return store.Executor{}, norm.ExecutorNotFound(id)
	}
	return e, nil
}

// heldByDead returns the started record of key when it is held by holder
// and holder is a registered executor dead at now.
func (m *Store) heldByDead(key store.RecordKey, holder string, now time.Time) (store.Record, bool, error) {
	r, ok := m.journal[key]
	if !ok {
		return r, false, recordNotFound(key)
	}
	if r.State != store.StateStarted || r.Executor != holder {
		return r, false, nil
	}
	e, ok := m.executors[holder]
	if !ok || !e.Dead(norm.Round(now)) {
		return r, false, nil
	}
	return r, true, nil
}

// MarkInDoubtFromDead implements store.ExecutorStore.
func (m *Store) MarkInDoubtFromDead(ctx context.Context, key store.RecordKey, holder string, now time.Time) (bool, error) {
	if err := m.lock(ctx); err != nil {
		return false, err
	}
	defer m.mu.Unlock()
	r, dead, err := m.heldByDead(key, holder, now)
	if err != nil || !dead {
		return false, err
	}
	r.State = store.StateInDoubt
	r.UpdatedAt = norm.Round(now)
	m.journal[key] = r
	return true, nil
}

// TakeOverFromDead implements store.ExecutorStore.
func (m *Store) TakeOverFromDead(ctx context.Context, key store.RecordKey, holder, newExecutor string, leaseUntil, now time.Time) (bool, error) {
	if newExecutor == "" {
		return false, norm.Invalid("TakeOverFromDead needs an executor")
	}
	if err := m.lock(ctx); err != nil {
		return false, err
	}
	defer m.mu.Unlock()
	r, dead, err := m.heldByDead(key, holder, now)
	if err != nil || !dead {
		return false, err
	}
	r.Executor = newExecutor
	r.LeaseUntil = norm.Round(leaseUntil)
	r.UpdatedAt = norm.Round(now)
	if !r.ExpiresAt.IsZero() && r.ExpiresAt.Before(r.LeaseUntil) {
		r.ExpiresAt = r.LeaseUntil
	}
	m.journal[key] = r
	return true, nil
}

// SweepExecutors implements store.ExecutorStore.
func (m *Store) SweepExecutors(ctx context.Context, before time.Time) (int64, error) {
	if err := m.lock(ctx); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	b := norm.Round(before)
	var n int64
	for id, e := range m.executors {
		if (!e.StoppedAt.IsZero() && !e.StoppedAt.After(b)) || !e.AliveUntil.After(b) {
			delete(m.executors, id)
			n++
		}
	}
	return n, nil
}
