package memstore

import (
	"cmp"
	"context"
	"maps"
	"slices"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/norm"
)

// copyObservation returns o with its own Changes and, when entries is
// set, its own Entries (nil otherwise).
func copyObservation(o store.Observation, entries bool) store.Observation {
	o.Changes = norm.Bytes(o.Changes)
	if entries {
		o.Entries = o.Entries.Clone()
	} else {
		o.Entries = nil
	}
	return o
}

func byID(o store.Observation, id int64) int { return cmp.Compare(o.ID, id) }

// ObserveListing implements store.DriftStore.
func (m *Store) ObserveListing(ctx context.Context, o store.Observation) (store.Observation, bool, error) {
	o, err := norm.Observation(o, m.now())
	if err != nil {
		return store.Observation{}, false, err
	}
	if _, err := m.lockServer(ctx, o.ServerID); err != nil {
		return store.Observation{}, false, err
	}
	defer m.mu.Unlock()
	for i := len(m.observations) - 1; i >= 0; i-- {
		prev := &m.observations[i]
		if prev.ServerID != o.ServerID || prev.SeenBy != o.SeenBy || prev.BaselineVersion != o.BaselineVersion {
			continue
		}
		if prev.Listing != o.Listing {
			break
		}
		if o.SeenAt.After(prev.LastSeenAt) {
			prev.LastSeenAt = o.SeenAt
		}
		return copyObservation(*prev, true), false, nil
	}
	m.lastObservation++
	o.ID = m.lastObservation
	m.observations = append(m.observations, o)
	return copyObservation(o, true), true, nil
}

// open returns the open observations of the server id (by ascending ID):
// the latest of each instance under the server's current baseline version,
// unless it was trusted. The caller holds m.mu.
func (m *Store) open(id string) []store.Observation {
	version := m.servers[id].BaselineVersion
	latest := map[string]int{} // instance -> index in m.observations
	for i, o := range m.observations {
		if o.ServerID == id && o.BaselineVersion == version {
			latest[o.SeenBy] = i // ascending: the last one wins
		}
	}
	var out []store.Observation
	for _, i := range slices.Sorted(maps.Values(latest)) {
		if o := m.observations[i]; o.TrustedAt.IsZero() {
			out = append(out, o)
		}
	}
	return out
}

// OpenObservations implements store.DriftStore.
func (m *Store) OpenObservations(ctx context.Context, serverID string, entries bool) ([]store.Observation, error) {
	var ids []string
	if serverID == "" {
		if err := m.lock(ctx); err != nil {
			return nil, err
		}
		ids = slices.Collect(maps.Keys(m.servers))
	} else {
		if _, err := m.lockServer(ctx, serverID); err != nil {
			return nil, err
		}
		ids = []string{serverID}
	}
	defer m.mu.Unlock()
	out := []store.Observation{}
	for _, id := range ids {
		for _, o := range m.open(id) {
			out = append(out, copyObservation(o, entries))
		}
	}
	slices.SortFunc(out, func(a, b store.Observation) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// GetObservation implements store.DriftStore.
func (m *Store) GetObservation(ctx context.Context, id int64) (store.Observation, error) {
	if err := m.lock(ctx); err != nil {
		return store.Observation{}, err
	}
	defer m.mu.Unlock()
	i, found := slices.BinarySearchFunc(m.observations, id, byID)
	if !found {
		return store.Observation{}, norm.ObservationNotFound(id)
	}
	return copyObservation(m.observations[i], true), nil
}

// TrustListing implements store.DriftStore.
func (m *Store) TrustListing(ctx context.Context, serverID, listing string) (store.Observation, error) {
	if err := norm.TrustArgs(serverID, listing); err != nil {
		return store.Observation{}, err
	}
	s, err := m.lockServer(ctx, serverID)
	if err != nil {
		return store.Observation{}, err
	}
	defer m.mu.Unlock()
	open := m.open(serverID)
	var latest store.Observation
	if len(open) > 0 {
		latest = open[len(open)-1]
	}
	if latest.ID == 0 || latest.Listing != listing {
		return store.Observation{}, norm.Stale(serverID, listing, copyObservation(latest, false))
	}
	m.replace(s, latest.Entries)
	i, _ := slices.BinarySearchFunc(m.observations, latest.ID, byID)
	m.observations[i].TrustedAt = norm.Round(m.now())
	return copyObservation(m.observations[i], true), nil
}

// DriftHeads implements store.DriftStore.
func (m *Store) DriftHeads(ctx context.Context) ([]store.DriftHead, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	last := map[string]int64{}
	for _, o := range m.observations {
		last[o.ServerID] = o.ID // ascending
	}
	out := make([]store.DriftHead, 0, len(m.servers))
	for _, id := range slices.Sorted(maps.Keys(m.servers)) {
		out = append(out, store.DriftHead{ServerID: id, BaselineVersion: m.servers[id].BaselineVersion, LastObservation: last[id]})
	}
	return out, nil
}
