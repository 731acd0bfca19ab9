package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/sqlite"
	"github.com/gatehouse-dev/gatehouse/store/storetest"
)

// BenchmarkClaimComplete: one claim plus one completion (two transactions)
// per op, on a file in the test's temporary directory.
func BenchmarkClaimComplete(b *testing.B) {
	for _, d := range []store.Durability{store.DurabilityProcess, store.DurabilityPower} {
		b.Run(string(d), func(b *testing.B) {
			s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"), &store.Options{Durability: d})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			storetest.BenchClaimComplete(b, s)
		})
	}
}

// BenchmarkDrift: the drift record on a file (storetest.BenchDrift).
func BenchmarkDrift(b *testing.B) {
	s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	storetest.BenchDrift(b, s)
}
