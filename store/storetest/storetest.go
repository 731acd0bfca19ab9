// Package storetest is the conformance suite every store.Store
// implementation must pass, and helpers for cross-process contention tests
// and benchmarks.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

// Opener returns a fresh, empty store for one test. It registers the
// store's Close with t.Cleanup itself.
type Opener func(t *testing.T) store.Store

// base is a fixed instant (ms precision) the tests count from; stores are
// given explicit times wherever the API takes one.
var base = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return base.Add(d) }

// Run runs the conformance suite against stores made by open.
func Run(t *testing.T, open Opener) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"Servers", testServers},
		{"ServerRefusesSecrets", testServerRefusesSecrets},
		{"Baseline", testBaseline},
		{"BaselineImmutableUnderRepeatedSave", testBaselineImmutable},
		{"BaselineConcurrentSave", testBaselineConcurrent},
		{"BaselineClearAndVersion", testBaselineClear},
		{"ClaimAndGet", testClaim},
		{"ClaimValidation", testClaimValidation},
		{"ClaimRace", testClaimRace},
		{"Complete", testComplete},
		{"TakeOver", testTakeOver},
		{"TakeOverRace", testTakeOverRace},
		{"MarkInDoubt", testMarkInDoubt},
		{"RenewLease", testRenewLease},
		{"ListRunsAndRecords", testListRuns},
		{"Purge", testPurge},
		{"Sweep", testSweep},
		{"OldestStarted", testOldestStarted},
		{"Counters", testCounters},
		{"CountersConcurrent", testCountersConcurrent},
		{"CounterWindowRestart", testCounterWindow},
		{"Approvals", testApprovals},
		{"ApprovalDecideRace", testApprovalRace},
		{"Timestamps", testTimestamps},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, open(t))
		})
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

type res[T any] struct {
	v   T
	err error
}

func get[T any](v T, err error) res[T] { return res[T]{v, err} }

func (r res[T]) ok(t *testing.T) T {
	t.Helper()
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.v
}

type res3[A, B any] struct {
	a   A
	b   B
	err error
}

func get3[A, B any](a A, b B, err error) res3[A, B] { return res3[A, B]{a, b, err} }

func (r res3[A, B]) ok(t *testing.T) A {
	t.Helper()
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.a
}

func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error = %v, want %v", err, target)
	}
}

