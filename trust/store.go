package trust

import (
	"context"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/memory"
)

// Store is what the trust state is kept in: the rows of what publishes
// (servers' last catalogues, for waking; a plugin's skills), their trusted
// baselines and the fleet's drift observations. store.Store, and so every
// store implementation, satisfies it.
type Store interface {
	PutServer(ctx context.Context, s store.Server) error
	GetServer(ctx context.Context, id string) (store.Server, error)
	SaveBaseline(ctx context.Context, serverID string, entries store.Baseline) (added int, err error)
	GetBaseline(ctx context.Context, serverID string) (store.Baseline, error)
	ReplaceBaseline(ctx context.Context, serverID string, entries store.Baseline) (cleared int64, err error)
	BaselineVersion(ctx context.Context, serverID string) (int64, error)
	ObserveListing(ctx context.Context, o store.Observation) (store.Observation, bool, error)
	OpenObservations(ctx context.Context, serverID string, entries bool) ([]store.Observation, error)
	DriftHeads(ctx context.Context) ([]store.DriftHead, error)
}

var _ Store = store.Store(nil)

// inProcess is the trust state a Ledger keeps itself when it is given no
// store: the in-memory store, which has every semantics judging relies on
// (its conformance suite is every store's), for the Ledger's life.
func inProcess() Store {
	st, _ := memory.New(nil) // New fails only on bad options, and nil has none
	return st
}

// readBaseline reads the baseline version, then the baseline: a trust made
// between the two reads shows as a newer version on the next poll.
func readBaseline(ctx context.Context, st Store, id string) (int64, store.Baseline, error) {
	v, err := st.BaselineVersion(ctx, id)
	if err != nil {
		return 0, nil, err
	}
	b, err := st.GetBaseline(ctx, id)
	if err != nil {
		return 0, nil, err
	}
	return v, b, nil
}
