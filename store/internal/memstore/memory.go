// Package memstore is the in-memory store.Store behind package
// store/memory: maps behind one mutex, with the same semantics as the SQL
// implementations. Its methods reach users through store/memory.Store,
// which embeds a *Store, so that they are not part of the public API's
// listing one by one (as the SQL stores' methods, in sqlstore).
//
// Times are rounded to milliseconds, UTC, as the SQL stores read them back.
// Nothing survives Close or the process.
package memstore

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/norm"
)

// Store is an in-memory store.Store. Its zero value is not usable; call New.
type Store struct {
	now func() time.Time

	mu        sync.Mutex
	closed    bool
	servers   map[string]store.Server
	baselines map[string]store.Baseline
	// observations by ascending ID; lastObservation is the highest ID
	// ever given (IDs are never reused, even after DeleteServer).
	observations    []store.Observation
	lastObservation int64
	journal         map[store.RecordKey]store.Record
	counters        map[string]counter
	approvals       map[string]store.Approval
	executors       map[string]store.Executor // made by RegisterExecutor
	audit           auditLog
	conns           conns
	sessions        sessions
}

type counter struct {
	value     int64
	expiresMS int64
}

var _ store.Store = (*Store)(nil)

// New returns an empty store. Only opts.Now is used.
func New(opts *store.Options) (*Store, error) {
	o, err := store.ResolveOptions(store.DSN{}, opts)
	if err != nil {
		return nil, err
	}
	return &Store{
		now:       o.Now,
		servers:   map[string]store.Server{},
		baselines: map[string]store.Baseline{},
		journal:   map[store.RecordKey]store.Record{},
		counters:  map[string]counter{},
		approvals: map[string]store.Approval{},
	}, nil
}

// Close discards nothing but makes every later call fail with store.ErrClosed.
func (m *Store) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return nil
}

func (m *Store) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return store.ErrClosed
	}
	return nil
}

func copyServer(s store.Server) store.Server {
	s.Catalogue = norm.Bytes(s.Catalogue)
	return s
}

// PutServer implements store.ServerStore.
func (m *Store) PutServer(ctx context.Context, s store.Server) error {
	if err := norm.Server(s); err != nil {
		return err
	}
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if s.UpdatedAt.IsZero() {
		s.UpdatedAt = m.now()
	}
	s.UpdatedAt = norm.Round(s.UpdatedAt)
	s.BaselineVersion = m.servers[s.ID].BaselineVersion
	m.servers[s.ID] = copyServer(s)
	return nil
}

// GetServer implements store.ServerStore.
func (m *Store) GetServer(ctx context.Context, id string) (store.Server, error) {
	s, err := m.lockServer(ctx, id)
	if err != nil {
		return store.Server{}, err
	}
	defer m.mu.Unlock()
	return copyServer(s), nil
}

// lockServer locks m and returns the server id. On an error (ctx ended,
// closed, no such server) m is not locked; otherwise the caller unlocks.
func (m *Store) lockServer(ctx context.Context, id string) (store.Server, error) {
	if err := m.lock(ctx); err != nil {
		return store.Server{}, err
	}
	s, ok := m.servers[id]
	if !ok {
		m.mu.Unlock()
		return store.Server{}, norm.NotFound("server %q", id)
	}
	return s, nil
}

// ListServers implements store.ServerStore.
func (m *Store) ListServers(ctx context.Context) ([]store.Server, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	out := make([]store.Server, 0, len(m.servers))
	for _, id := range slices.Sorted(maps.Keys(m.servers)) {
		out = append(out, copyServer(m.servers[id]))
	}
	return out, nil
}

// DeleteServer implements store.ServerStore.
func (m *Store) DeleteServer(ctx context.Context, id string) error {
	if _, err := m.lockServer(ctx, id); err != nil {
		return err
	}
	defer m.mu.Unlock()
	delete(m.servers, id)
	delete(m.baselines, id)
	m.observations = slices.DeleteFunc(m.observations, func(o store.Observation) bool { return o.ServerID == id })
	return nil
}

// SaveBaseline implements store.ServerStore.
func (m *Store) SaveBaseline(ctx context.Context, serverID string, entries store.Baseline) (int, error) {
	if err := entries.Validate(); err != nil {
		return 0, err
	}
	s, err := m.lockServer(ctx, serverID)
	if err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	b := m.baselines[serverID]
	if b == nil {
		b = store.Baseline{}
		m.baselines[serverID] = b
	}
	added := 0
	for k, e := range entries.Clone() {
		if _, exists := b[k]; !exists {
			b[k] = e
			added++
		}
	}
	if added > 0 {
		s.BaselineVersion++
		m.servers[serverID] = s
	}
	return added, nil
}

// GetBaseline implements store.ServerStore.
func (m *Store) GetBaseline(ctx context.Context, serverID string) (store.Baseline, error) {
	if _, err := m.lockServer(ctx, serverID); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	return m.baselines[serverID].Clone(), nil
}

