package sqlite_test

import (
	"fmt"
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
			storetest.BenchClaimComplete(b, s, 1)
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

// BenchmarkGroupCommit: conc goroutines each doing claim+complete pairs on
// fresh keys (ns/op is wall time per pair), with group commit on
// ("group") and off ("single"), at both durabilities, in one run:
//
//	go test -run '^$' -bench BenchmarkGroupCommit ./store/sqlite/
func BenchmarkGroupCommit(b *testing.B) {
	for _, d := range []store.Durability{store.DurabilityProcess, store.DurabilityPower} {
		for _, conc := range []int{1, 8} {
			for _, mode := range []string{"single", "group"} {
				b.Run(fmt.Sprintf("%s/conc=%d/%s", d, conc, mode), func(b *testing.B) {
					s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"),
						&store.Options{Durability: d, GroupCommit: map[string]store.GroupCommit{"single": store.GroupCommitOff, "group": store.GroupCommitOn}[mode]})
					if err != nil {
						b.Fatal(err)
					}
					defer s.Close()
					storetest.BenchClaimComplete(b, s, conc)
				})
			}
		}
	}
}
