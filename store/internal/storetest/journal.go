package storetest

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
