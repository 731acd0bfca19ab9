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
	"bytes"
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
		{"AppendEverySize", testAppendEverySize},
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

// testAppendEverySize: batches of 1 to 130 entries, one after the other
// on one chain (the SQL stores split a batch into INSERTs of 64, 32, ...
// 1 rows): every entry read back in its place, with its ID, IDs rising.
func testAppendEverySize(t *testing.T, s store.AuditStore) {
	ctx := ctxT(t)
	var all []store.AuditEntry
	for n := 1; n <= 130; n++ {
		es := run("a", int64(len(all))+1, n)
		must(t, s.AppendAudit(ctx, es))
		all = append(all, es...)
	}
	got, err := s.ReadAuditChain(ctx, "a", 0, 0)
	must(t, err)
	if len(got) != len(all) {
		t.Fatalf("%d entries read, %d appended", len(got), len(all))
	}
	for i, e := range got {
		if e.Seq != int64(i+1) || e.ID != all[i].ID || e.Hash != all[i].Hash || e.PrevHash != all[i].PrevHash || (i > 0 && e.ID <= got[i-1].ID) {
			t.Fatalf("entry %d: seq %d id %d hash %s, append said id %d hash %s", i, e.Seq, e.ID, e.Hash, all[i].ID, all[i].Hash)
		}
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

// RunJournal runs the suite of store.AuditJournalStore (entries linked in
// the store's transactions, alone or with a journal completion) against
// stores made by open, which must implement it and store.JournalStore.
func RunJournal(t *testing.T, open Opener) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.AuditStore, j store.JournalStore, a store.AuditJournalStore)
	}{
		{"LinkedAppend", testLinkedAppend},
		{"CompleteAudited", testCompleteAudited},
		{"CompleteAuditedConcurrent", testCompleteAuditedConcurrent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			j, ok1 := s.(store.JournalStore)
			a, ok2 := s.(store.AuditJournalStore)
			if !ok1 || !ok2 {
				t.Fatalf("%T is not a store.JournalStore and a store.AuditJournalStore", s)
			}
			tc.fn(t, s, j, a)
		})
	}
}

// link is the suite's AuditLink: the made-up hashes of run.
func link(e store.AuditEntry, head store.AuditHead) store.AuditEntry {
	e.Seq, e.PrevHash = head.Last+1, head.Hash
	e.Hash = hashOf(e.Chain, e.Seq)
	return e
}

// unlinked is an entry of chain for a linked append.
func unlinked(chain, tool string) store.AuditEntry {
	return store.AuditEntry{Chain: chain, At: base, Kind: "call", Subject: "alice", Server: "srv", Tool: tool, ArgsDigest: "d",
		Outcome: "ok", Duration: time.Millisecond, Instance: "i1"}
}

// sameEntry fails unless got, read back from the store, is want, the
// entry as the store returned it when writing it.
func sameEntry(t *testing.T, got, want store.AuditEntry) {
	t.Helper()
	if got.ID != want.ID || got.Chain != want.Chain || got.Seq != want.Seq || !got.At.Equal(want.At) || got.Kind != want.Kind ||
		got.Subject != want.Subject || got.Server != want.Server || got.Tool != want.Tool || got.ArgsDigest != want.ArgsDigest ||
		got.Outcome != want.Outcome || got.Duration != want.Duration || got.Instance != want.Instance ||
		!bytes.Equal(got.Detail, want.Detail) || (got.Detail == nil) != (want.Detail == nil) || got.PrevHash != want.PrevHash || got.Hash != want.Hash {
		t.Fatalf("entry read back as %+v, written as %+v", got, want)
	}
}

// wantLine checks that chain holds seqs 1..n, each linked to the one before.
func wantLine(t *testing.T, s store.AuditStore, chain string, n int) []store.AuditEntry {
	t.Helper()
	all, err := s.ReadAuditChain(ctxT(t), chain, 0, 0)
	must(t, err)
	if len(all) != n {
		t.Fatalf("chain %q holds %d entries, want %d", chain, len(all), n)
	}
	for i, e := range all {
		if e.Seq != int64(i+1) || e.Hash != hashOf(chain, e.Seq) || (i > 0 && e.PrevHash != all[i-1].Hash) || (i == 0 && e.PrevHash != "") {
			t.Fatalf("chain %q entry %d: seq %d prev %q hash %q: not one line", chain, i, e.Seq, e.PrevHash, e.Hash)
		}
	}
	return all
}