func testServers(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	if got := get(s.ListServers(ctx)).ok(t); len(got) != 0 {
		t.Fatalf("empty store lists %d servers", len(got))
	}
	_, err := s.GetServer(ctx, "nope")
	wantErr(t, err, store.ErrNotFound)
	wantErr(t, s.DeleteServer(ctx, "nope"), store.ErrNotFound)
	wantErr(t, s.PutServer(ctx, store.Server{Name: "x"}), store.ErrInvalid)

	cat := []byte(`{"tools":[{"name":"echo"}]}`)
	b := store.Server{ID: "p/bank", Name: "bank", Type: "http", URL: "https://bank.example/mcp", Catalogue: cat, UpdatedAt: at(time.Second)}
	a := store.Server{ID: "p/alpha", Name: "alpha", Type: "stdio"}
	if err := s.PutServer(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := s.PutServer(ctx, a); err != nil {
		t.Fatal(err)
	}
	cat[0] = 'X' // the store must have copied
	got := get(s.GetServer(ctx, "p/bank")).ok(t)
	if got.Name != "bank" || got.Type != "http" || got.URL != "https://bank.example/mcp" ||
		string(got.Catalogue) != `{"tools":[{"name":"echo"}]}` || !got.UpdatedAt.Equal(at(time.Second)) || got.BaselineVersion != 0 {
		t.Fatalf("GetServer = %+v", got)
	}
	ga := get(s.GetServer(ctx, "p/alpha")).ok(t)
	if ga.Catalogue != nil || ga.URL != "" || ga.UpdatedAt.IsZero() {
		t.Fatalf("stdio row = %+v (want nil catalogue, empty URL, UpdatedAt filled)", ga)
	}
	list := get(s.ListServers(ctx)).ok(t)
	if len(list) != 2 || list[0].ID != "p/alpha" || list[1].ID != "p/bank" {
		t.Fatalf("ListServers = %+v", list)
	}
	// Upsert replaces the fields, keeps the baseline and its version.
	get(s.SaveBaseline(ctx, "p/bank", map[string]string{"echo": "fp1"})).ok(t)
	b2 := store.Server{ID: "p/bank", Name: "bank2", Type: "sse", URL: "https://bank.example/sse", Catalogue: []byte(`[]`), UpdatedAt: at(2 * time.Second), BaselineVersion: 99}
	if err := s.PutServer(ctx, b2); err != nil {
		t.Fatal(err)
	}
	got = get(s.GetServer(ctx, "p/bank")).ok(t)
	if got.Name != "bank2" || got.Type != "sse" || got.URL != b2.URL || string(got.Catalogue) != "[]" || !got.UpdatedAt.Equal(at(2*time.Second)) {
		t.Fatalf("after upsert = %+v", got)
	}
	if got.BaselineVersion != 1 {
		t.Fatalf("BaselineVersion = %d after one save; PutServer must not set it", got.BaselineVersion)
	}
	if bl := get(s.GetBaseline(ctx, "p/bank")).ok(t); bl["echo"] != "fp1" {
		t.Fatalf("upsert touched the baseline: %v", bl)
	}
	// Delete takes the baseline with it.
	if err := s.DeleteServer(ctx, "p/bank"); err != nil {
		t.Fatal(err)
	}
	_, err = s.GetServer(ctx, "p/bank")
	wantErr(t, err, store.ErrNotFound)
	_, err = s.GetBaseline(ctx, "p/bank")
	wantErr(t, err, store.ErrNotFound)
	if err := s.PutServer(ctx, b); err != nil {
		t.Fatal(err)
	}
	if bl := get(s.GetBaseline(ctx, "p/bank")).ok(t); len(bl) != 0 {
		t.Fatalf("a re-created server inherited a deleted baseline: %v", bl)
	}
}

func testServerRefusesSecrets(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	err := s.PutServer(ctx, store.Server{ID: "x", Name: "x", Type: "http", URL: "https://user:hunter2@evil.example/mcp"})
	wantErr(t, err, store.ErrInvalid)
	if bytes.Contains([]byte(err.Error()), []byte("hunter2")) {
		t.Fatalf("error repeats the password: %v", err)
	}
	if _, err := s.GetServer(ctx, "x"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a row with a password in its URL was stored (err %v)", err)
	}
}

func putServer(t *testing.T, s store.Store, id string) {
	t.Helper()
	if err := s.PutServer(ctxT(t), store.Server{ID: id, Name: id, Type: "http", URL: "https://" + id + ".example/mcp"}); err != nil {
		t.Fatal(err)
	}
}

func testBaseline(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	_, err := s.SaveBaseline(ctx, "ghost", map[string]string{"a": "1"})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.GetBaseline(ctx, "ghost")
	wantErr(t, err, store.ErrNotFound)
	_, err = s.ClearBaseline(ctx, "ghost")
	wantErr(t, err, store.ErrNotFound)
	_, err = s.BaselineVersion(ctx, "ghost")
	wantErr(t, err, store.ErrNotFound)

	putServer(t, s, "srv")
	if bl := get(s.GetBaseline(ctx, "srv")).ok(t); bl == nil || len(bl) != 0 {
		t.Fatalf("new server's baseline = %#v, want empty non-nil map", bl)
	}
	in := map[string]string{"echo": "fp-echo", "add": "fp-add", store.InstructionsKey: "fp-instr"}
	if n := get(s.SaveBaseline(ctx, "srv", in)).ok(t); n != 3 {
		t.Fatalf("added %d, want 3", n)
	}
	if got := get(s.GetBaseline(ctx, "srv")).ok(t); !maps.Equal(got, in) {
		t.Fatalf("GetBaseline = %v, want %v", got, in)
	}
	if n := get(s.SaveBaseline(ctx, "srv", nil)).ok(t); n != 0 {
		t.Fatalf("nil save added %d", n)
	}
	// Baselines of different servers are independent.
	putServer(t, s, "other")
	get(s.SaveBaseline(ctx, "other", map[string]string{"echo": "other-fp"})).ok(t)
	if got := get(s.GetBaseline(ctx, "srv")).ok(t); got["echo"] != "fp-echo" {
		t.Fatalf("another server's save leaked: %v", got)
	}
}

func testBaselineImmutable(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	putServer(t, s, "srv")
	get(s.SaveBaseline(ctx, "srv", map[string]string{"echo": "trusted", store.InstructionsKey: "instr-trusted"})).ok(t)
	v1 := get(s.BaselineVersion(ctx, "srv")).ok(t)
	for i := range 5 {
		n := get(s.SaveBaseline(ctx, "srv", map[string]string{"echo": fmt.Sprintf("drifted-%d", i), store.InstructionsKey: "instr-drifted"})).ok(t)
		if n != 0 {
			t.Fatalf("save %d replaced %d entries", i, n)
		}
	}
	// A mixed save adds the new tool only.
	if n := get(s.SaveBaseline(ctx, "srv", map[string]string{"echo": "drifted", "new": "fp-new"})).ok(t); n != 1 {
		t.Fatalf("mixed save added %d, want 1", n)
	}
	want := map[string]string{"echo": "trusted", store.InstructionsKey: "instr-trusted", "new": "fp-new"}
	if got := get(s.GetBaseline(ctx, "srv")).ok(t); !maps.Equal(got, want) {
		t.Fatalf("baseline = %v, want %v", got, want)
	}
	if v := get(s.BaselineVersion(ctx, "srv")).ok(t); v != v1+1 {
		t.Fatalf("version %d after no-op saves and one addition, want %d", v, v1+1)
	}
}

func testBaselineConcurrent(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	putServer(t, s, "srv")
	const n = 10
	var wg sync.WaitGroup
	added := make([]int, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			added[i], errs[i] = s.SaveBaseline(ctx, "srv", map[string]string{"tool": fmt.Sprintf("fp-%d", i)})
		})
	}
	wg.Wait()
	total := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		total += added[i]
	}
	if total != 1 {
		t.Fatalf("%d concurrent saves added %d entries, want exactly 1", n, total)
	}
	got := get(s.GetBaseline(ctx, "srv")).ok(t)
	winner := slices.Index(added, 1)
	if got["tool"] != fmt.Sprintf("fp-%d", winner) {
		t.Fatalf("stored %q but saver %d reported the insert", got["tool"], winner)
	}
}

func testBaselineClear(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	putServer(t, s, "srv")
	putServer(t, s, "keep")
	get(s.SaveBaseline(ctx, "keep", map[string]string{"a": "1"})).ok(t)
	v0 := get(s.BaselineVersion(ctx, "srv")).ok(t)
	get(s.SaveBaseline(ctx, "srv", map[string]string{"a": "old-a", "b": "old-b"})).ok(t)
	v1 := get(s.BaselineVersion(ctx, "srv")).ok(t)
	if v1 <= v0 {
		t.Fatalf("version did not grow on save: %d -> %d", v0, v1)
	}
	if n := get(s.ClearBaseline(ctx, "srv")).ok(t); n != 2 {
		t.Fatalf("ClearBaseline removed %d, want 2", n)
	}
	v2 := get(s.BaselineVersion(ctx, "srv")).ok(t)
	if v2 <= v1 {
		t.Fatalf("version did not grow on clear: %d -> %d", v1, v2)
	}
	if got := get(s.GetBaseline(ctx, "srv")).ok(t); len(got) != 0 {
		t.Fatalf("baseline after clear = %v", got)
	}
	// Re-trust step 2: record what the server publishes now.
	get(s.SaveBaseline(ctx, "srv", map[string]string{"a": "new-a"})).ok(t)
	if got := get(s.GetBaseline(ctx, "srv")).ok(t); got["a"] != "new-a" || len(got) != 1 {
		t.Fatalf("re-trusted baseline = %v", got)
	}
	if got := get(s.GetBaseline(ctx, "keep")).ok(t); got["a"] != "1" {
		t.Fatalf("clearing one server touched another: %v", got)
	}
	if n := get(s.ClearBaseline(ctx, "srv")).ok(t); n != 1 {
		t.Fatalf("second clear removed %d, want 1", n)
	}
	if v := get(s.GetServer(ctx, "srv")).ok(t).BaselineVersion; v != get(s.BaselineVersion(ctx, "srv")).ok(t) {
		t.Fatalf("Server.BaselineVersion %d disagrees with BaselineVersion", v)
	}
}

