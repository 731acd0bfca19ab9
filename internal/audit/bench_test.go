package audit_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/audit"
	"github.com/gatehouse-dev/gatehouse/internal/cputime"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/sqlite"
)

// BenchmarkArgsDigest is the digest of an audited call's arguments, which
// the writer computes (Writer.AppendDigesting) or, for a keyed call's
// entry, the call's own goroutine.
func BenchmarkArgsDigest(b *testing.B) {
	args := json.RawMessage(`{"text":"` + strings.Repeat("x", 64) + `"}`)
	b.ReportAllocs()
	for b.Loop() {
		_ = audit.ArgsDigest(args)
	}
}

// BenchmarkWriterThroughput: entries appended through a Writer to the
// memory store, the queue kept full (what one writer goroutine sustains).
func BenchmarkWriterThroughput(b *testing.B) {
	st := newStoreB(b)
	w, err := audit.NewWriter(b.Context(), st, &audit.WriterOptions{Chain: "c", Instance: "i"})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	e := store.AuditEntry{Kind: audit.KindCall, Subject: "alice", Server: "echo", Tool: "echo", ArgsDigest: strings.Repeat("a", 64), Outcome: "ok"}
	b.ReportAllocs()
	for b.Loop() {
		if err := w.Append(b.Context(), e); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Flush(b.Context()); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkHash is one entry's hash (the writer's goroutine).
func BenchmarkHash(b *testing.B) {
	e := audit.Link(store.AuditEntry{At: at0, Kind: audit.KindCall, Subject: "alice", Server: "echo", Tool: "echo",
		ArgsDigest: strings.Repeat("a", 64), Outcome: "ok"}, store.AuditHead{Chain: "gw/x", Last: 41, Hash: strings.Repeat("b", 64)})
	b.ReportAllocs()
	for b.Loop() {
		_ = audit.Hash(e)
	}
}

// BenchmarkAppendCallSide is a plain call's entry as the gateway queues
// it (AppendDigesting, with the gateway's linger, batch and queue) from
// parallel callers, to a SQLite store: cpu-ns/op is the whole process's
// CPU an entry, the writer's goroutine (the digests, linking, hashing,
// the blocks and their transactions) included.
//
//	go test ./internal/audit -run '^$' -bench AppendCallSide -benchtime 200000x
func BenchmarkAppendCallSide(b *testing.B) {
	st, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "a.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	w, err := audit.NewWriter(b.Context(), st, &audit.WriterOptions{Chain: "c", Instance: "i",
		Linger: time.Second, Batch: 1024})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	e := store.AuditEntry{Kind: audit.KindCall, Subject: "alice", Server: "echo", Tool: "echo", Outcome: "ok", Duration: time.Millisecond}
	args := json.RawMessage(`{"text":"` + strings.Repeat("x", 64) + `"}`)
	b.ReportAllocs()
	b.SetParallelism(2)
	start := cputime.Start(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := w.AppendDigesting(b.Context(), e, args); err != nil {
				b.Error(err)
				return
			}
		}
	})
	if err := w.Flush(b.Context()); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	cputime.Report(b, start)
	if h, err := st.AuditHead(b.Context(), "c"); err != nil || h.Last != int64(b.N) {
		b.Fatalf("head %+v, %v: want %d entries", h, err, b.N)
	}
}
