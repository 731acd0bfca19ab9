package storetest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

// ContendStore is what Contend needs.
type ContendStore interface {
	store.JournalStore
	store.CounterStore
}

// ContentionResult is what one participant of a contention test saw.
type ContentionResult struct {
	Who     string   // the participant's executor name
	Claimed []string // tool call IDs this participant won
	Values  []int64  // values IncrBy returned to this participant
}

// ContendRun and ContendCounter name the rows Contend races on.
const (
	ContendRun     = "contend"
	ContendCounter = "contend-counter"
)

// Contend races other participants (goroutines, pools or processes sharing
// one database): with 4 goroutines it claims each of keys tool call IDs
// under ContendRun and increments ContendCounter incs times, interleaved.
// Check the results of every participant with CheckContention.
func Contend(ctx context.Context, s ContendStore, who string, keys, incs int) (ContentionResult, error) {
	const workers = 4
	res := ContentionResult{Who: who}
	var mu sync.Mutex
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	exp := time.Now().Add(time.Hour)
	for w := range workers {
		wg.Go(func() {
			k, n := w, w
			for k < keys || n < incs {
				if k < keys {
					id := fmt.Sprintf("k%04d", k)
					claimed, _, err := s.Claim(ctx, store.Record{
						RecordKey:   store.RecordKey{Scope: "storetest", RunID: ContendRun, ToolCallID: id},
						Fingerprint: "fp", Owner: "contend", Executor: who,
						LeaseUntil: time.Now().Add(time.Minute), ExpiresAt: exp,
					})
					if err != nil {
						errs <- fmt.Errorf("%s: claim %s: %w", who, id, err)
						return
					}
					if claimed {
						mu.Lock()
						res.Claimed = append(res.Claimed, id)
						mu.Unlock()
					}
					k += workers
				}
				if n < incs {
					v, err := s.IncrBy(ctx, ContendCounter, 1, exp)
					if err != nil {
						errs <- fmt.Errorf("%s: incr: %w", who, err)
						return
					}
					mu.Lock()
					res.Values = append(res.Values, v)
					mu.Unlock()
					n += workers
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return res, err
	}
	return res, nil
}

// CheckContention asserts that every key was won by exactly one
// participant and that the counter values handed out are exactly
// 1..len(results)*incs, each once; then it reads the store back.
func CheckContention(t testing.TB, s ContendStore, results []ContentionResult, keys, incs int) {
	t.Helper()
	owner := map[string]string{}
	var values []int64
	for _, r := range results {
		for _, id := range r.Claimed {
			if prev, dup := owner[id]; dup {
				t.Fatalf("key %s won by both %s and %s", id, prev, r.Who)
			}
			owner[id] = r.Who
		}
		values = append(values, r.Values...)
	}
	if len(owner) != keys {
		t.Fatalf("%d keys won, want %d", len(owner), keys)
	}
	slices.Sort(values)
	total := len(results) * incs
	if len(values) != total {
		t.Fatalf("%d increments returned, want %d", len(values), total)
	}
	for i, v := range values {
		if v != int64(i+1) {
			t.Fatalf("increment values are not exactly 1..%d: position %d holds %d", total, i, v)
		}
	}
	ctx := context.Background()
	v, err := s.GetCounter(ctx, ContendCounter, time.Now())
	if err != nil || v != int64(total) {
		t.Fatalf("counter = %d, %v; want %d", v, err, total)
	}
	recs, err := s.ListRecords(ctx, "storetest", ContendRun)
	if err != nil || len(recs) != keys {
		t.Fatalf("%d records, %v; want %d", len(recs), err, keys)
	}
	for _, r := range recs {
		if owner[r.ToolCallID] != r.Executor {
			t.Fatalf("record %s held by %q but %q reported the win", r.ToolCallID, r.Executor, owner[r.ToolCallID])
		}
	}
	counts := map[string]int{}
	for _, w := range owner {
		counts[w]++
	}
	t.Logf("contention: keys won per participant %v; %d increments", counts, total)
}

// BenchClaimComplete measures one claim plus one completion per op, the
// journal's cost per durable tool call, from conc goroutines on fresh keys
// (ns/op is wall time per pair; conc 1 is a lone caller, more shows what
// group commit shares).
func BenchClaimComplete(b *testing.B, s store.JournalStore, conc int) {
	ctx := context.Background()
	out := []byte(`{"content":[{"type":"text","text":"ok"}]}`)
	run := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	var next atomic.Int64
	var failed atomic.Value
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := range max(conc, 1) {
		wg.Go(func() {
			exec := fmt.Sprint("w", w)
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
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