func key(run, call string) store.RecordKey {
	return store.RecordKey{Scope: "agent", RunID: run, ToolCallID: call}
}

func rec(k store.RecordKey, owner, executor string, lease time.Duration) store.Record {
	return store.Record{
		RecordKey:   k,
		Fingerprint: "fp-" + k.ToolCallID,
		Owner:       owner,
		Executor:    executor,
		LeaseUntil:  at(lease),
		CreatedAt:   at(0),
		ExpiresAt:   at(24 * time.Hour),
	}
}

func testClaim(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	k := key("run1", "call1")
	_, err := s.GetRecord(ctx, k)
	wantErr(t, err, store.ErrNotFound)
	r := rec(k, "alice", "exec-A", time.Minute)
	claimed, stored, err := s.Claim(ctx, r)
	if err != nil || !claimed {
		t.Fatalf("first Claim = %v, %v", claimed, err)
	}
	if stored.State != store.StateStarted || stored.Executor != "exec-A" || stored.Fingerprint != "fp-call1" ||
		!stored.LeaseUntil.Equal(at(time.Minute)) || !stored.CreatedAt.Equal(at(0)) || !stored.UpdatedAt.Equal(at(0)) {
		t.Fatalf("claimed record = %+v", stored)
	}
	got := get(s.GetRecord(ctx, k)).ok(t)
	if !recordsEqual(got, stored) {
		t.Fatalf("GetRecord = %+v, want %+v", got, stored)
	}
	// A second claim, whatever it carries, gets the existing record.
	r2 := rec(k, "mallory", "exec-B", time.Hour)
	r2.Fingerprint = "other"
	claimed, existing, err := s.Claim(ctx, r2)
	if err != nil || claimed {
		t.Fatalf("second Claim = %v, %v", claimed, err)
	}
	if !recordsEqual(existing, stored) {
		t.Fatalf("second Claim returned %+v, want the first record %+v", existing, stored)
	}
	// Same run and call IDs under another scope are another record.
	k2 := store.RecordKey{Scope: "server", RunID: "run1", ToolCallID: "call1"}
	if claimed, _, err := s.Claim(ctx, rec(k2, "bob", "exec-C", time.Minute)); err != nil || !claimed {
		t.Fatalf("Claim under another scope = %v, %v", claimed, err)
	}
	// Empty scope is allowed.
	k3 := store.RecordKey{RunID: "run1", ToolCallID: "call1"}
	if claimed, _, err := s.Claim(ctx, rec(k3, "bob", "exec-C", time.Minute)); err != nil || !claimed {
		t.Fatalf("Claim with empty scope = %v, %v", claimed, err)
	}
}

func recordsEqual(a, b store.Record) bool {
	return a.RecordKey == b.RecordKey && a.Fingerprint == b.Fingerprint && a.State == b.State &&
		bytes.Equal(a.Outcome, b.Outcome) && a.Owner == b.Owner && a.Executor == b.Executor &&
		a.LeaseUntil.Equal(b.LeaseUntil) && a.CreatedAt.Equal(b.CreatedAt) && a.UpdatedAt.Equal(b.UpdatedAt) &&
		a.ExpiresAt.Equal(b.ExpiresAt)
}

func testClaimValidation(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	cases := map[string]store.Record{
		"no run ID":   rec(store.RecordKey{Scope: "s", ToolCallID: "c"}, "o", "e", time.Minute),
		"no call ID":  rec(store.RecordKey{Scope: "s", RunID: "r"}, "o", "e", time.Minute),
		"no executor": rec(key("r", "c"), "o", "", time.Minute),
		"not started": func() store.Record {
			r := rec(key("r", "c"), "o", "e", time.Minute)
			r.State = store.StateSucceeded
			return r
		}(),
		"unknown state": func() store.Record { r := rec(key("r", "c"), "o", "e", time.Minute); r.State = "bogus"; return r }(),
	}
	for name, r := range cases {
		if _, _, err := s.Claim(ctx, r); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: Claim err = %v, want ErrInvalid", name, err)
		}
	}
	if runs := get(s.ListRuns(ctx, store.RunFilter{AnyOwner: true})).ok(t); len(runs) != 0 {
		t.Fatalf("invalid claims left rows: %+v", runs)
	}
}

func testClaimRace(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	k := key("race", "one")
	const n = 10
	var wg sync.WaitGroup
	claimed := make([]bool, n)
	stored := make([]store.Record, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			claimed[i], stored[i], errs[i] = s.Claim(ctx, rec(k, "alice", fmt.Sprintf("exec-%d", i), time.Minute))
		})
	}
	wg.Wait()
	winners := 0
	winner := -1
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("claimer %d: %v", i, errs[i])
		}
		if claimed[i] {
			winners++
			winner = i
		}
	}
	if winners != 1 {
		t.Fatalf("%d of %d concurrent claims won, want exactly 1", winners, n)
	}
	want := fmt.Sprintf("exec-%d", winner)
	for i := range n {
		if stored[i].Executor != want {
			t.Fatalf("claimer %d saw executor %q, want the winner %q", i, stored[i].Executor, want)
		}
	}
	if got := get(s.GetRecord(ctx, k)).ok(t); got.Executor != want {
		t.Fatalf("stored executor %q, want %q", got.Executor, want)
	}
}