func testLinkedAppend(t *testing.T, s store.AuditStore, _ store.JournalStore, a store.AuditJournalStore) {
	ctx := ctxT(t)
	out, err := a.AppendAuditLinked(ctx, []store.AuditEntry{unlinked("c", "a"), unlinked("c", "b"), unlinked("d", "x")}, link)
	must(t, err)
	if len(out) != 3 || out[0].Seq != 1 || out[1].Seq != 2 || out[1].PrevHash != out[0].Hash || out[2].Chain != "d" || out[2].Seq != 1 ||
		out[0].ID == 0 || out[1].ID <= out[0].ID || out[2].ID == 0 {
		t.Fatalf("linked append returned %+v", out)
	}
	// Another writer appends after it; a linked append follows that head.
	must(t, s.AppendAudit(ctx, run("c", 3, 1)))
	out, err = a.AppendAuditLinked(ctx, []store.AuditEntry{unlinked("c", "e")}, link)
	must(t, err)
	if out[0].Seq != 4 || out[0].PrevHash != hashOf("c", 3) {
		t.Fatalf("linked append after another writer's: %+v", out[0])
	}
	got := wantLine(t, s, "c", 4)
	if got[3].Tool != "e" || got[3].ID != out[0].ID || !got[3].At.Equal(base) || got[3].Duration != time.Millisecond {
		t.Fatalf("stored %+v, returned %+v", got[3], out[0])
	}
	wantLine(t, s, "d", 1)

	// What cannot be linked is refused, and nothing is written.
	for name, tc := range map[string]struct {
		es   []store.AuditEntry
		link store.AuditLink
	}{
		"no link":  {[]store.AuditEntry{unlinked("c", "f")}, nil},
		"no chain": {[]store.AuditEntry{unlinked("", "f")}, link},
		"no kind":  {[]store.AuditEntry{{Chain: "c"}}, link},
		"none":     {nil, link},
		"unlinked": {[]store.AuditEntry{unlinked("c", "f")}, func(e store.AuditEntry, _ store.AuditHead) store.AuditEntry { return e }},
		"wrong seq": {[]store.AuditEntry{unlinked("c", "f")}, func(e store.AuditEntry, h store.AuditHead) store.AuditEntry {
			h.Last++
			return link(e, h)
		}},
	} {
		if _, err := a.AppendAuditLinked(ctx, tc.es, tc.link); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	wantLine(t, s, "c", 4)

	// A large linked append over two chains (what a writer gathers in
	// its linger): every field of every entry is stored as given, a
	// detail or none, and the IDs returned are the rows'.
	var big []store.AuditEntry
	for i := range 300 {
		e := unlinked([]string{"big-a", "big-b"}[i%2], fmt.Sprintf("tool-%d", i))
		e.Subject, e.Outcome, e.Duration = fmt.Sprintf("user-%d", i%7), []string{"ok", "error"}[i%3/2], time.Duration(i)*time.Microsecond
		e.At = base.Add(time.Duration(i) * time.Millisecond)
		if i%4 == 0 {
			e.Detail = []byte(fmt.Sprintf(`{"n":%d,"q":"\u00e9\"'"}`, i))
		}
		big = append(big, e)
	}
	out, err = a.AppendAuditLinked(ctx, big, link)
	must(t, err)
	byChain := map[string][]store.AuditEntry{"big-a": wantLine(t, s, "big-a", 150), "big-b": wantLine(t, s, "big-b", 150)}
	for i, e := range out {
		got := byChain[e.Chain][e.Seq-1]
		if e.ID == 0 || got.ID != e.ID || got.Tool != big[i].Tool || got.Subject != big[i].Subject || got.Outcome != big[i].Outcome ||
			got.Duration != big[i].Duration || !got.At.Equal(big[i].At) || !bytes.Equal(got.Detail, big[i].Detail) ||
			(got.Detail == nil) != (big[i].Detail == nil) || got.Instance != "i1" || got.ArgsDigest != "d" || got.Kind != "call" {
			t.Fatalf("entry %d stored as %+v, given %+v (returned %+v)", i, got, big[i], e)
		}
	}
}

// claimed claims a fresh started record held by executor.
func claimed(t *testing.T, j store.JournalStore, id, executor string) store.RecordKey {
	t.Helper()
	key := store.RecordKey{Scope: "s", RunID: "r", ToolCallID: id}
	ok, _, err := j.Claim(ctxT(t), store.Record{RecordKey: key, Fingerprint: "fp", State: store.StateStarted, Owner: "alice",
		Executor: executor, LeaseUntil: time.Now().Add(time.Hour)})
	must(t, err)
	if !ok {
		t.Fatalf("claim %s: not claimed", id)
	}
	return key
}

func testCompleteAudited(t *testing.T, s store.AuditStore, j store.JournalStore, a store.AuditJournalStore) {
	ctx := ctxT(t)
	key := claimed(t, j, "c1", "ex1")
	e, err := a.CompleteAudited(ctx, key, "ex1", store.StateSucceeded, []byte(`{"r":1}`), unlinked("gw/1", "one"), link)
	must(t, err)
	if e.Seq != 1 || e.ID == 0 || e.Hash != hashOf("gw/1", 1) {
		t.Fatalf("entry as written: %+v", e)
	}
	rec, err := j.GetRecord(ctx, key)
	must(t, err)
	if rec.State != store.StateSucceeded || string(rec.Outcome) != `{"r":1}` {
		t.Fatalf("record %+v", rec)
	}
	sameEntry(t, wantLine(t, s, "gw/1", 1)[0], e)
	// An entry with a detail (and texts a store must keep byte for byte),
	// read back as written.
	withDetail := unlinked("gw/d", "d\u00e9tail \"q\" 'x'")
	withDetail.Detail = []byte(`{"key":"k\u00e9","n":[1,2]}`)
	d, err := a.CompleteAudited(ctx, claimed(t, j, "c-detail", "ex1"), "ex1", store.StateSucceeded, nil, withDetail, link)
	must(t, err)
	if string(d.Detail) != string(withDetail.Detail) {
		t.Fatalf("entry as written: detail %q, given %q", d.Detail, withDetail.Detail)
	}
	sameEntry(t, wantLine(t, s, "gw/d", 1)[0], d)

	// A completion refused writes no entry; an entry refused, no completion.
	if _, err := a.CompleteAudited(ctx, key, "ex1", store.StateSucceeded, nil, unlinked("gw/1", "two"), link); !errors.Is(err, store.ErrNotStarted) {
		t.Fatalf("completing a completed record: %v, want ErrNotStarted", err)
	}
	other := claimed(t, j, "c2", "ex2")
	if _, err := a.CompleteAudited(ctx, other, "ex1", store.StateSucceeded, nil, unlinked("gw/1", "two"), link); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("completing another executor's record: %v, want ErrLeaseLost", err)
	}
	if _, err := a.CompleteAudited(ctx, store.RecordKey{Scope: "s", RunID: "r", ToolCallID: "none"}, "ex1", store.StateSucceeded, nil, unlinked("gw/1", "two"), link); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("completing no record: %v, want ErrNotFound", err)
	}
	bad := func(e store.AuditEntry, _ store.AuditHead) store.AuditEntry { return e }
	if _, err := a.CompleteAudited(ctx, other, "ex2", store.StateSucceeded, nil, unlinked("gw/1", "two"), bad); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("an entry left unlinked: %v, want ErrInvalid", err)
	}
	if _, err := a.CompleteAudited(ctx, other, "ex2", store.StateStarted, nil, unlinked("gw/1", "two"), link); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("completing as started: %v, want ErrInvalid", err)
	}
	if rec, err := j.GetRecord(ctx, other); err != nil || rec.State != store.StateStarted {
		t.Fatalf("record of refused completions: %+v %v, want still started", rec, err)
	}
	wantLine(t, s, "gw/1", 1)
	if _, err := a.CompleteAudited(ctx, other, "ex2", store.StateFailed, []byte(`{"e":1}`), unlinked("gw/1", "two"), link); err != nil {
		t.Fatal(err)
	}
	wantLine(t, s, "gw/1", 2)
}

