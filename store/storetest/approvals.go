package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

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