func testComplete(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	k := key("run", "c1")
	wantErr(t, s.Complete(ctx, k, "A", store.StateSucceeded, []byte("x")), store.ErrNotFound)
	get(claimOK(ctx, s, rec(k, "alice", "A", time.Minute))).ok(t)
	wantErr(t, s.Complete(ctx, k, "A", store.StateStarted, nil), store.ErrInvalid)
	wantErr(t, s.Complete(ctx, k, "A", store.StateInDoubt, nil), store.ErrInvalid)
	wantErr(t, s.Complete(ctx, k, "A", "done", nil), store.ErrInvalid)
	// A non-holder is refused and changes nothing.
	wantErr(t, s.Complete(ctx, k, "B", store.StateSucceeded, []byte("forged")), store.ErrLeaseLost)
	if got := get(s.GetRecord(ctx, k)).ok(t); got.State != store.StateStarted || got.Outcome != nil {
		t.Fatalf("refused Complete changed the record: %+v", got)
	}
	out := []byte(`{"content":[{"type":"text","text":"ok"}]}`)
	if err := s.Complete(ctx, k, "A", store.StateSucceeded, out); err != nil {
		t.Fatal(err)
	}
	got := get(s.GetRecord(ctx, k)).ok(t)
	if got.State != store.StateSucceeded || !bytes.Equal(got.Outcome, out) || got.Executor != "A" || got.UpdatedAt.IsZero() {
		t.Fatalf("completed record = %+v", got)
	}
	// Once completed, nobody completes it again, the holder included.
	wantErr(t, s.Complete(ctx, k, "A", store.StateFailed, []byte("again")), store.ErrNotStarted)
	wantErr(t, s.Complete(ctx, k, "B", store.StateFailed, []byte("again")), store.ErrNotStarted)
	if got := get(s.GetRecord(ctx, k)).ok(t); !bytes.Equal(got.Outcome, out) || got.State != store.StateSucceeded {
		t.Fatalf("outcome overwritten: %+v", got)
	}
	// failed with an outcome.
	k2 := key("run", "c2")
	get(claimOK(ctx, s, rec(k2, "alice", "A", time.Minute))).ok(t)
	if err := s.Complete(ctx, k2, "A", store.StateFailed, []byte("boom")); err != nil {
		t.Fatal(err)
	}
	if got := get(s.GetRecord(ctx, k2)).ok(t); got.State != store.StateFailed || string(got.Outcome) != "boom" {
		t.Fatalf("failed record = %+v", got)
	}
}

func claimOK(ctx context.Context, s store.Store, r store.Record) (store.Record, error) {
	claimed, got, err := s.Claim(ctx, r)
	if err == nil && !claimed {
		err = fmt.Errorf("claim of %v was not won", r.RecordKey)
	}
	return got, err
}

func testTakeOver(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	k := key("run", "t1")
	_, err := s.TakeOver(ctx, k, "B", at(2*time.Minute), at(0))
	wantErr(t, err, store.ErrNotFound)
	get(claimOK(ctx, s, rec(k, "alice", "A", time.Minute))).ok(t)
	// Live lease: refused.
	if ok := get(s.TakeOver(ctx, k, "B", at(3*time.Minute), at(59*time.Second))).ok(t); ok {
		t.Fatal("TakeOver succeeded while the lease was live")
	}
	if got := get(s.GetRecord(ctx, k)).ok(t); got.Executor != "A" {
		t.Fatalf("refused TakeOver changed the executor to %q", got.Executor)
	}
	// At the lease's end: allowed.
	if ok := get(s.TakeOver(ctx, k, "B", at(3*time.Minute), at(time.Minute))).ok(t); !ok {
		t.Fatal("TakeOver refused after the lease expired")
	}
	got := get(s.GetRecord(ctx, k)).ok(t)
	if got.Executor != "B" || !got.LeaseUntil.Equal(at(3*time.Minute)) || got.State != store.StateStarted {
		t.Fatalf("after TakeOver = %+v", got)
	}
	// The old holder has lost the lease.
	wantErr(t, s.Complete(ctx, k, "A", store.StateSucceeded, []byte("late")), store.ErrLeaseLost)
	wantErr(t, s.RenewLease(ctx, k, "A", at(time.Hour)), store.ErrLeaseLost)
	if err := s.Complete(ctx, k, "B", store.StateSucceeded, []byte("ok")); err != nil {
		t.Fatal(err)
	}
	// A completed record cannot be taken over, however late.
	if ok := get(s.TakeOver(ctx, k, "C", at(48*time.Hour), at(47*time.Hour))).ok(t); ok {
		t.Fatal("TakeOver of a completed record succeeded")
	}
	// TakeOver extends ExpiresAt to cover the new lease.
	k2 := key("run", "t2")
	r := rec(k2, "alice", "A", time.Minute)
	r.ExpiresAt = at(2 * time.Minute)
	get(claimOK(ctx, s, r)).ok(t)
	get(s.TakeOver(ctx, k2, "B", at(10*time.Minute), at(time.Minute))).ok(t)
	if got := get(s.GetRecord(ctx, k2)).ok(t); got.ExpiresAt.Before(at(10 * time.Minute)) {
		t.Fatalf("ExpiresAt %v is before the new lease %v", got.ExpiresAt, at(10*time.Minute))
	}
	_, err = s.TakeOver(ctx, k2, "", at(time.Hour), at(time.Hour))
	wantErr(t, err, store.ErrInvalid)
}

func testTakeOverRace(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	k := key("run", "tr")
	get(claimOK(ctx, s, rec(k, "alice", "A", time.Minute))).ok(t)
	const n = 10
	var wg sync.WaitGroup
	won := make([]bool, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			won[i], errs[i] = s.TakeOver(ctx, k, fmt.Sprintf("X%d", i), at(5*time.Minute), at(2*time.Minute))
		})
	}
	wg.Wait()
	count := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if won[i] {
			count++
			if got := get(s.GetRecord(ctx, k)).ok(t); got.Executor != fmt.Sprintf("X%d", i) {
				t.Fatalf("winner X%d but executor %q", i, got.Executor)
			}
		}
	}
	if count != 1 {
		t.Fatalf("%d concurrent take-overs won, want exactly 1", count)
	}
}