// testCompleteAuditedConcurrent: calls completing at once with their
// entries, and linked appends beside them, on one chain: every completion
// has its one entry, and the chain is one line.
func testCompleteAuditedConcurrent(t *testing.T, s store.AuditStore, j store.JournalStore, a store.AuditJournalStore) {
	ctx := ctxT(t)
	const callers, each, appenders = 8, 6, 2
	var wg sync.WaitGroup
	errs := make(chan error, callers+appenders)
	for c := range callers {
		wg.Go(func() {
			for i := range each {
				id := fmt.Sprintf("k%d-%d", c, i)
				key := store.RecordKey{Scope: "s", RunID: "r", ToolCallID: id}
				if _, _, err := j.Claim(ctx, store.Record{RecordKey: key, Fingerprint: "fp", State: store.StateStarted, Owner: "alice",
					Executor: "ex", LeaseUntil: time.Now().Add(time.Hour)}); err != nil {
					errs <- err
					return
				}
				if _, err := a.CompleteAudited(ctx, key, "ex", store.StateSucceeded, nil, unlinked("gw/c", id), link); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for w := range appenders {
		wg.Go(func() {
			for i := range each {
				if _, err := a.AppendAuditLinked(ctx, []store.AuditEntry{unlinked("gw/c", fmt.Sprintf("q%d-%d", w, i)), unlinked("gw/c", "q")}, link); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	all := wantLine(t, s, "gw/c", callers*each+appenders*each*2)
	tools := map[string]int{}
	for _, e := range all {
		tools[e.Tool]++
	}
	for c := range callers {
		for i := range each {
			id := fmt.Sprintf("k%d-%d", c, i)
			rec, err := j.GetRecord(ctx, store.RecordKey{Scope: "s", RunID: "r", ToolCallID: id})
			if err != nil || rec.State != store.StateSucceeded || tools[id] != 1 {
				t.Fatalf("%s: record %+v %v, %d entries", id, rec, err, tools[id])
			}
		}
	}
}
