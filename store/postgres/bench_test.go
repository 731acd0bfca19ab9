package postgres_test

import (
	"fmt"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/audit"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/storetest"
)

// BenchmarkGroupCommit: conc goroutines each doing claim+complete pairs on
// fresh keys (ns/op is wall time per pair), with group commit on
// ("group") and off ("single"), at both durabilities, in one run:
//
//	GATEHOUSE_TEST_POSTGRES=postgres://... go test -run '^$' -bench BenchmarkGroupCommit ./store/postgres/
func BenchmarkGroupCommit(b *testing.B) {
	for _, d := range []store.Durability{store.DurabilityProcess, store.DurabilityPower} {
		for _, conc := range []int{1, 8} {
			for _, mode := range []string{"single", "group"} {
				b.Run(fmt.Sprintf("%s/conc=%d/%s", d, conc, mode), func(b *testing.B) {
					s := openFresh(b, &store.Options{Durability: d, GroupCommit: map[string]store.GroupCommit{"single": store.GroupCommitOff, "group": store.GroupCommitOn}[mode]})
					storetest.BenchClaimComplete(b, s, conc)
				})
			}
		}
	}
}

// BenchmarkKeyedCalls: what a gateway's keyed calls write, from conc
// callers at once (storetest.BenchKeyedCalls: a claim under a hashed key,
// then its completion with an audit entry, on a journal of 5,000
// records); cpu-ns/op is this process's CPU per call (the server's is
// not in it):
//
//	GATEHOUSE_TEST_POSTGRES=postgres://... go test -run '^$' -bench BenchmarkKeyedCalls -benchtime 4000x ./store/postgres/
func BenchmarkKeyedCalls(b *testing.B) {
	for _, conc := range []int{1, 4} {
		b.Run(fmt.Sprintf("conc=%d", conc), func(b *testing.B) {
			storetest.BenchKeyedCalls(b, openFresh(b, nil), conc, 5000, audit.Link)
		})
	}
}