func testMarkInDoubt(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	k := key("run", "d1")
	_, err := s.MarkInDoubt(ctx, k, at(0))
	wantErr(t, err, store.ErrNotFound)
	get(claimOK(ctx, s, rec(k, "alice", "A", time.Minute))).ok(t)
	if ok := get(s.MarkInDoubt(ctx, k, at(30*time.Second))).ok(t); ok {
		t.Fatal("MarkInDoubt succeeded while the lease was live")
	}
	if ok := get(s.MarkInDoubt(ctx, k, at(2*time.Minute))).ok(t); !ok {
		t.Fatal("MarkInDoubt refused after the lease expired")
	}
	got := get(s.GetRecord(ctx, k)).ok(t)
	if got.State != store.StateInDoubt || !got.UpdatedAt.Equal(at(2*time.Minute)) {
		t.Fatalf("after MarkInDoubt = %+v", got)
	}
	if ok := get(s.MarkInDoubt(ctx, k, at(3*time.Minute))).ok(t); ok {
		t.Fatal("MarkInDoubt succeeded twice")
	}
	// In doubt is final for the journal: no completion, no take-over.
	wantErr(t, s.Complete(ctx, k, "A", store.StateSucceeded, []byte("late")), store.ErrNotStarted)
	if ok := get(s.TakeOver(ctx, k, "B", at(time.Hour), at(time.Hour))).ok(t); ok {
		t.Fatal("TakeOver of an in-doubt record succeeded")
	}
	// A completed record is never marked in doubt.
	k2 := key("run", "d2")
	get(claimOK(ctx, s, rec(k2, "alice", "A", time.Minute))).ok(t)
	if err := s.Complete(ctx, k2, "A", store.StateSucceeded, nil); err != nil {
		t.Fatal(err)
	}
	if ok := get(s.MarkInDoubt(ctx, k2, at(time.Hour))).ok(t); ok {
		t.Fatal("MarkInDoubt of a succeeded record succeeded")
	}
}

