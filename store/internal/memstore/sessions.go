package memstore

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/norm"
)

var _ store.SessionStore = (*Store)(nil)

// sessions is the memory store's share of callers' sessions, by
// norm.FlowKey of the ID, guarded by mu.
type sessions map[string]store.Session

// PutSession implements store.SessionStore.
func (m *Store) PutSession(ctx context.Context, s store.Session) error {
	s, err := norm.Session(s)
	if err != nil {
		return err
	}
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if m.sessions == nil {
		m.sessions = sessions{}
	}
	k := norm.FlowKey(s.ID)
	if old, ok := m.sessions[k]; ok && old.Closed {
		return fmt.Errorf("%w: the session is closed", store.ErrConflict)
	}
	m.sessions[k] = s
	return nil
}

// Session implements store.SessionStore.
func (m *Store) Session(ctx context.Context, id string, now time.Time) (store.Session, bool, error) {
	if err := m.lock(ctx); err != nil {
		return store.Session{}, false, err
	}
	defer m.mu.Unlock()
	s, ok := m.sessions[norm.FlowKey(id)]
	if !ok || id == "" || norm.Expired(norm.MS(s.ExpiresAt), norm.MS(now)) {
		return store.Session{}, false, nil
	}
	s.State = norm.Bytes(s.State)
	return s, true, nil
}

// liveSession returns the session of id, its key, and whether it is live
// (m.mu held).
func (m *Store) liveSession(id string, now time.Time) (store.Session, string, bool) {
	k := norm.FlowKey(id)
	s, ok := m.sessions[k]
	if !ok || id == "" || s.Closed || norm.Expired(norm.MS(s.ExpiresAt), norm.MS(now)) {
		return s, k, false
	}
	return s, k, true
}

// TouchSession implements store.SessionStore.
func (m *Store) TouchSession(ctx context.Context, id string, now, until time.Time) (bool, error) {
	if err := m.lock(ctx); err != nil {
		return false, err
	}
	defer m.mu.Unlock()
	s, k, ok := m.liveSession(id, now)
	if !ok {
		return false, nil
	}
	if until = norm.Round(until); until.After(s.ExpiresAt) {
		s.ExpiresAt = until
	}
	m.sessions[k] = s
	return true, nil
}

// SwapSession implements store.SessionStore.
func (m *Store) SwapSession(ctx context.Context, id string, old, state []byte, now time.Time) (bool, error) {
	if err := m.lock(ctx); err != nil {
		return false, err
	}
	defer m.mu.Unlock()
	s, k, ok := m.liveSession(id, now)
	if !ok || !bytes.Equal(norm.Bytes(s.State), norm.Bytes(old)) {
		return false, nil
	}
	s.State = norm.Bytes(state)
	m.sessions[k] = s
	return true, nil
}

// CloseSession implements store.SessionStore.
func (m *Store) CloseSession(ctx context.Context, id string, now time.Time) (bool, error) {
	if err := m.lock(ctx); err != nil {
		return false, err
	}
	defer m.mu.Unlock()
	s, k, ok := m.liveSession(id, now)
	if !ok {
		return false, nil
	}
	s.Closed = true
	m.sessions[k] = s
	return true, nil
}

// CountSessions implements store.SessionStore.
func (m *Store) CountSessions(ctx context.Context, subject string, now time.Time) (int, error) {
	if err := m.lock(ctx); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	n := 0
	for _, s := range m.sessions {
		if s.Subject == subject && !s.Closed && !norm.Expired(norm.MS(s.ExpiresAt), norm.MS(now)) {
			n++
		}
	}
	return n, nil
}

// SweepSessions implements store.SessionStore.
func (m *Store) SweepSessions(ctx context.Context, now time.Time) (int64, error) {
	if err := m.lock(ctx); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	var n int64
	for k, s := range m.sessions {
		if norm.Expired(norm.MS(s.ExpiresAt), norm.MS(now)) {
			delete(m.sessions, k)
			n++
		}
	}
	return n, nil
}
