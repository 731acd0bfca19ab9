// Package audittest is the conformance suite of store.AuditStore, beside
// package storetest: every store implementation runs it.
//
//	func TestAuditConformance(t *testing.T) {
//		audittest.Run(t, func(t *testing.T) store.AuditStore { return openTemp(t, nil) })
//	}
//
// The store computes no hash; the suite's entries carry made-up ones
// (package audit's tests check the hashing).
package audittest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

// Opener returns a fresh, empty store for one test, its Close registered
// with t.Cleanup.
type Opener func(t *testing.T) store.AuditStore

// Run runs the suite against stores made by open.
func Run(t *testing.T, open Opener) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.AuditStore)
	}{
		{"AppendAndRead", testAppendAndRead},
		{"AppendLargeBatch", testAppendLargeBatch},
		{"AppendFollowsHead", testAppendFollowsHead},
		{"AppendInvalid", testAppendInvalid},
		{"AppendRace", testAppendRace},
		{"ListFilters", testListFilters},
		{"Checkpoints", testCheckpoints},
		{"Truncate", testTruncate},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

var base = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func hashOf(chain string, seq int64) string { return fmt.Sprintf("h-%s-%d", chain, seq) }

// run returns n linked entries of chain from seq on.
func run(chain string, seq int64, n int) []store.AuditEntry {
	out := make([]store.AuditEntry, n)
	for i := range out {
		s := seq + int64(i)
		prev := ""
		if s > 1 {
			prev = hashOf(chain, s-1)
		}
		out[i] = store.AuditEntry{Chain: chain, Seq: s, At: base.Add(time.Duration(s) * time.Minute), Kind: "call",
			Subject: fmt.Sprintf("user%d", s%2), Server: "srv", Tool: "echo", ArgsDigest: "d", Outcome: "ok",
			Duration: 1500 * time.Microsecond, Instance: "i1", Detail: []byte(`{"n":1}`), PrevHash: prev, Hash: hashOf(chain, s)}
	}
	return out
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func testAppendAndRead(t *testing.T, s store.AuditStore) {
	ctx := ctxT(t)
	h, err := s.AuditHead(ctx, "a")
	must(t, err)
	if h.Last != 0 || h.Hash != "" || h.Entries != 0 {
		t.Fatalf("empty head = %+v", h)
	}
	es := run("a", 1, 3)
	must(t, s.AppendAudit(ctx, es))
	for i, e := range es {
		if e.ID == 0 || (i > 0 && e.ID <= es[i-1].ID) {
			t.Fatalf("IDs not filled in ascending: %d", e.ID)
		}
	}
	must(t, s.AppendAudit(ctx, run("b", 1, 1)))
	must(t, s.AppendAudit(ctx, run("a", 4, 2)))
	h, err = s.AuditHead(ctx, "a")
	must(t, err)
	if h != (store.AuditHead{Chain: "a", First: 1, Last: 5, Hash: hashOf("a", 5), Entries: 5}) {
		t.Fatalf("head = %+v", h)
	}
	heads, err := s.AuditHeads(ctx)
	must(t, err)
	if len(heads) != 2 || heads[0].Chain != "a" || heads[1] != (store.AuditHead{Chain: "b", First: 1, Last: 1, Hash: hashOf("b", 1), Entries: 1}) {
		t.Fatalf("heads = %+v", heads)
	}
	got, err := s.ReadAuditChain(ctx, "a", 2, 2)
	must(t, err)
	if len(got) != 2 || got[0].Seq != 3 || got[1].Seq != 4 {
		t.Fatalf("read after 2, 2 = %+v", got)
	}
	want := run("a", 3, 1)[0]
	want.ID = got[0].ID
	if fmt.Sprint(got[0]) != fmt.Sprint(want) || !got[0].At.Equal(want.At) {
		t.Fatalf("read back\n%+v\nwant\n%+v", got[0], want)
	}
	all, err := s.ReadAuditChain(ctx, "a", 0, 0)
	must(t, err)
	if len(all) != 5 {
		t.Fatalf("read all = %d entries", len(all))
	}
}

// testAppendLargeBatch: one append of 73 entries (the SQL stores insert
// them 64, 8 and 1 at a time), then one whose last entry collides with a
// concurrent writer's: all or nothing.
func testAppendLargeBatch(t *testing.T, s store.AuditStore) {
	ctx := ctxT(t)
	es := run("a", 1, 73)
	must(t, s.AppendAudit(ctx, es))
	got, err := s.ReadAuditChain(ctx, "a", 0, 0)
	must(t, err)
	if len(got) != 73 {
		t.Fatalf("%d entries", len(got))
	}
	for i, e := range got {
		if e.Seq != int64(i+1) || e.ID != es[i].ID || (i > 0 && e.ID <= got[i-1].ID) {
			t.Fatalf("entry %d: seq %d id %d, append said id %d", i, e.Seq, e.ID, es[i].ID)
		}
	}
	must(t, s.AppendAudit(ctx, run("b", 1, 9)))
	// Another writer took b's seq 10 meanwhile: a batch of 10..18 is
	// refused whole (checked at the head), and so is one that skips it.
	must(t, s.AppendAudit(ctx, run("b", 10, 1)))
	if err := s.AppendAudit(ctx, run("b", 10, 9)); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a batch over a taken seq: %v, want ErrConflict", err)
	}
	if h, _ := s.AuditHead(ctx, "b"); h.Last != 10 || h.Entries != 10 {
		t.Fatalf("head of b after the refused batch: %+v", h)
	}
}

func testAppendFollowsHead(t *testing.T, s store.AuditStore) {
	ctx := ctxT(t)
	if err := s.AppendAudit(ctx, run("a", 2, 1)); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("seq 2 on an empty chain: %v, want ErrConflict", err)
	}
	must(t, s.AppendAudit(ctx, run("a", 1, 2)))
	// The same seq again (another writer's): refused, nothing written.
	if err := s.AppendAudit(ctx, run("a", 2, 2)); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("seq 2 again: %v, want ErrConflict", err)
	}
	// The right seq, the wrong previous hash.
	e := run("a", 3, 1)
	e[0].PrevHash = "other"
	if err := s.AppendAudit(ctx, e); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("unlinked: %v, want ErrConflict", err)
	}
	h, err := s.AuditHead(ctx, "a")
	must(t, err)
	if h.Last != 2 || h.Entries != 2 {
		t.Fatalf("head after refusals = %+v", h)
	}
}