// ClearBaseline implements store.ServerStore.
func (m *Store) ClearBaseline(ctx context.Context, serverID string) (int64, error) {
	s, err := m.lockServer(ctx, serverID)
	if err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	n := int64(len(m.baselines[serverID]))
	delete(m.baselines, serverID)
	s.BaselineVersion++
	m.servers[serverID] = s
	return n, nil
}

// ReplaceBaseline implements store.ServerStore.
func (m *Store) ReplaceBaseline(ctx context.Context, serverID string, entries store.Baseline) (int64, error) {
	if err := entries.Validate(); err != nil {
		return 0, err
	}
	s, err := m.lockServer(ctx, serverID)
	if err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	return m.replace(s, entries), nil
}

// replace makes entries the baseline of s and bumps its version once. The
// caller holds m.mu.
func (m *Store) replace(s store.Server, entries store.Baseline) int64 {
	n := int64(len(m.baselines[s.ID]))
	m.baselines[s.ID] = entries.Clone()
	s.BaselineVersion++
	m.servers[s.ID] = s
	return n
}

// BaselineVersion implements store.ServerStore.
func (m *Store) BaselineVersion(ctx context.Context, serverID string) (int64, error) {
	s, err := m.lockServer(ctx, serverID)
	if err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	return s.BaselineVersion, nil
}

func copyRecord(r store.Record) store.Record {
	r.Outcome = norm.Bytes(r.Outcome)
	return r
}

func recordNotFound(k store.RecordKey) error {
	return norm.NotFound("record %s/%s/%s", k.Scope, k.RunID, k.ToolCallID)
}

// Claim implements store.JournalStore.
func (m *Store) Claim(ctx context.Context, rec store.Record) (bool, store.Record, error) {
	rec, err := norm.Claim(rec, m.now())
	if err != nil {
		return false, store.Record{}, err
	}
	if err := m.lock(ctx); err != nil {
		return false, store.Record{}, err
	}
	defer m.mu.Unlock()
	if existing, ok := m.journal[rec.RecordKey]; ok {
		return false, copyRecord(existing), nil
	}
	m.journal[rec.RecordKey] = copyRecord(rec)
	return true, copyRecord(rec), nil
}

// GetRecord implements store.JournalStore.
func (m *Store) GetRecord(ctx context.Context, key store.RecordKey) (store.Record, error) {
	if err := m.lock(ctx); err != nil {
		return store.Record{}, err
	}
	defer m.mu.Unlock()
	r, ok := m.journal[key]
	if !ok {
		return store.Record{}, recordNotFound(key)
	}
	return copyRecord(r), nil
}

// heldBy returns the started record held by executor, or the error saying
// why not. The caller holds m.mu.
func (m *Store) heldBy(key store.RecordKey, executor string) (store.Record, error) {
	r, ok := m.journal[key]
	switch {
	case !ok:
		return r, recordNotFound(key)
	case r.State != store.StateStarted:
		return r, norm.NotStarted(key, r.State)
	case r.Executor != executor:
		return r, norm.LeaseLost(key, r.Executor)
	}
	return r, nil
}

// Complete implements store.JournalStore.
func (m *Store) Complete(ctx context.Context, key store.RecordKey, executor string, state store.State, outcome []byte) error {
	if err := norm.Completion(state); err != nil {
		return err
	}
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	r, err := m.heldBy(key, executor)
	if err != nil {
		return err
	}
	r.State = state
	r.Outcome = norm.Bytes(outcome)
	r.UpdatedAt = norm.Round(m.now())
	m.journal[key] = r
	return nil
}

