// Package memory is an in-memory store.Store: maps behind one mutex, with
// the same semantics as the SQL implementations.
//
//	st, err := memory.New(nil) // or dsn.Open(ctx, "memory:", nil)
//	defer st.Close()
//	j, err := durable.NewJournal(st, &durable.JournalOptions{Approvals: st})
//
// Times are rounded to milliseconds, UTC, as the SQL stores read them back.
// Nothing survives Close or the process. Use it in tests and for ephemeral
// runs.
package memory

import (
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/memstore"
)

// Store is an in-memory store.Store: every method of store.Store and its
// parts (store.JournalStore, store.ApprovalStore, ...). Its zero value is
// not usable; call New.
type Store struct {
	*memstore.Store
}

var _ store.Store = (*Store)(nil)

// New returns an empty store. Only opts.Now is used.
func New(opts *store.Options) (*Store, error) {
	s, err := memstore.New(opts)
	if err != nil {
		return nil, err
	}
	return &Store{Store: s}, nil
}
