package ephemeral

import (
	"bytes"
	"cmp"
	"context"
	"maps"
	"slices"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

// copyObservation returns o with its own Changes and, when entries is
// set, its own Entries (nil otherwise).
func copyObservation(o store.Observation, entries bool) store.Observation {
	if len(o.Changes) == 0 {
		o.Changes = nil
	} else {
		o.Changes = bytes.Clone(o.Changes)
	}
	if entries {
		o.Entries = o.Entries.Clone()
	} else {
		o.Entries = nil
	}
	return o
}

// ObserveListing records o as store.DriftStore.ObserveListing does: unless
// the latest observation by o.SeenBy of o.ServerID under o.BaselineVersion
// has the same Listing (then only its LastSeenAt moves, forward, and it is
// returned with added false), o is added with the next ID, SeenAt from the
// clock when zero and LastSeenAt equal to it. store.ErrNotFound when the
// row does not exist; store.ErrInvalid as store.Observation.Validate.
func (e *Store) ObserveListing(_ context.Context, o store.Observation) (store.Observation, bool, error) {
	if err := o.Validate(); err != nil {
		return store.Observation{}, false, err
	}
	if o.SeenAt.IsZero() {
		o.SeenAt = now()
	}
	o.SeenAt = time.UnixMilli(o.SeenAt.UnixMilli()).UTC()
	o.LastSeenAt, o.TrustedAt = o.SeenAt, time.Time{}
	o = copyObservation(o, true)
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.servers[o.ServerID]; !ok {
		return store.Observation{}, false, notFound(o.ServerID)
	}
	for i := len(e.observations) - 1; i >= 0; i-- {
		prev := &e.observations[i]
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
	e.last++
	o.ID = e.last
	e.observations = append(e.observations, o)
	return copyObservation(o, true), true, nil
}

// OpenObservations returns, for serverID (every server when ""), the latest
// observation of each instance made under the server's current baseline
// version and not trusted, by ascending ID; Entries only when entries is
// set. store.ErrNotFound when a named server has no row.
func (e *Store) OpenObservations(_ context.Context, serverID string, entries bool) ([]store.Observation, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.servers[serverID]; serverID != "" && !ok {
		return nil, notFound(serverID)
	}
	type instance struct{ server, seenBy string }
	latest := map[instance]int{} // index in e.observations
	for i, o := range e.observations {
		s, ok := e.servers[o.ServerID]
		if ok && (serverID == "" || o.ServerID == serverID) && o.BaselineVersion == s.BaselineVersion {
			latest[instance{o.ServerID, o.SeenBy}] = i // ascending: the last one wins
		}
	}
	out := []store.Observation{}
	for _, i := range slices.Sorted(maps.Values(latest)) {
		if o := e.observations[i]; o.TrustedAt.IsZero() {
			out = append(out, copyObservation(o, entries))
		}
	}
	return out, nil
}

// DriftHeads returns the head of every server, ordered by ID.
func (e *Store) DriftHeads(_ context.Context) ([]store.DriftHead, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	last := map[string]int64{}
	for _, o := range e.observations {
		last[o.ServerID] = max(last[o.ServerID], o.ID)
	}
	out := make([]store.DriftHead, 0, len(e.servers))
	for _, id := range slices.SortedFunc(maps.Keys(e.servers), cmp.Compare) {
		out = append(out, store.DriftHead{ServerID: id, BaselineVersion: e.servers[id].BaselineVersion, LastObservation: last[id]})
	}
	return out, nil
}