// TakeOver implements store.JournalStore.
func (m *Store) TakeOver(ctx context.Context, key store.RecordKey, newExecutor string, leaseUntil, now time.Time) (bool, error) {
	if newExecutor == "" {
		return false, fmt.Errorf("%w: TakeOver needs an executor", store.ErrInvalid)
	}
	if err := m.lock(ctx); err != nil {
		return false, err
	}
	defer m.mu.Unlock()
	r, ok := m.journal[key]
	if !ok {
		return false, recordNotFound(key)
	}
	if r.State != store.StateStarted || !norm.Expired(norm.MS(r.LeaseUntil), norm.MS(now)) {
		return false, nil
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

// MarkInDoubt implements store.JournalStore.
func (m *Store) MarkInDoubt(ctx context.Context, key store.RecordKey, now time.Time) (bool, error) {
	if err := m.lock(ctx); err != nil {
		return false, err
	}
	defer m.mu.Unlock()
	r, ok := m.journal[key]
	if !ok {
		return false, recordNotFound(key)
	}
	if r.State != store.StateStarted || !norm.Expired(norm.MS(r.LeaseUntil), norm.MS(now)) {
		return false, nil
	}
	r.State = store.StateInDoubt
	r.UpdatedAt = norm.Round(now)
	m.journal[key] = r
	return true, nil
}

// RenewLease implements store.JournalStore.
func (m *Store) RenewLease(ctx context.Context, key store.RecordKey, executor string, until time.Time) error {
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	r, err := m.heldBy(key, executor)
	if err != nil {
		return err
	}
	r.LeaseUntil = norm.Round(until)
	r.UpdatedAt = norm.Round(m.now())
	if !r.ExpiresAt.IsZero() && r.ExpiresAt.Before(r.LeaseUntil) {
		r.ExpiresAt = r.LeaseUntil
	}
	m.journal[key] = r
	return nil
}

// ListRuns implements store.JournalStore.
func (m *Store) ListRuns(ctx context.Context, f store.RunFilter) ([]store.Run, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	type runKey struct{ scope, run, owner string }
	runs := map[runKey]*store.Run{}
	for _, r := range m.journal {
		if !f.AnyOwner && r.Owner != f.Owner {
			continue
		}
		k := runKey{r.Scope, r.RunID, r.Owner}
		run := runs[k]
		if run == nil {
			run = &store.Run{Scope: r.Scope, RunID: r.RunID, Owner: r.Owner, FirstAt: r.CreatedAt, LastAt: r.UpdatedAt}
			runs[k] = run
		}
		run.Calls++
		switch r.State {
		case store.StateStarted:
			run.Started++
		case store.StateSucceeded:
			run.Succeeded++
		case store.StateFailed:
			run.Failed++
		case store.StateInDoubt:
			run.InDoubt++
		}
		if r.CreatedAt.Before(run.FirstAt) {
			run.FirstAt = r.CreatedAt
		}
		if r.UpdatedAt.After(run.LastAt) {
			run.LastAt = r.UpdatedAt
		}
	}
	out := make([]store.Run, 0, len(runs))
	for _, r := range runs {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b store.Run) int {
		if c := b.LastAt.Compare(a.LastAt); c != 0 {
			return c
		}
		if c := strings.Compare(a.Scope, b.Scope); c != 0 {
			return c
		}
		if c := strings.Compare(a.RunID, b.RunID); c != 0 {
			return c
		}
		return strings.Compare(a.Owner, b.Owner)
	})
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

// ListRecords implements store.JournalStore.
func (m *Store) ListRecords(ctx context.Context, scope, runID string) ([]store.Record, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	var out []store.Record
	for k, r := range m.journal {
		if k.Scope == scope && k.RunID == runID {
			out = append(out, copyRecord(r))
		}
	}
	slices.SortFunc(out, func(a, b store.Record) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ToolCallID, b.ToolCallID)
	})
	return out, nil
}

// Purge implements store.JournalStore.
func (m *Store) Purge(ctx context.Context, owner string) (int64, error) {
	if err := m.lock(ctx); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	var n int64
	for k, r := range m.journal {
		if r.Owner == owner {
			delete(m.journal, k)
			n++
		}
	}
	for id, a := range m.approvals {
		if a.Owner == owner {
			delete(m.approvals, id)
			n++
		}
	}
	n += m.purgeConnections(owner)
	return n, nil
}

// Sweep implements store.JournalStore.
func (m *Store) Sweep(ctx context.Context, now time.Time) (int64, error) {
	if err := m.lock(ctx); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	var n int64
	for k, r := range m.journal {
		if norm.Expired(norm.MS(r.ExpiresAt), norm.MS(now)) {
			delete(m.journal, k)
			n++
		}
	}
	return n, nil
}

// OldestStarted implements store.JournalStore.
func (m *Store) OldestStarted(ctx context.Context) (time.Time, error) {
	if err := m.lock(ctx); err != nil {
		return time.Time{}, err
	}
	defer m.mu.Unlock()
	var oldest time.Time
	for _, r := range m.journal {
		if r.State == store.StateStarted && (oldest.IsZero() || r.CreatedAt.Before(oldest)) {
			oldest = r.CreatedAt
		}
	}
	return oldest, nil
}

// IncrBy implements store.CounterStore.
func (m *Store) IncrBy(ctx context.Context, key string, delta int64, expiresAt time.Time) (int64, error) {
	if key == "" {
		return 0, fmt.Errorf("%w: counter key is empty", store.ErrInvalid)
	}
	nowMS := norm.MS(m.now())
	if err := m.lock(ctx); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	exp := norm.MS(expiresAt)
	c, ok := m.counters[key]
	if !ok || norm.Expired(c.expiresMS, nowMS) {
		c = counter{value: delta, expiresMS: exp}
	} else {
		c.value += delta
		if c.expiresMS == 0 || exp == 0 {
			c.expiresMS = 0
		} else if exp > c.expiresMS {
			c.expiresMS = exp
		}
	}
	m.counters[key] = c
	return c.value, nil
}

// GetCounter implements store.CounterStore.
func (m *Store) GetCounter(ctx context.Context, key string, now time.Time) (int64, error) {
	if err := m.lock(ctx); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	c, ok := m.counters[key]
	if !ok || norm.Expired(c.expiresMS, norm.MS(now)) {
		return 0, nil
	}
	return c.value, nil
}

// SweepCounters implements store.CounterStore.
func (m *Store) SweepCounters(ctx context.Context, now time.Time) (int64, error) {
	if err := m.lock(ctx); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	var n int64
	for k, c := range m.counters {
		if norm.Expired(c.expiresMS, norm.MS(now)) {
			delete(m.counters, k)
			n++
		}
	}
	return n, nil
}
