package audit_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/audit"
	"github.com/gatehouse-dev/gatehouse/store"
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
