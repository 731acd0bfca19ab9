package upauth

import (
	"context"
	"encoding/base64"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// A subject's refused calls to a user server share one connect flow per
// replica: the first refusal stores a flow, the next ones hand out the same
// connect URL while it is open (see [Manager.openFlow]). The store keeps
// only a flow's ID hash, so the ID is remembered here, in memory; whether
// the flow is still unused is read from the store through a spent marker:
// a flow taken by its connect URL, on any replica, leaves a marker row
// (spentID) that the replica which made it takes on its next refusal, and
// then makes a new flow.

// MaxOpenFlows bounds the open connect flows a Manager remembers (one per
// subject and server); past it the one closest to expiring is forgotten
// (that subject's next refusal stores a new flow).
const MaxOpenFlows = 10000

// openFlow is the connect flow a Manager handed out for (server, subject).
type openFlow struct {
	mu      sync.Mutex // one refusal at a time decides
	id      string
	expires atomic.Int64 // Unix ns; read without mu by the bound
}

// spentID is the ID of the marker a flow's connect URL leaves when it is
// taken. It is not a well-formed flow ID (validID), so no connect URL or
// callback can take it.
func spentID(id string) string { return "spent." + id }

// validID reports whether id is a connect flow ID as randomID makes them:
// 32 bytes, base64url without padding. A connect URL with anything else
// (a state, a spent marker) is refused before the store is asked.
func validID(id string) bool {
	if len(id) != 43 {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(id)
	return err == nil
}

// slot returns k's open flow, made empty when there is none.
func (m *Manager) slot(k key) *openFlow {
	m.mu.Lock()
	defer m.mu.Unlock()
	if f := m.open[k]; f != nil {
		return f
	}
	if len(m.open) >= MaxOpenFlows {
		now := m.now()
		var soonest key
		var at time.Time
		for ok, f := range m.open {
			exp := time.Unix(0, f.expires.Load())
			if !now.Before(exp) {
				delete(m.open, ok)
			} else if at.IsZero() || exp.Before(at) {
				soonest, at = ok, exp
			}
		}
		if len(m.open) >= MaxOpenFlows {
			delete(m.open, soonest)
		}
	}
	f := &openFlow{}
	m.open[k] = f
	return f
}

// openFlow returns the ID of a connect flow for (server, subject) and how
// long it stays usable: the one this Manager handed out last when more
// than half of connect.flowTTL is left of it and no connect URL took it
// (its spent marker is not in the store), else a new one, stored.
func (m *Manager) openFlow(ctx context.Context, server, subject string) (string, time.Duration, error) {
	f := m.slot(key{server, subject})
	f.mu.Lock()
	defer f.mu.Unlock()
	now := m.now()
	left := time.Unix(0, f.expires.Load()).Sub(now)
	if f.id != "" && left > m.o.FlowTTL/2 {
		_, spent, err := m.o.Flows.TakeFlow(ctx, spentID(f.id), now)
		if err != nil {
			return "", 0, fmt.Errorf("upauth: reading a connect flow: %w", err)
		}
		if !spent {
			return f.id, left, nil
		}
	}
	id, err := randomID()
	if err != nil {
		return "", 0, err
	}
	exp := now.Add(m.o.FlowTTL)
	if err := m.o.Flows.PutFlow(ctx, Flow{ID: id, Server: server, Subject: subject, ExpiresAt: exp}); err != nil {
		return "", 0, fmt.Errorf("upauth: storing a connect flow: %w", err)
	}
	f.id = id
	f.expires.Store(exp.UnixNano())
	return id, m.o.FlowTTL, nil
}

// markSpent stores the spent marker of f, a connect flow just taken by its
// URL, so that the replica which handed it out stops handing it out.
func (m *Manager) markSpent(ctx context.Context, f Flow) {
	err := m.o.Flows.PutFlow(ctx, Flow{ID: spentID(f.ID), Server: f.Server, Subject: f.Subject, ExpiresAt: f.ExpiresAt})
	if err != nil {
		m.log.Warn("upauth: marking a connect flow used", "server", f.Server, "err", err)
	}
}
