package sqlite_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/audit"
	"github.com/gatehouse-dev/gatehouse/internal/cputime"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/storetest"
	"github.com/gatehouse-dev/gatehouse/store/sqlite"
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

// BenchmarkClaimCompleteAudited: what a keyed call of the gateway writes,
// one caller: a claim, then the completion with its audit entry (two
// transactions), on a file in the test's temporary directory.
func BenchmarkClaimCompleteAudited(b *testing.B) {
	s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := b.Context()
	now := time.Now()
	e := store.AuditEntry{Chain: "gw-1", At: now, Kind: "tool_call", Subject: "bench", Server: "echo", Tool: "echo",
		ArgsDigest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", Outcome: "ok", Instance: "i-1"}
	i := 0
	for b.Loop() {
		i++
		key := store.RecordKey{Scope: "s", RunID: "r", ToolCallID: fmt.Sprint(i)}
		rec := store.Record{RecordKey: key, Fingerprint: "f", Owner: "bench", Executor: "e", LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour)}
		if ok, _, err := s.Claim(ctx, rec); err != nil || !ok {
			b.Fatal(ok, err)
		}
		if _, err := s.CompleteAudited(ctx, key, "e", store.StateSucceeded, []byte(`{"content":[{"type":"text","text":"hello"}]}`), e, audit.Link); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAuditAppendLinked: the audit writer's batches of n entries
// (store.AuditJournalStore.AppendAuditLinked, one transaction each); ns/op
// and allocs/op are per entry, and so is cpu-ns/op, the process's CPU
// time (steadier than the wall time on a busy machine).
//
//	go test -run '^$' -bench BenchmarkAuditAppendLinked -benchmem ./store/sqlite/
func BenchmarkAuditAppendLinked(b *testing.B) {
	for _, n := range []int{1, 8, 26, 64, 106, 162, 256} {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			e := store.AuditEntry{Chain: "gw/bench", At: time.Now(), Kind: audit.KindCall, Subject: "bench", Server: "echo", Tool: "echo",
				ArgsDigest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", Outcome: "ok", Instance: "bench"}
			batch := make([]store.AuditEntry, n)
			b.ReportAllocs()
			cpu0 := cputime.Start(b)
			for i := 0; i < b.N; i += n {
				for j := range batch {
					batch[j] = e
				}
				if _, err := s.AppendAuditLinked(b.Context(), batch, audit.Link); err != nil {
					b.Fatal(err)
				}
			}
			cputime.Report(b, cpu0)
		})
	}
}

// BenchmarkKeyedCalls: what a gateway's keyed calls write, from conc
// callers at once: a claim under a hashed key (as the gateway derives
// them: random in the primary key), then its completion with an audit
// entry, on a journal that already holds 20,000 records. cpu-ns/op is the
// process's CPU per call.
//
//	go test -run '^$' -bench BenchmarkKeyedCalls -benchtime 4000x ./store/sqlite/
func BenchmarkKeyedCalls(b *testing.B) {
	for _, conc := range []int{1, 4} {
		b.Run(fmt.Sprintf("conc=%d", conc), func(b *testing.B) {
			s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			storetest.BenchKeyedCalls(b, s, conc, 20000, audit.Link)
		})
	}
}
