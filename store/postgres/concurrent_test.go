package postgres_test

import (
	"testing"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/storetest"
)

// The smallest pool a PostgreSQL store supports is one connection: there
// a store method that holds a connection (open rows, a transaction) while
// it waits for another waits for ever, as the SQLite store's start-up
// hang did; group commit on and off.

func TestConcurrentPoolOfOne(t *testing.T) {
	for _, gc := range []store.GroupCommit{store.GroupCommitDefault, store.GroupCommitOff} {
		t.Run("groupCommit="+string(gc), func(t *testing.T) {
			storetest.Concurrent(t, openFresh(t, &store.Options{MaxConns: 1, GroupCommit: gc}))
		})
	}
}

// TestConformancePoolOfOne: the whole suite on a pool of one, where any
// method that nests two statements hangs at once.
func TestConformancePoolOfOne(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openFresh(t, &store.Options{MaxConns: 1}) })
}