func testRenewLease(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	k := key("run", "l1")
	wantErr(t, s.RenewLease(ctx, k, "A", at(time.Hour)), store.ErrNotFound)
	r := rec(k, "alice", "A", time.Minute)
	r.ExpiresAt = at(90 * time.Second)
	get(claimOK(ctx, s, r)).ok(t)
	wantErr(t, s.RenewLease(ctx, k, "B", at(time.Hour)), store.ErrLeaseLost)
	if err := s.RenewLease(ctx, k, "A", at(5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	got := get(s.GetRecord(ctx, k)).ok(t)
	if !got.LeaseUntil.Equal(at(5*time.Minute)) || got.ExpiresAt.Before(at(5*time.Minute)) {
		t.Fatalf("after RenewLease = %+v", got)
	}
	// The renewed lease protects against take-over at the old expiry.
	if ok := get(s.TakeOver(ctx, k, "B", at(time.Hour), at(2*time.Minute))).ok(t); ok {
		t.Fatal("TakeOver succeeded inside a renewed lease")
	}
	if err := s.Complete(ctx, k, "A", store.StateSucceeded, nil); err != nil {
		t.Fatal(err)
	}
	wantErr(t, s.RenewLease(ctx, k, "A", at(time.Hour)), store.ErrNotStarted)
}

func testListRuns(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	if runs := get(s.ListRuns(ctx, store.RunFilter{AnyOwner: true})).ok(t); len(runs) != 0 {
		t.Fatalf("empty store lists runs: %+v", runs)
	}
	mk := func(run, call, owner string, created time.Duration) store.RecordKey {
		k := key(run, call)
		r := rec(k, owner, "A", time.Minute)
		r.CreatedAt = at(created)
		get(claimOK(ctx, s, r)).ok(t)
		return k
	}
	a1 := mk("runA", "1", "alice", 0)
	a2 := mk("runA", "2", "alice", time.Second)
	a3 := mk("runA", "3", "alice", 2*time.Second)
	mk("runA", "4", "alice", 3*time.Second)
	b1 := mk("runB", "1", "bob", 10*time.Second)
	get(s.MarkInDoubt(ctx, a3, at(time.Hour))).ok(t)
	if err := s.Complete(ctx, a1, "A", store.StateSucceeded, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(ctx, a2, "A", store.StateFailed, nil); err != nil {
		t.Fatal(err)
	}
	_ = b1
	runs := get(s.ListRuns(ctx, store.RunFilter{Owner: "alice"})).ok(t)
	if len(runs) != 1 {
		t.Fatalf("alice's runs = %+v", runs)
	}
	r := runs[0]
	if r.Scope != "agent" || r.RunID != "runA" || r.Owner != "alice" || r.Calls != 4 || r.Started != 1 ||
		r.Succeeded != 1 || r.Failed != 1 || r.InDoubt != 1 || !r.FirstAt.Equal(at(0)) || r.LastAt.Before(at(time.Hour)) {
		t.Fatalf("run summary = %+v", r)
	}
	if runs := get(s.ListRuns(ctx, store.RunFilter{Owner: "nobody"})).ok(t); len(runs) != 0 {
		t.Fatalf("nobody's runs = %+v", runs)
	}
	all := get(s.ListRuns(ctx, store.RunFilter{AnyOwner: true})).ok(t)
	if len(all) != 2 || all[0].RunID != "runA" || all[1].RunID != "runB" {
		t.Fatalf("all runs (latest first) = %+v", all)
	}
	if lim := get(s.ListRuns(ctx, store.RunFilter{AnyOwner: true, Limit: 1})).ok(t); len(lim) != 1 || lim[0].RunID != "runA" {
		t.Fatalf("limited runs = %+v", lim)
	}
	recs := get(s.ListRecords(ctx, "agent", "runA")).ok(t)
	if len(recs) != 4 {
		t.Fatalf("ListRecords = %d records", len(recs))
	}
	for i, want := range []string{"1", "2", "3", "4"} {
		if recs[i].ToolCallID != want {
			t.Fatalf("record %d is %q, want %q (ordered by creation)", i, recs[i].ToolCallID, want)
		}
	}
	if recs[2].State != store.StateInDoubt {
		t.Fatalf("record 3 state %q", recs[2].State)
	}
	if recs := get(s.ListRecords(ctx, "other", "runA")).ok(t); len(recs) != 0 {
		t.Fatalf("ListRecords under another scope = %+v", recs)
	}
}

func testPurge(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	for i := range 3 {
		get(claimOK(ctx, s, rec(key("ra", fmt.Sprint(i)), "alice", "A", time.Minute))).ok(t)
	}
	for i := range 2 {
		get(claimOK(ctx, s, rec(key("rb", fmt.Sprint(i)), "bob", "A", time.Minute))).ok(t)
	}
	_, _, err := s.CreateApproval(ctx, store.Approval{ID: "ap-alice", RecordKey: key("ra", "0"), Owner: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = s.CreateApproval(ctx, store.Approval{ID: "ap-bob", RecordKey: key("rb", "0"), Owner: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	if n := get(s.Purge(ctx, "alice")).ok(t); n != 4 {
		t.Fatalf("Purge(alice) = %d, want 4 (3 records + 1 approval)", n)
	}
	if runs := get(s.ListRuns(ctx, store.RunFilter{Owner: "alice"})).ok(t); len(runs) != 0 {
		t.Fatalf("alice still has runs: %+v", runs)
	}
	_, err = s.GetApproval(ctx, "ap-alice")
	wantErr(t, err, store.ErrNotFound)
	if runs := get(s.ListRuns(ctx, store.RunFilter{Owner: "bob"})).ok(t); len(runs) != 1 || runs[0].Calls != 2 {
		t.Fatalf("bob's runs after alice's purge = %+v", runs)
	}
	get(s.GetApproval(ctx, "ap-bob")).ok(t)
	if n := get(s.Purge(ctx, "alice")).ok(t); n != 0 {
		t.Fatalf("second Purge(alice) = %d", n)
	}
	if n := get(s.Purge(ctx, "")).ok(t); n != 0 {
		t.Fatalf("Purge of the empty owner deleted %d rows of named owners", n)
	}
	// A purged key can be claimed afresh.
	get(claimOK(ctx, s, rec(key("ra", "0"), "alice", "A", time.Minute))).ok(t)
}

func testSweep(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	exp := func(call string, e time.Time) {
		r := rec(key("sw", call), "alice", "A", time.Minute)
		r.ExpiresAt = e
		get(claimOK(ctx, s, r)).ok(t)
	}
	exp("past", at(time.Hour))
	exp("edge", at(2*time.Hour))
	exp("future", at(3*time.Hour))
	exp("never", time.Time{})
	if n := get(s.Sweep(ctx, at(30*time.Minute))).ok(t); n != 0 {
		t.Fatalf("early sweep deleted %d", n)
	}
	if n := get(s.Sweep(ctx, at(2*time.Hour))).ok(t); n != 2 {
		t.Fatalf("Sweep deleted %d, want 2 (expired before and at now)", n)
	}
	for call, want := range map[string]bool{"past": false, "edge": false, "future": true, "never": true} {
		_, err := s.GetRecord(ctx, key("sw", call))
		if (err == nil) != want {
			t.Errorf("record %q present=%v, want %v (err %v)", call, err == nil, want, err)
		}
	}
	if n := get(s.Sweep(ctx, at(100*365*24*time.Hour))).ok(t); n != 1 {
		t.Fatalf("far sweep deleted %d, want 1 (the never-expiring one stays)", n)
	}
}

func testOldestStarted(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	if got := get(s.OldestStarted(ctx)).ok(t); !got.IsZero() {
		t.Fatalf("OldestStarted of an empty store = %v, want the zero time", got)
	}
	claimAt := func(run, call string, created time.Duration) store.RecordKey {
		t.Helper()
		k := key(run, call)
		r := rec(k, "alice", "A", time.Hour)
		r.CreatedAt = at(created)
		get(claimOK(ctx, s, r)).ok(t)
		return k
	}
	// The oldest records end in other states: succeeded, failed, in doubt.
	done := claimAt("r1", "succeeded", 1*time.Second)
	failed := claimAt("r1", "failed", 2*time.Second)
	doubt := claimAt("r2", "in-doubt", 3*time.Second)
	if err := s.Complete(ctx, done, "A", store.StateSucceeded, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(ctx, failed, "A", store.StateFailed, nil); err != nil {
		t.Fatal(err)
	}
	if ok := get(s.MarkInDoubt(ctx, doubt, at(2*time.Hour))).ok(t); !ok {
		t.Fatal("MarkInDoubt refused")
	}
	if got := get(s.OldestStarted(ctx)).ok(t); !got.IsZero() {
		t.Fatalf("OldestStarted with no started record = %v, want the zero time", got)
	}
	// Started records in several runs, scopes and owners, claimed out of
	// order.
	third := claimAt("r3", "third", 30*time.Second)
	first := claimAt("r2", "first", 10*time.Second)
	other := rec(store.RecordKey{Scope: "server", RunID: "r9", ToolCallID: "second"}, "bob", "B", time.Hour)
	other.CreatedAt = at(20 * time.Second)
	get(claimOK(ctx, s, other)).ok(t)
	if got := get(s.OldestStarted(ctx)).ok(t); !got.Equal(at(10 * time.Second)) {
		t.Fatalf("OldestStarted = %v, want %v", got, at(10*time.Second))
	}
	// Completing the oldest makes the next one the oldest; a taken-over
	// record is still started and keeps its CreatedAt.
	if err := s.Complete(ctx, first, "A", store.StateSucceeded, []byte("ok")); err != nil {
		t.Fatal(err)
	}
	if got := get(s.OldestStarted(ctx)).ok(t); !got.Equal(at(20 * time.Second)) {
		t.Fatalf("OldestStarted after completing the oldest = %v, want %v", got, at(20*time.Second))
	}
	if ok := get(s.TakeOver(ctx, other.RecordKey, "C", at(3*time.Hour), at(2*time.Hour))).ok(t); !ok {
		t.Fatal("TakeOver refused")
	}
	if got := get(s.OldestStarted(ctx)).ok(t); !got.Equal(at(20 * time.Second)) {
		t.Fatalf("OldestStarted after a take-over = %v, want %v", got, at(20*time.Second))
	}
	if err := s.Complete(ctx, other.RecordKey, "C", store.StateFailed, nil); err != nil {
		t.Fatal(err)
	}
	if got := get(s.OldestStarted(ctx)).ok(t); !got.Equal(at(30 * time.Second)) {
		t.Fatalf("OldestStarted = %v, want %v", got, at(30*time.Second))
	}
	if err := s.Complete(ctx, third, "A", store.StateSucceeded, nil); err != nil {
		t.Fatal(err)
	}
	if got := get(s.OldestStarted(ctx)).ok(t); !got.IsZero() {
		t.Fatalf("OldestStarted after completing every record = %v, want the zero time", got)
	}
}

func testCounters(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	now := time.Now()
	later := now.Add(time.Hour)
	if v := get(s.GetCounter(ctx, "c", now)).ok(t); v != 0 {
		t.Fatalf("missing counter = %d", v)
	}
	_, err := s.IncrBy(ctx, "", 1, later)
	wantErr(t, err, store.ErrInvalid)
	for i, want := range []int64{1, 3, 6} {
		if v := get(s.IncrBy(ctx, "c", int64(i+1), later)).ok(t); v != want {
			t.Fatalf("IncrBy #%d = %d, want %d", i, v, want)
		}
	}
	if v := get(s.IncrBy(ctx, "c", -2, later)).ok(t); v != 4 {
		t.Fatalf("negative delta = %d, want 4", v)
	}
	if v := get(s.GetCounter(ctx, "c", now)).ok(t); v != 4 {
		t.Fatalf("GetCounter = %d, want 4", v)
	}
	if v := get(s.IncrBy(ctx, "d", 7, time.Time{})).ok(t); v != 7 {
		t.Fatalf("other counter = %d", v)
	}
	// Expired at the deadline itself.
	if v := get(s.GetCounter(ctx, "c", later)).ok(t); v != 0 {
		t.Fatalf("GetCounter at expiry = %d, want 0", v)
	}
	if v := get(s.GetCounter(ctx, "d", now.Add(1000*time.Hour))).ok(t); v != 7 {
		t.Fatalf("never-expiring counter read %d", v)
	}
	if n := get(s.SweepCounters(ctx, now)).ok(t); n != 0 {
		t.Fatalf("early SweepCounters = %d", n)
	}
	if n := get(s.SweepCounters(ctx, later)).ok(t); n != 1 {
		t.Fatalf("SweepCounters = %d, want 1", n)
	}
	if v := get(s.GetCounter(ctx, "c", now)).ok(t); v != 0 {
		t.Fatalf("swept counter read %d", v)
	}
	if v := get(s.GetCounter(ctx, "d", now)).ok(t); v != 7 {
		t.Fatalf("sweep removed a never-expiring counter (%d)", v)
	}
	// A live counter keeps the later of its expiries.
	get(s.IncrBy(ctx, "e", 1, now.Add(time.Hour))).ok(t)
	get(s.IncrBy(ctx, "e", 1, now.Add(time.Minute))).ok(t)
	if v := get(s.GetCounter(ctx, "e", now.Add(30*time.Minute))).ok(t); v != 2 {
		t.Fatalf("counter lost its later expiry: %d", v)
	}
}

func testCountersConcurrent(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	const n = 50
	exp := time.Now().Add(time.Hour)
	var wg sync.WaitGroup
	vals := make([]int64, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { vals[i], errs[i] = s.IncrBy(ctx, "hot", 1, exp) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(vals)
	for i, v := range vals {
		if v != int64(i+1) {
			t.Fatalf("returned values %v are not exactly 1..%d", vals, n)
		}
	}
	if v := get(s.GetCounter(ctx, "hot", time.Now())).ok(t); v != n {
		t.Fatalf("counter = %d, want %d", v, n)
	}
}

func testCounterWindow(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	now := time.Now()
	// A window that has already ended (by the store's clock) ...
	if v := get(s.IncrBy(ctx, "win", 5, now.Add(-time.Second))).ok(t); v != 5 {
		t.Fatalf("first IncrBy = %d", v)
	}
	// ... restarts from zero on the next IncrBy, with the new expiry.
	if v := get(s.IncrBy(ctx, "win", 1, now.Add(time.Hour))).ok(t); v != 1 {
		t.Fatalf("IncrBy after expiry = %d, want 1 (restart)", v)
	}
	if v := get(s.IncrBy(ctx, "win", 1, now.Add(time.Hour))).ok(t); v != 2 {
		t.Fatalf("IncrBy in the new window = %d, want 2", v)
	}
	if v := get(s.GetCounter(ctx, "win", now)).ok(t); v != 2 {
		t.Fatalf("GetCounter = %d", v)
	}
}

func approval(id, run, call, owner string) store.Approval {
	return store.Approval{ID: id, RecordKey: key(run, call), Server: "bank", Tool: "transfer",
		ArgsFingerprint: "args-" + call, Reason: "tool description changed", Owner: owner, CreatedAt: at(0)}
}

func testApprovals(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	_, err := s.GetApproval(ctx, "nope")
	wantErr(t, err, store.ErrNotFound)
	_, err = s.GetApprovalByCall(ctx, key("r", "c"))
	wantErr(t, err, store.ErrNotFound)
	_, err = s.DecideApproval(ctx, "nope", true, "op", at(time.Minute))
	wantErr(t, err, store.ErrNotFound)
	for name, a := range map[string]store.Approval{
		"no ID":       approval("", "r", "c", "o"),
		"no run":      approval("x", "", "c", "o"),
		"no call":     approval("x", "r", "", "o"),
		"not pending": func() store.Approval { a := approval("x", "r", "c", "o"); a.State = store.ApprovalApproved; return a }(),
	} {
		if _, _, err := s.CreateApproval(ctx, a); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: CreateApproval err = %v, want ErrInvalid", name, err)
		}
	}
	_, err = s.ListApprovals(ctx, "bogus")
	wantErr(t, err, store.ErrInvalid)

	a1 := approval("ap1", "r", "c1", "alice")
	got, created, err := s.CreateApproval(ctx, a1)
	if err != nil || !created {
		t.Fatalf("CreateApproval = %v, %v", created, err)
	}
	if got.State != store.ApprovalPending || got.ID != "ap1" || !got.CreatedAt.Equal(at(0)) || !got.DecidedAt.IsZero() {
		t.Fatalf("created = %+v", got)
	}
	// Idempotent on the call key, even under another ID.
	again := approval("ap1-retry", "r", "c1", "alice")
	again.Reason = "other"
	got2, created, err := s.CreateApproval(ctx, again)
	if err != nil || created || got2.ID != "ap1" || got2.Reason != a1.Reason {
		t.Fatalf("repeat CreateApproval = %+v, %v, %v", got2, created, err)
	}
	// The same ID for another call is a conflict.
	_, _, err = s.CreateApproval(ctx, approval("ap1", "r", "c9", "alice"))
	wantErr(t, err, store.ErrConflict)

	a2 := approval("ap2", "r", "c2", "bob")
	a2.CreatedAt = at(time.Second)
	get3(s.CreateApproval(ctx, a2)).ok(t)
	byCall := get(s.GetApprovalByCall(ctx, key("r", "c2"))).ok(t)
	if byCall.ID != "ap2" || byCall.Owner != "bob" || byCall.Server != "bank" || byCall.Tool != "transfer" || byCall.ArgsFingerprint != "args-c2" {
		t.Fatalf("GetApprovalByCall = %+v", byCall)
	}
	pending := get(s.ListApprovals(ctx, store.ApprovalPending)).ok(t)
	if len(pending) != 2 || pending[0].ID != "ap1" || pending[1].ID != "ap2" {
		t.Fatalf("pending = %+v", pending)
	}
	dec := get(s.DecideApproval(ctx, "ap1", true, "operator", at(time.Minute))).ok(t)
	if dec.State != store.ApprovalApproved || dec.DecidedBy != "operator" || !dec.DecidedAt.Equal(at(time.Minute)) {
		t.Fatalf("decided = %+v", dec)
	}
	_, err = s.DecideApproval(ctx, "ap1", false, "someone", at(2*time.Minute))
	wantErr(t, err, store.ErrAlreadyDecided)
	if g := get(s.GetApproval(ctx, "ap1")).ok(t); g.State != store.ApprovalApproved || g.DecidedBy != "operator" {
		t.Fatalf("second decision changed the approval: %+v", g)
	}
	den := get(s.DecideApproval(ctx, "ap2", false, "operator", at(time.Minute))).ok(t)
	if den.State != store.ApprovalDenied {
		t.Fatalf("denied = %+v", den)
	}
	for state, want := range map[store.ApprovalState][]string{
		store.ApprovalPending: nil, store.ApprovalApproved: {"ap1"}, store.ApprovalDenied: {"ap2"}, "": {"ap1", "ap2"},
	} {
		var ids []string
		for _, a := range get(s.ListApprovals(ctx, state)).ok(t) {
			ids = append(ids, a.ID)
		}
		if !slices.Equal(ids, want) {
			t.Errorf("ListApprovals(%q) = %v, want %v", state, ids, want)
		}
	}
	// Creating again after the decision returns the decided approval.
	got3, created, err := s.CreateApproval(ctx, approval("ap1", "r", "c1", "alice"))
	if err != nil || created || got3.State != store.ApprovalApproved {
		t.Fatalf("CreateApproval after decision = %+v, %v, %v", got3, created, err)
	}
}

func testApprovalRace(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	get3(s.CreateApproval(ctx, approval("ap", "r", "c", "alice"))).ok(t)
	const n = 10
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = s.DecideApproval(ctx, "ap", i%2 == 0, fmt.Sprintf("op%d", i), at(time.Minute))
		})
	}
	wg.Wait()
	wins := 0
	for i, err := range errs {
		switch {
		case err == nil:
			wins++
			a := get(s.GetApproval(ctx, "ap")).ok(t)
			if a.DecidedBy != fmt.Sprintf("op%d", i) || (a.State == store.ApprovalApproved) != (i%2 == 0) {
				t.Fatalf("winner op%d but stored %+v", i, a)
			}
		case errors.Is(err, store.ErrAlreadyDecided):
		default:
			t.Fatal(err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d decisions won, want exactly 1", wins)
	}
}

func testTimestamps(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	// Sub-millisecond precision and non-UTC zones read back as UTC ms.
	loc := time.FixedZone("X", 5*3600)
	created := time.Date(2026, 1, 2, 3, 4, 5, 678_901_234, loc)
	r := rec(key("ts", "1"), "alice", "A", time.Minute)
	r.CreatedAt = created
	stored, err := claimOK(ctx, s, r)
	if err != nil {
		t.Fatal(err)
	}
	got := get(s.GetRecord(ctx, key("ts", "1"))).ok(t)
	want := created.Truncate(time.Millisecond).UTC()
	if !got.CreatedAt.Equal(want) || got.CreatedAt.Location() != time.UTC || !recordsEqual(got, stored) {
		t.Fatalf("CreatedAt = %v (%v), want %v UTC; claim returned %+v", got.CreatedAt, got.CreatedAt.Location(), want, stored)
	}
	// Zero CreatedAt is filled from the store's clock.
	before := time.Now().Add(-time.Second)
	r2 := rec(key("ts", "2"), "alice", "A", time.Minute)
	r2.CreatedAt = time.Time{}
	get(claimOK(ctx, s, r2)).ok(t)
	got2 := get(s.GetRecord(ctx, key("ts", "2"))).ok(t)
	if got2.CreatedAt.Before(before) || got2.CreatedAt.After(time.Now().Add(time.Second)) {
		t.Fatalf("filled CreatedAt = %v, want about now", got2.CreatedAt)
	}
	// Zero LeaseUntil and ExpiresAt read back as zero.
	r3 := rec(key("ts", "3"), "alice", "A", 0)
	r3.LeaseUntil, r3.ExpiresAt = time.Time{}, time.Time{}
	get(claimOK(ctx, s, r3)).ok(t)
	if got3 := get(s.GetRecord(ctx, key("ts", "3"))).ok(t); !got3.LeaseUntil.IsZero() || !got3.ExpiresAt.IsZero() {
		t.Fatalf("zero times read back as %v / %v", got3.LeaseUntil, got3.ExpiresAt)
	}
}
