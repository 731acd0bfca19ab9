package ephemeral

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

// Store is where a Toolset without Options.Store keeps its server rows,
// trust baselines and drift observations: in this process, for its life.
// It is not a store the Toolset picks for its caller (nothing outlives the
// Toolset, nothing is shared); it is the absence of one, with the
// semantics of store.ServerStore and store.DriftStore that drift judging
// relies on: baselines are insert-only, ReplaceBaseline is the only way to
// replace one, and every change bumps the server's baseline version. It
// refuses what every store refuses (store.Baseline.Validate,
// store.Observation.Validate) so that a toolset behaves the same with and
// without a store. It is safe for concurrent use.
type Store struct {
	mu        sync.Mutex
	servers   map[string]store.Server
	baselines map[string]store.Baseline
	// observations by ascending ID; last is the highest ID given.
	observations []store.Observation
	last         int64
}

// New returns an empty Store.
func New() *Store {
	return &Store{servers: map[string]store.Server{}, baselines: map[string]store.Baseline{}}
}

func notFound(id string) error { return fmt.Errorf("%w: server %q", store.ErrNotFound, id) }

// now is the time as a store reads it back: UTC, milliseconds.
func now() time.Time { return time.UnixMilli(time.Now().UnixMilli()).UTC() }

// PutServer inserts or replaces a row (a copy of its catalogue), keeping
// the row's baseline and baseline version.
func (e *Store) PutServer(_ context.Context, s store.Server) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	s.BaselineVersion = e.servers[s.ID].BaselineVersion
	s.Catalogue = bytes.Clone(s.Catalogue)
	e.servers[s.ID] = s
	return nil
}

// GetServer returns a copy of a row, or store.ErrNotFound.
func (e *Store) GetServer(_ context.Context, id string) (store.Server, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.servers[id]
	if !ok {
		return store.Server{}, notFound(id)
	}
	s.Catalogue = bytes.Clone(s.Catalogue)
	return s, nil
}

// SaveBaseline adds the entries the server's baseline lacks (never
// replacing one: same Kind and Name) and bumps its version when it added
// any. It returns how many it added, store.ErrNotFound when the row does
// not exist, or store.ErrInvalid (nothing saved) when an entry fails
// store.Baseline.Validate.
func (e *Store) SaveBaseline(_ context.Context, id string, entries store.Baseline) (int, error) {
	if err := entries.Validate(); err != nil {
		return 0, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.servers[id]
	if !ok {
		return 0, notFound(id)
	}
	b := e.baselines[id]
	if b == nil {
		b = store.Baseline{}
		e.baselines[id] = b
	}
	added := 0
	for k, v := range entries.Clone() {
		if _, exists := b[k]; !exists {
			b[k] = v
			added++
		}
	}
	if added > 0 {
		s.BaselineVersion++
		e.servers[id] = s
	}
	return added, nil
}

// GetBaseline returns a copy of the server's baseline (empty, non-nil,
// when none is recorded), or store.ErrNotFound.
func (e *Store) GetBaseline(_ context.Context, id string) (store.Baseline, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.servers[id]; !ok {
		return nil, notFound(id)
	}
	return e.baselines[id].Clone(), nil
}

// ReplaceBaseline makes entries the server's whole baseline, bumps its
// version once and returns how many entries it removed; store.ErrNotFound
// or store.ErrInvalid (nothing changed) as SaveBaseline.
func (e *Store) ReplaceBaseline(_ context.Context, id string, entries store.Baseline) (int64, error) {
	if err := entries.Validate(); err != nil {
		return 0, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.servers[id]
	if !ok {
		return 0, notFound(id)
	}
	n := int64(len(e.baselines[id]))
	e.baselines[id] = entries.Clone()
	s.BaselineVersion++
	e.servers[id] = s
	return n, nil
}

// BaselineVersion returns the server's baseline version, or
// store.ErrNotFound.
func (e *Store) BaselineVersion(_ context.Context, id string) (int64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.servers[id]
	if !ok {
		return 0, notFound(id)
	}
	return s.BaselineVersion, nil
}
