package upauth

import (
	"context"
	"sync"
	"time"
)

// MemoryFlows is a [Flows] in this process's memory (one replica, tests).
type MemoryFlows struct {
	mu    sync.Mutex
	flows map[string]Flow
}

// NewMemoryFlows returns an empty MemoryFlows.
func NewMemoryFlows() *MemoryFlows { return &MemoryFlows{flows: map[string]Flow{}} }

// PutFlow implements [Flows].
func (m *MemoryFlows) PutFlow(_ context.Context, f Flow) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, g := range m.flows {
		if !time.Now().Before(g.ExpiresAt) {
			delete(m.flows, id)
		}
	}
	m.flows[f.ID] = f
	return nil
}

// TakeFlow implements [Flows].
func (m *MemoryFlows) TakeFlow(_ context.Context, id string, now time.Time) (Flow, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, ok := m.flows[id]
	delete(m.flows, id)
	if !ok || !now.Before(f.ExpiresAt) {
		return Flow{}, false, nil
	}
	return f, true, nil
}
