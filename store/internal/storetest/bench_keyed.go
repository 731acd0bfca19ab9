package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/cputime"
	"github.com/gatehouse-dev/gatehouse/store"
)

// KeyedStore is what BenchKeyedCalls needs.
type KeyedStore interface {
	store.JournalStore
	store.AuditJournalStore
}

// BenchKeyedCalls measures what a gateway's keyed calls write, from conc
// callers at once: a Claim under a key shaped as the gateway's (a run per
// tool, a SHA-256 of the caller's key as the tool call: random in the
// journal's primary key), then CompleteAudited with a call's audit entry
// linked by link (package audit's Link), on a journal that first gets
// prefill records. cpu-ns/op is the process's CPU (user and system) per
// call, steadier than the wall time on a busy machine.
func BenchKeyedCalls(b *testing.B, s KeyedStore, conc, prefill int, link store.AuditLink) {
	ctx := context.Background()
	out := []byte(`{"result":{"content":[{"type":"text","text":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}]}}`)
	run := fmt.Sprintf("gw_%x", time.Now().UnixNano())
	key := func(i int64) store.RecordKey {
		sum := sha256.Sum256(fmt.Appendf(nil, "%s/%d", run, i))
		return store.RecordKey{Scope: "gateway", RunID: run, ToolCallID: hex.EncodeToString(sum[:])}
	}
	entry := store.AuditEntry{Chain: "gw/bench", Kind: "call", Subject: "bench", Server: "echo", Tool: "echo",
		ArgsDigest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", Outcome: "ok", Instance: "bench"}
	call := func(i int64, exec string) error {
		k := key(i)
		now := time.Now()
		claimed, _, err := s.Claim(ctx, store.Record{RecordKey: k, Fingerprint: "sha256:fp", Owner: "bench", Executor: exec,
			LeaseUntil: now.Add(30 * time.Second), ExpiresAt: now.Add(24 * time.Hour)})
		if err == nil && !claimed {
			err = fmt.Errorf("key %s not claimed", k.ToolCallID)
		}
		if err != nil {
			return err
		}
		e := entry
		e.At = now
		_, err = s.CompleteAudited(ctx, k, exec, store.StateSucceeded, out, e, link)
		return err
	}
	var next atomic.Int64
	for range prefill {
		if err := call(next.Add(1), "prefill"); err != nil {
			b.Fatal(err)
		}
	}
	first := next.Load()
	var failed atomic.Value
	b.ReportAllocs()
	cpu0 := cputime.Start(b)
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := range max(conc, 1) {
		wg.Go(func() {
			exec := fmt.Sprint("w", w)
			for i := next.Add(1); i <= first+int64(b.N); i = next.Add(1) {
				if err := call(i, exec); err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	cputime.Report(b, cpu0)
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
}