func testAppendInvalid(t *testing.T, s store.AuditStore) {
	ctx := ctxT(t)
	cases := map[string]func([]store.AuditEntry) []store.AuditEntry{
		"none":         func([]store.AuditEntry) []store.AuditEntry { return nil },
		"no chain":     func(es []store.AuditEntry) []store.AuditEntry { es[0].Chain = ""; return es },
		"two chains":   func(es []store.AuditEntry) []store.AuditEntry { es[1].Chain = "b"; return es },
		"seq 0":        func(es []store.AuditEntry) []store.AuditEntry { es[0].Seq = 0; return es },
		"gap":          func(es []store.AuditEntry) []store.AuditEntry { es[1].Seq = 3; return es },
		"no kind":      func(es []store.AuditEntry) []store.AuditEntry { es[0].Kind = ""; return es },
		"no hash":      func(es []store.AuditEntry) []store.AuditEntry { es[0].Hash = ""; return es },
		"first linked": func(es []store.AuditEntry) []store.AuditEntry { es[0].PrevHash = "x"; return es },
		"later unlinked": func(es []store.AuditEntry) []store.AuditEntry {
			es[1].PrevHash = ""
			return es
		},
		"broken link":   func(es []store.AuditEntry) []store.AuditEntry { es[1].PrevHash = "x"; return es },
		"negative time": func(es []store.AuditEntry) []store.AuditEntry { es[0].Duration = -1; return es },
		"bad detail":    func(es []store.AuditEntry) []store.AuditEntry { es[0].Detail = []byte("{"); return es },
	}
	for name, mutate := range cases {
		if err := s.AppendAudit(ctx, mutate(run("a", 1, 2))); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	h, err := s.AuditHead(ctx, "a")
	must(t, err)
	if h.Entries != 0 {
		t.Fatalf("invalid appends wrote %d entries", h.Entries)
	}
}

// testAppendRace: writers racing for one chain's next seqs, each retrying
// on ErrConflict from the head it reads: every seq written once, linked.
func testAppendRace(t *testing.T, s store.AuditStore) {
	ctx := ctxT(t)
	const writers, each = 4, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for range each {
				for {
					h, err := s.AuditHead(ctx, "shared")
					if err != nil {
						errs <- err
						return
					}
					e := run("shared", h.Last+1, 1)
					e[0].Instance = fmt.Sprint(w)
					err = s.AppendAudit(ctx, e)
					if err == nil {
						break
					}
					if !errors.Is(err, store.ErrConflict) {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	all, err := s.ReadAuditChain(ctx, "shared", 0, 0)
	must(t, err)
	if len(all) != writers*each {
		t.Fatalf("%d entries, want %d", len(all), writers*each)
	}
	for i, e := range all {
		if e.Seq != int64(i+1) || (i > 0 && e.PrevHash != all[i-1].Hash) {
			t.Fatalf("entry %d: seq %d prev %q", i, e.Seq, e.PrevHash)
		}
	}
}

func testListFilters(t *testing.T, s store.AuditStore) {
	ctx := ctxT(t)
	must(t, s.AppendAudit(ctx, run("a", 1, 6)))
	b := run("b", 1, 2)
	b[1].Kind = "trust"
	must(t, s.AppendAudit(ctx, b))
	count := func(f store.AuditFilter) []store.AuditEntry {
		t.Helper()
		es, err := s.ListAudit(ctx, f)
		must(t, err)
		for i := 1; i < len(es); i++ {
			if es[i].ID <= es[i-1].ID {
				t.Fatalf("not in ID order: %+v", es)
			}
		}
		return es
	}
	if n := len(count(store.AuditFilter{})); n != 8 {
		t.Fatalf("all: %d", n)
	}
	if n := len(count(store.AuditFilter{Chain: "b"})); n != 2 {
		t.Fatalf("chain b: %d", n)
	}
	if n := len(count(store.AuditFilter{Kind: "trust"})); n != 1 {
		t.Fatalf("kind trust: %d", n)
	}
	if n := len(count(store.AuditFilter{Subject: "user1", Chain: "a"})); n != 3 {
		t.Fatalf("subject user1 on a: %d", n)
	}
	// At of seq s is base + s minutes.
	if es := count(store.AuditFilter{Chain: "a", Since: base.Add(3 * time.Minute), Until: base.Add(5 * time.Minute)}); len(es) != 2 || es[0].Seq != 3 {
		t.Fatalf("since 3 until 5: %+v", es)
	}
	first := count(store.AuditFilter{Limit: 3})
	if len(first) != 3 {
		t.Fatalf("limit 3: %d", len(first))
	}
	rest := count(store.AuditFilter{AfterID: first[2].ID})
	if len(rest) != 5 {
		t.Fatalf("after the first 3: %d", len(rest))
	}
}

func testCheckpoints(t *testing.T, s store.AuditStore) {
	ctx := ctxT(t)
	must(t, s.AppendAudit(ctx, run("a", 1, 3)))
	must(t, s.AppendAudit(ctx, run("b", 1, 1)))
	c := store.AuditCheckpoint{Chain: "a", Seq: 2, Hash: hashOf("a", 2), At: base, KeyID: "k1", Signature: []byte{1, 2, 3}}
	must(t, s.PutAuditCheckpoint(ctx, c))
	if err := s.PutAuditCheckpoint(ctx, c); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("again: %v, want ErrConflict", err)
	}
	if err := s.PutAuditCheckpoint(ctx, store.AuditCheckpoint{Chain: "a", Seq: 3, Hash: "wrong"}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("wrong hash: %v, want ErrInvalid", err)
	}
	if err := s.PutAuditCheckpoint(ctx, store.AuditCheckpoint{Chain: "a", Seq: 9, Hash: "x"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("no entry: %v, want ErrNotFound", err)
	}
	if err := s.PutAuditCheckpoint(ctx, store.AuditCheckpoint{Chain: "a", Seq: 3, Hash: hashOf("a", 3), KeyID: "k1"}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("key ID without signature: %v, want ErrInvalid", err)
	}
	must(t, s.PutAuditCheckpoint(ctx, store.AuditCheckpoint{Chain: "b", Seq: 1, Hash: hashOf("b", 1)}))
	got, err := s.AuditCheckpoints(ctx, "a")
	must(t, err)
	if len(got) != 1 || got[0].Seq != 2 || got[0].KeyID != "k1" || string(got[0].Signature) != "\x01\x02\x03" || !got[0].At.Equal(base) {
		t.Fatalf("checkpoints of a = %+v", got)
	}
	all, err := s.AuditCheckpoints(ctx, "")
	must(t, err)
	if len(all) != 2 || all[0].Chain != "a" || all[1].Chain != "b" || all[1].At.IsZero() {
		t.Fatalf("every checkpoint = %+v", all)
	}
}

func testTruncate(t *testing.T, s store.AuditStore) {
	ctx := ctxT(t)
	must(t, s.AppendAudit(ctx, run("a", 1, 6)))
	must(t, s.AppendAudit(ctx, run("b", 1, 2)))
	if _, err := s.TruncateAudit(ctx, "a", 4); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("without a checkpoint: %v, want ErrInvalid", err)
	}
	must(t, s.PutAuditCheckpoint(ctx, store.AuditCheckpoint{Chain: "a", Seq: 1, Hash: hashOf("a", 1)}))
	must(t, s.PutAuditCheckpoint(ctx, store.AuditCheckpoint{Chain: "a", Seq: 3, Hash: hashOf("a", 3)}))
	must(t, s.PutAuditCheckpoint(ctx, store.AuditCheckpoint{Chain: "a", Seq: 6, Hash: hashOf("a", 6)}))
	if _, err := s.TruncateAudit(ctx, "a", 7); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("past the head: %v, want ErrInvalid", err)
	}
	n, err := s.TruncateAudit(ctx, "a", 4)
	must(t, err)
	if n != 3 {
		t.Fatalf("deleted %d, want 3", n)
	}
	h, err := s.AuditHead(ctx, "a")
	must(t, err)
	if h.First != 4 || h.Last != 6 || h.Entries != 3 {
		t.Fatalf("head after truncation = %+v", h)
	}
	cps, err := s.AuditCheckpoints(ctx, "a")
	must(t, err)
	if len(cps) != 2 || cps[0].Seq != 3 || cps[1].Seq != 6 {
		t.Fatalf("checkpoints after truncation = %+v (the anchor at 3 stays, 1 goes)", cps)
	}
	if hb, _ := s.AuditHead(ctx, "b"); hb.Entries != 2 {
		t.Fatalf("chain b touched: %+v", hb)
	}
	// Appends go on from the head.
	must(t, s.AppendAudit(ctx, run("a", 7, 1)))
	if n, err := s.TruncateAudit(ctx, "a", 1); err != nil || n != 0 {
		t.Fatalf("before 1: %d, %v", n, err)
	}
}
