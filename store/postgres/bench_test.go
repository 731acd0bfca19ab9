package postgres_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
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
					benchPairs(b, s, conc)
				})
			}
		}
	}
}

// benchPairs runs b.N claim+complete pairs on fresh keys from conc
// goroutines.
func benchPairs(b *testing.B, s store.JournalStore, conc int) {
	ctx := context.Background()
	out := []byte(`{"content":[{"type":"text","text":"ok"}]}`)
	run := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	var next atomic.Int64
	var failed atomic.Value
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := range conc {
		wg.Go(func() {
			exec := fmt.Sprint("w", w)
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				k := store.RecordKey{Scope: "bench", RunID: run, ToolCallID: strconv.FormatInt(i, 10)}
				claimed, _, err := s.Claim(ctx, store.Record{RecordKey: k, Fingerprint: "fp", Owner: "bench", Executor: exec,
					LeaseUntil: time.Now().Add(time.Minute), ExpiresAt: time.Now().Add(time.Hour)})
				if err == nil && !claimed {
					err = fmt.Errorf("key %s not claimed", k.ToolCallID)
				}
				if err == nil {
					err = s.Complete(ctx, k, exec, store.StateSucceeded, out)
				}
				if err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
}
