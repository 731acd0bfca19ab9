package sqlite_test

import (
	"fmt"
	"testing"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/storetest"
)

// The smallest pool a SQLite store supports is one read connection (the
// writer has its own). There a store method that holds its read while it
// waits for another read (the start-up hang) waits for ever; both
// durabilities, group commit on and off.

func TestConcurrentPoolOfOne(t *testing.T) {
	for _, o := range []store.Options{
		{MaxConns: 1},
		{MaxConns: 1, Durability: store.DurabilityPower},
		{MaxConns: 1, GroupCommit: store.GroupCommitOff},
	} {
		t.Run(fmt.Sprintf("durability=%q,groupCommit=%q", o.Durability, o.GroupCommit), func(t *testing.T) {
			storetest.Concurrent(t, openTemp(t, &o))
		})
	}
}

// TestConformancePoolOfOne: the whole suite on a pool of one, where any
// method that nests two reads hangs at once (no concurrency needed).
func TestConformancePoolOfOne(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openTemp(t, &store.Options{MaxConns: 1}) })
}
