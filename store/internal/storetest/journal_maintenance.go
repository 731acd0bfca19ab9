package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

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
	_, _, err := s.CreateApproval(ctx, store.Approval{ID: "ap-alice", RecordKey: key("ra", "0"), Owner: "alice"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = s.CreateApproval(ctx, store.Approval{ID: "ap-bob", RecordKey: key("rb", "0"), Owner: "bob"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	// A decided approval goes with its decisions.
	get(s.DecideApproval(ctx, "ap-alice", true, "ops", time.Now())).ok(t)
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
