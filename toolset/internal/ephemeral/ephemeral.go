package ephemeral

import (
	"context"
	"maps"
	"sync"

	"github.com/gatehouse-dev/gatehouse/store"
)

// Store is where a Toolset without Options.Store keeps its server rows
// and trust baselines: in this process, for its life. It is not a store
// the Toolset picks for its caller (nothing outlives the Toolset, nothing
// is shared); it is the absence of one, with the semantics of
// store.ServerStore that drift judging relies on: baselines are
// insert-only, clearing is the only way to replace one, and every change
// bumps the server's baseline version. It is safe for concurrent use.
type Store struct {
	mu        sync.Mutex
	servers   map[string]store.Server
	baselines map[string]map[string]string
}

// New returns an empty Store.
func New() *Store {
	return &Store{servers: map[string]store.Server{}, baselines: map[string]map[string]string{}}
}

// PutServer inserts or replaces a row (a copy of its catalogue), keeping
// the row's baseline and baseline version.
func (e *Store) PutServer(_ context.Context, s store.Server) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	s.BaselineVersion = e.servers[s.ID].BaselineVersion
	s.Catalogue = append([]byte(nil), s.Catalogue...)
	e.servers[s.ID] = s
	return nil
}

// GetServer returns a copy of a row, or store.ErrNotFound.
func (e *Store) GetServer(_ context.Context, id string) (store.Server, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.servers[id]
	if !ok {
		return store.Server{}, store.ErrNotFound
	}
	s.Catalogue = append([]byte(nil), s.Catalogue...)
	return s, nil
}

// SaveBaseline adds the entries the server's baseline lacks (never
// replacing one) and bumps its version when it added any. It returns how
// many it added, or store.ErrNotFound when the row does not exist.
func (e *Store) SaveBaseline(_ context.Context, id string, fps map[string]string) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.servers[id]
	if !ok {
		return 0, store.ErrNotFound
	}
	b := e.baselines[id]
	if b == nil {
		b = map[string]string{}
		e.baselines[id] = b
	}
	added := 0
	for k, fp := range fps {
		if _, exists := b[k]; !exists {
			b[k] = fp
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
func (e *Store) GetBaseline(_ context.Context, id string) (map[string]string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.servers[id]; !ok {
		return nil, store.ErrNotFound
	}
	out := maps.Clone(e.baselines[id])
	if out == nil {
		out = map[string]string{}
	}
	return out, nil
}

// ClearBaseline removes the server's whole baseline, bumps its version and
// returns how many entries it removed, or store.ErrNotFound.
func (e *Store) ClearBaseline(_ context.Context, id string) (int64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.servers[id]
	if !ok {
		return 0, store.ErrNotFound
	}
	n := int64(len(e.baselines[id]))
	delete(e.baselines, id)
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
		return 0, store.ErrNotFound
	}
	return s.BaselineVersion, nil
}
