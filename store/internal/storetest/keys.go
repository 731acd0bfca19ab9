package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

// testDerivedCounterKeys: counters named by store.Key from parts a caller
// chose (a NUL byte, a megabyte, invalid UTF-8, non-ASCII) are accepted by
// the store, and parts that differ name different counters — in the way
// the firewall names its per-run counts and the rate limiter its windows.
func testDerivedCounterKeys(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	exp := time.Now().Add(time.Hour)
	runs := []string{"run", "run\x00one", strings.Repeat("r", 1<<20), "run\xff\xfe", "ラン-🚀-\u202e", "fw/v1/0:/1:r"}
	for round := 1; round <= 3; round++ {
		for i, run := range runs {
			// Each run counts i+1 per round, so a merged pair would show.
			k := store.Key("fw", "scope\x00", run, "tool")
			want := int64(round * (i + 1))
			if v := get(s.IncrBy(ctx, k, int64(i+1), exp)).ok(t); v != want {
				t.Fatalf("run %.20q round %d: IncrBy = %d, want %d", run, round, v, want)
			}
		}
	}
	for i, run := range runs {
		k := store.Key("fw", "scope\x00", run, "tool")
		if v := get(s.GetCounter(ctx, k, time.Now())).ok(t); v != int64(3*(i+1)) {
			t.Fatalf("run %.20q: GetCounter = %d, want %d", run, v, 3*(i+1))
		}
	}
}
