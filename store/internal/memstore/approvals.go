package memstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/norm"
)

// cloneApproval returns a copy of a that shares no slice with the store.
func cloneApproval(a store.Approval) store.Approval {
	a.Args = norm.Bytes(a.Args)
	a.Decisions = slices.Clone(a.Decisions)
	return a
}

// liveFor returns the live approval of key, if any. m.mu is held.
func (m *Store) liveFor(key store.RecordKey) (store.Approval, bool) {
	for _, a := range m.approvals {
		if a.RecordKey == key && a.State.Live() {
			return a, true
		}
	}
	return store.Approval{}, false
}

// CreateApproval implements store.ApprovalStore.
func (m *Store) CreateApproval(ctx context.Context, a store.Approval, maxPending int) (store.Approval, bool, error) {
	a, err := norm.Approval(a, maxPending, m.now())
	if err != nil {
		return store.Approval{}, false, err
	}
	if err := m.lock(ctx); err != nil {
		return store.Approval{}, false, err
	}
	defer m.mu.Unlock()
	now := a.CreatedAt // expiry and the bound are judged when it is asked
	if live, ok := m.liveFor(a.RecordKey); ok {
		if !live.Expired(now) {
			return cloneApproval(live), false, nil
		}
		live.State = store.ApprovalExpired
		m.approvals[live.ID] = live
	}
	if _, used := m.approvals[a.ID]; used {
		return store.Approval{}, false, fmt.Errorf("%w: approval ID %q is already used", store.ErrConflict, a.ID)
	}
	if maxPending > 0 {
		n, next := 0, int64(0)
		for _, p := range m.approvals {
			if p.Owner == a.Owner && p.State == store.ApprovalPending && !p.Expired(now) {
				n++
				if e := norm.MS(p.ExpiresAt); e != 0 && (next == 0 || e < next) {
					next = e
				}
			}
		}
		if n >= maxPending {
			return store.Approval{}, false, norm.TooManyPending(a.Owner, maxPending, next)
		}
	}
	m.approvals[a.ID] = a
	return cloneApproval(a), true, nil
}

// GetApproval implements store.ApprovalStore.
func (m *Store) GetApproval(ctx context.Context, id string) (store.Approval, error) {
	if err := m.lock(ctx); err != nil {
		return store.Approval{}, err
	}
	defer m.mu.Unlock()
	a, ok := m.approvals[id]
	if !ok {
		return store.Approval{}, norm.NotFound("approval %q", id)
	}
	return cloneApproval(a), nil
}

// GetApprovalByCall implements store.ApprovalStore.
func (m *Store) GetApprovalByCall(ctx context.Context, key store.RecordKey) (store.Approval, error) {
	if err := m.lock(ctx); err != nil {
		return store.Approval{}, err
	}
	defer m.mu.Unlock()
	if a, ok := m.liveFor(key); ok {
		return cloneApproval(a), nil
	}
	return store.Approval{}, norm.NotFound("approval for %s/%s/%s", key.Scope, key.RunID, key.ToolCallID)
}

// ListApprovals implements store.ApprovalStore.
func (m *Store) ListApprovals(ctx context.Context, state store.ApprovalState) ([]store.Approval, error) {
	if err := norm.ApprovalFilter(state); err != nil {
		return nil, err
	}
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	var out []store.Approval
	for _, a := range m.approvals {
		if state == "" || a.State == state {
			out = append(out, cloneApproval(a))
		}
	}
	slices.SortFunc(out, func(a, b store.Approval) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// DecideApproval implements store.ApprovalStore.
func (m *Store) DecideApproval(ctx context.Context, id string, approve bool, by string, now time.Time) (store.Approval, error) {
	if err := norm.Decider(by); err != nil {
		return store.Approval{}, err
	}
	if now.IsZero() {
		now = m.now()
	}
	now = norm.Round(now)
	if err := m.lock(ctx); err != nil {
		return store.Approval{}, err
	}
	defer m.mu.Unlock()
	a, ok := m.approvals[id]
	if !ok {
		return store.Approval{}, norm.NotFound("approval %q", id)
	}
	if !norm.Decidable(a.State) || a.Expired(now) {
		return store.Approval{}, norm.WhyNotDecided(a, now)
	}
	a.State = norm.Decided(approve)
	a.DecidedAt = now
	a.DecidedBy = by
	a.Decisions = append(slices.Clone(a.Decisions), store.Decision{Verdict: a.State, By: by, At: now})
	m.approvals[id] = a
	return cloneApproval(a), nil
}

// UseApproval implements store.ApprovalStore.
func (m *Store) UseApproval(ctx context.Context, id string, now time.Time) (store.Approval, error) {
	if now.IsZero() {
		now = m.now()
	}
	now = norm.Round(now)
	if err := m.lock(ctx); err != nil {
		return store.Approval{}, err
	}
	defer m.mu.Unlock()
	a, ok := m.approvals[id]
	if !ok {
		return store.Approval{}, norm.NotFound("approval %q", id)
	}
	if a.State != store.ApprovalApproved || a.Expired(now) {
		return store.Approval{}, norm.WhyNotUsed(a, now)
	}
	a.State = store.ApprovalUsed
	a.UsedAt = now
	m.approvals[id] = a
	return cloneApproval(a), nil
}

// SupersedeApproval implements store.ApprovalStore.
func (m *Store) SupersedeApproval(ctx context.Context, id, contract string) (bool, error) {
	if err := m.lock(ctx); err != nil {
		return false, err
	}
	defer m.mu.Unlock()
	a, ok := m.approvals[id]
	if !ok {
		return false, norm.NotFound("approval %q", id)
	}
	if !a.State.Live() || a.Contract == contract {
		return false, nil
	}
	a.State = store.ApprovalExpired
	m.approvals[id] = a
	return true, nil
}

// SweepApprovals implements store.ApprovalStore.
func (m *Store) SweepApprovals(ctx context.Context, now time.Time) (int64, error) {
	if err := m.lock(ctx); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	var n int64
	for id, a := range m.approvals {
		if norm.Expired(norm.MS(a.ExpiresAt), norm.MS(now)) {
			delete(m.approvals, id)
			n++
		}
	}
	return n, nil
}
