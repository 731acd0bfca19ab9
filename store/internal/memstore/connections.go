package memstore

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/norm"
)

var _ store.ConnectionStore = (*Store)(nil)

// connKey is (server, subject).
type connKey struct{ server, subject string }

type lease struct {
	holder string
	until  int64 // unix ms
}

// conns is the memory store's share of the token vault, guarded by mu.
type conns struct {
	rows   map[connKey]store.Connection
	leases map[connKey]lease
	flows  map[string]store.ConnectFlow // by norm.FlowKey
}

func (c *conns) init() {
	if c.rows == nil {
		c.rows, c.leases, c.flows = map[connKey]store.Connection{}, map[connKey]lease{}, map[string]store.ConnectFlow{}
	}
}

func copyConn(c store.Connection) store.Connection {
	c.Sealed = norm.Bytes(c.Sealed)
	return c
}

// PutConnection implements store.ConnectionStore.
func (m *Store) PutConnection(ctx context.Context, c store.Connection) error {
	c, err := norm.Connection(c, m.now())
	if err != nil {
		return err
	}
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	m.conns.init()
	k := connKey{c.Server, c.Subject}
	if old, ok := m.conns.rows[k]; ok {
		c.CreatedAt = old.CreatedAt
		if c.Account == "" {
			c.Account = old.Account
		}
	}
	m.conns.rows[k] = c
	return nil
}

// SwapConnection implements store.ConnectionStore.
func (m *Store) SwapConnection(ctx context.Context, c store.Connection, old []byte) (bool, error) {
	c, err := norm.Connection(c, m.now())
	if err != nil {
		return false, err
	}
	if err := m.lock(ctx); err != nil {
		return false, err
	}
	defer m.mu.Unlock()
	m.conns.init()
	k := connKey{c.Server, c.Subject}
	cur, ok := m.conns.rows[k]
	if !ok || !bytes.Equal(cur.Sealed, old) {
		return false, nil
	}
	cur.Sealed, cur.KeyID, cur.UpdatedAt = c.Sealed, c.KeyID, c.UpdatedAt
	m.conns.rows[k] = cur
	return true, nil
}

// Connection implements store.ConnectionStore.
func (m *Store) Connection(ctx context.Context, server, subject string) (store.Connection, bool, error) {
	if err := m.lock(ctx); err != nil {
		return store.Connection{}, false, err
	}
	defer m.mu.Unlock()
	c, ok := m.conns.rows[connKey{server, subject}]
	if !ok {
		return store.Connection{}, false, nil
	}
	return copyConn(c), true, nil
}

// Connections implements store.ConnectionStore.
func (m *Store) Connections(ctx context.Context, subject string) ([]store.Connection, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	out := []store.Connection{}
	for _, c := range m.conns.rows {
		if subject == "" || c.Subject == subject {
			out = append(out, copyConn(c))
		}
	}
	slices.SortFunc(out, func(a, b store.Connection) int {
		if c := strings.Compare(a.Server, b.Server); c != 0 {
			return c
		}
		return strings.Compare(a.Subject, b.Subject)
	})
	return out, nil
}

// DeleteConnections implements store.ConnectionStore.
func (m *Store) DeleteConnections(ctx context.Context, server, subject string) (int, error) {
	if err := m.lock(ctx); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	n := 0
	for k := range m.conns.rows {
		if k.subject == subject && (server == "" || k.server == server) {
			delete(m.conns.rows, k)
			n++
		}
	}
	for k := range m.conns.leases {
		if k.subject == subject && (server == "" || k.server == server) {
			delete(m.conns.leases, k)
		}
	}
	return n, nil
}

// LeaseRefresh implements store.ConnectionStore.
func (m *Store) LeaseRefresh(ctx context.Context, server, subject, holder string, until time.Time) (bool, error) {
	if err := norm.Lease(server, holder); err != nil {
		return false, err
	}
	if err := m.lock(ctx); err != nil {
		return false, err
	}
	defer m.mu.Unlock()
	m.conns.init()
	k := connKey{server, subject}
	if l, ok := m.conns.leases[k]; ok && l.holder != holder && l.until > norm.MS(m.now()) {
		return false, nil
	}
	m.conns.leases[k] = lease{holder: holder, until: norm.MS(until)}
	return true, nil
}

// PutConnectFlow implements store.ConnectionStore.
func (m *Store) PutConnectFlow(ctx context.Context, f store.ConnectFlow) error {
	f, err := norm.ConnectFlow(f)
	if err != nil {
		return err
	}
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	m.conns.init()
	k := norm.FlowKey(f.ID)
	if _, ok := m.conns.flows[k]; ok {
		return fmt.Errorf("%w: connect flow ID already used", store.ErrConflict)
	}
	m.conns.flows[k] = f
	return nil
}

// TakeConnectFlow implements store.ConnectionStore.
func (m *Store) TakeConnectFlow(ctx context.Context, id string, now time.Time) (store.ConnectFlow, bool, error) {
	if err := m.lock(ctx); err != nil {
		return store.ConnectFlow{}, false, err
	}
	defer m.mu.Unlock()
	k := norm.FlowKey(id)
	f, ok := m.conns.flows[k]
	if !ok || id == "" {
		return store.ConnectFlow{}, false, nil
	}
	delete(m.conns.flows, k)
	if norm.Expired(norm.MS(f.ExpiresAt), norm.MS(now)) {
		return store.ConnectFlow{}, false, nil
	}
	f.Sealed = norm.Bytes(f.Sealed)
	return f, true, nil
}

// SweepConnectFlows implements store.ConnectionStore.
func (m *Store) SweepConnectFlows(ctx context.Context, now time.Time) (int64, error) {
	if err := m.lock(ctx); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	var n int64
	for k, f := range m.conns.flows {
		if norm.Expired(norm.MS(f.ExpiresAt), norm.MS(now)) {
			delete(m.conns.flows, k)
			n++
		}
	}
	return n, nil
}

// purgeConnections deletes subject's connections, leases, flows and
// sessions; the
// service subject ("") is never purged. The caller holds mu.
func (m *Store) purgeConnections(subject string) int64 {
	if subject == "" {
		return 0
	}
	var n int64
	for k := range m.conns.rows {
		if k.subject == subject {
			delete(m.conns.rows, k)
			n++
		}
	}
	for k := range m.conns.leases {
		if k.subject == subject {
			delete(m.conns.leases, k)
			n++
		}
	}
	for k, s := range m.sessions {
		if s.Subject == subject {
			delete(m.sessions, k)
			n++
		}
	}
	for k, f := range m.conns.flows {
		if f.Subject == subject {
			delete(m.conns.flows, k)
			n++
		}
	}
	return n
}
