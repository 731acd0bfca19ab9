package durable

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/testclock"
	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/store"
)

// approvalGuard requires an approval for every call.
var approvalGuard = policy.GuardFunc(func(context.Context, policy.Call) (policy.Decision, error) {
	return policy.NeedsApproval("charges move money"), nil
})

// approvalRig is a journal over a real store, with the effect server as a
// stdio subprocess counting effects in a file.
type approvalRig struct {
	s     store.Store
	j     *Journal
	clock *testclock.Clock
	file  string
	eff   func(args json.RawMessage) Effect
}

func newApprovalRig(t *testing.T, s store.Store) *approvalRig {
	t.Helper()
	ctx := ctxT(t)
	file := filepath.Join(t.TempDir(), "effects")
	cs, err := connectEffectServer(ctx, file)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	clock := testclock.New(time.Now())
	j := newJournal(t, s, &JournalOptions{Scope: "agent", TTL: time.Hour, Approvals: s, Clock: clock.Now})
	return &approvalRig{s: s, j: j, clock: clock, file: file,
		eff: func(args json.RawMessage) Effect { return effectOf(cs, "charge", args) }}
}

func (r *approvalRig) effects(t *testing.T, key string) int {
	t.Helper()
	e, _ := effectsIn(t, r.file)
	return len(e[key])
}

// TestApprovalSweepReplay is the attack on an approval that authorized a
// key forever: approve a charge once, run it, let the journal sweep its
// record, and send the same call with the same key again. It must ask for
// a new approval, never run on the old one.
func TestApprovalSweepReplay(t *testing.T) {
	for _, k := range storeKinds(t, false) {
		t.Run(k.name, func(t *testing.T) {
			s, _ := k.open(t)
			r := newApprovalRig(t, s)
			ctx := ctxT(t)
			args := json.RawMessage(`{"amount":100}`)
			c := Call{RunID: "run", ToolCallID: "pay-1", Server: "bank", Tool: "bank__charge", RemoteName: "charge", Args: args, Owner: "alice"}

			_, _, err := r.j.Guarded(ctx, c, approvalGuard, r.eff(args))
			first := wantCode(t, err, refusal.ApprovalRequired).ApprovalID
			if _, err := s.DecideApproval(ctx, first, true, "ops", time.Now()); err != nil {
				t.Fatal(err)
			}
			if res, replayed, err := r.j.Guarded(ctx, c, approvalGuard, r.eff(args)); err != nil || replayed || res.IsError {
				t.Fatalf("approved call: %v %v %v", res, replayed, err)
			}
			if _, replayed, err := r.j.Guarded(ctx, c, approvalGuard, nil2(t)); err != nil || !replayed {
				t.Fatalf("repeat: replayed %v, %v", replayed, err)
			}
			if n := r.effects(t, "run:pay-1"); n != 1 {
				t.Fatalf("effects after the approved call = %d, want 1", n)
			}

			// The journal's TTL passes; the sweep deletes the record.
			r.clock.Advance(2 * time.Hour)
			if n, err := r.j.Sweep(ctx); err != nil || n < 1 {
				t.Fatalf("sweep = %d, %v", n, err)
			}
			if _, err := s.GetRecord(ctx, r.j.key(c)); err == nil {
				t.Fatal("the record survived the sweep")
			}
			// The same call, the same key: a new approval is needed, twice.
			var second string
			for range 2 {
				_, _, err = r.j.Guarded(ctx, c, approvalGuard, r.eff(args))
				e := wantCode(t, err, refusal.ApprovalRequired)
				if e.ApprovalID == first || (second != "" && e.ApprovalID != second) {
					t.Fatalf("after the sweep: approval %s (first was %s, second %s)", e.ApprovalID, first, second)
				}
				second = e.ApprovalID
			}
			if n := r.effects(t, "run:pay-1"); n != 1 {
				t.Fatalf("effects after the sweep = %d, want 1: the old approval ran the call again", n)
			}
			// The old approval reads back as spent; a new decision allows
			// exactly one more execution.
			if a, err := s.GetApproval(ctx, first); err != nil || a.State == store.ApprovalApproved {
				t.Fatalf("the first approval after its use = %+v, %v", a, err)
			}
			if _, err := s.DecideApproval(ctx, second, true, "ops", time.Now()); err != nil {
				t.Fatal(err)
			}
			if _, replayed, err := r.j.Guarded(ctx, c, approvalGuard, r.eff(args)); err != nil || replayed {
				t.Fatalf("newly approved call: replayed %v, %v", replayed, err)
			}
			if n := r.effects(t, "run:pay-1"); n != 2 {
				t.Fatalf("effects after the second approval = %d, want 2", n)
			}
		})
	}
}

// TestApprovalSpentOnceByConcurrentCalls: two journals (two replicas) race
// the same approved call; it runs once. After the sweep they race again;
// nothing runs.
func TestApprovalSpentOnceByConcurrentCalls(t *testing.T) {
	for _, k := range storeKinds(t, false) {
		t.Run(k.name, func(t *testing.T) {
			s, _ := k.open(t)
			r := newApprovalRig(t, s)
			ctx := ctxT(t)
			other := newJournal(t, s, &JournalOptions{Scope: "agent", TTL: time.Hour, Approvals: s, Clock: r.clock.Now})
			args := json.RawMessage(`{"amount":250,"sleepMs":200}`)
			c := Call{RunID: "run", ToolCallID: "pay-c", Server: "bank", Tool: "bank__charge", RemoteName: "charge", Args: args, Owner: "alice"}
			_, _, err := r.j.Guarded(ctx, c, approvalGuard, r.eff(args))
			id := wantCode(t, err, refusal.ApprovalRequired).ApprovalID
			if _, err := s.DecideApproval(ctx, id, true, "ops", time.Now()); err != nil {
				t.Fatal(err)
			}
			race := func() []error {
				const n = 8
				errs := make([]error, n)
				var wg sync.WaitGroup
				for i := range n {
					j := r.j
					if i%2 == 1 {
						j = other
					}
					wg.Go(func() { _, _, errs[i] = j.Guarded(ctx, c, approvalGuard, r.eff(args)) })
				}
				wg.Wait()
				return errs
			}
			for _, err := range race() {
				if e, ok := refusal.As(err); err != nil && (!ok || (e.Code != refusal.RunBusy && e.Code != refusal.ApprovalRequired)) {
					t.Fatalf("racing an approved call: %v", err)
				}
			}
			if n := r.effects(t, "run:pay-c"); n != 1 {
				t.Fatalf("effects = %d, want 1", n)
			}
			r.clock.Advance(2 * time.Hour)
			if _, err := r.j.Sweep(ctx); err != nil {
				t.Fatal(err)
			}
			for _, err := range race() {
				wantCode(t, err, refusal.ApprovalRequired)
			}
			if n := r.effects(t, "run:pay-c"); n != 1 {
				t.Fatalf("effects after the sweep = %d, want 1", n)
			}
		})
	}
}

// TestApprovalIsForItsArguments: two charges that differ only in the
// amount are two approvals; approving one runs that one only, and the
// other amount never runs on it, under its own key or the approved one's.
func TestApprovalIsForItsArguments(t *testing.T) {
	for _, k := range storeKinds(t, true) {
		t.Run(k.name, func(t *testing.T) {
			s, _ := k.open(t)
			r := newApprovalRig(t, s)
			ctx := ctxT(t)
			small, big := json.RawMessage(`{"amount":100}`), json.RawMessage(`{"amount":1000000}`)
			cs := Call{RunID: "run", ToolCallID: "pay-s", Server: "bank", Tool: "bank__charge", RemoteName: "charge", Args: small, Owner: "alice"}
			cb := cs
			cb.ToolCallID, cb.Args = "pay-b", big

			_, _, err := r.j.Guarded(ctx, cs, approvalGuard, r.eff(small))
			ids := wantCode(t, err, refusal.ApprovalRequired).ApprovalID
			_, _, err = r.j.Guarded(ctx, cb, approvalGuard, r.eff(big))
			idb := wantCode(t, err, refusal.ApprovalRequired).ApprovalID
			if ids == idb {
				t.Fatalf("two amounts share approval %s", ids)
			}
			pending, err := s.ListApprovals(ctx, store.ApprovalPending)
			if err != nil || len(pending) != 2 {
				t.Fatalf("pending = %+v, %v", pending, err)
			}
			if _, err := s.DecideApproval(ctx, ids, true, "ops", time.Now()); err != nil {
				t.Fatal(err)
			}
			// The big amount under its own key: still waiting.
			_, _, err = r.j.Guarded(ctx, cb, approvalGuard, r.eff(big))
			if e := wantCode(t, err, refusal.ApprovalRequired); e.ApprovalID != idb {
				t.Fatalf("big amount: %+v", e)
			}
			// The big amount under the approved key: refused, not run.
			swap := cs
			swap.Args = big
			_, _, err = r.j.Guarded(ctx, swap, approvalGuard, r.eff(big))
			wantCode(t, err, refusal.KeyReused)
			if e, _ := effectsIn(t, r.file); len(e) != 0 {
				t.Fatalf("effects before the approved call: %v", e)
			}
			// The small amount runs once.
			if _, _, err := r.j.Guarded(ctx, cs, approvalGuard, r.eff(small)); err != nil {
				t.Fatal(err)
			}
			// Swept and sent again with the big amount on the small one's key:
			// a new approval for the big amount, nothing run.
			r.clock.Advance(2 * time.Hour)
			if _, err := r.j.Sweep(ctx); err != nil {
				t.Fatal(err)
			}
			_, _, err = r.j.Guarded(ctx, swap, approvalGuard, r.eff(big))
			if e := wantCode(t, err, refusal.ApprovalRequired); e.ApprovalID == ids {
				t.Fatalf("the spent approval answered for other arguments: %+v", e)
			}
			e, _ := effectsIn(t, r.file)
			if len(e["run:pay-s"]) != 1 || len(e["run:pay-b"]) != 0 || len(e) != 1 {
				t.Fatalf("effects = %v, want one charge of the approved amount", e)
			}
		})
	}
}

// TestApprovalPendingFlood: one subject asking for approvals without end
// fills the operator's queue up to the bound (DefaultMaxPendingApprovals),
// no further; another subject still asks.
func TestApprovalPendingFlood(t *testing.T) {
	s, _ := storeKinds(t, false)[0].open(t) // SQLite
	ctx := ctxT(t)
	j := newJournal(t, s, &JournalOptions{Scope: "agent", Approvals: s})
	const extra = 5
	refused := 0
	for i := range DefaultMaxPendingApprovals + extra {
		args := json.RawMessage(fmt.Sprintf(`{"amount":%d}`, i))
		c := Call{RunID: "flood", ToolCallID: fmt.Sprint("c", i), Server: "bank", Tool: "bank__charge", Args: args, Owner: "mallory"}
		_, _, err := j.Guarded(ctx, c, approvalGuard, nil2(t))
		e, ok := refusal.As(err)
		switch {
		case ok && e.Code == refusal.ApprovalRequired:
		case ok && e.Code == refusal.RateLimited:
			refused++
			if !e.Retryable || e.RetryAfter <= 0 || e.RetryAfter > DefaultApprovalTTL {
				t.Fatalf("rate_limited refusal %+v", e)
			}
		default:
			t.Fatalf("call %d: %v", i, err)
		}
	}
	pending, err := s.ListApprovals(ctx, store.ApprovalPending)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != DefaultMaxPendingApprovals || refused != extra {
		t.Fatalf("%d pending approvals, %d calls refused; want %d and %d", len(pending), refused, DefaultMaxPendingApprovals, extra)
	}
	c := Call{RunID: "other", ToolCallID: "c", Server: "bank", Tool: "bank__charge", Owner: "alice"}
	_, _, err = j.Guarded(ctx, c, approvalGuard, nil2(t))
	wantCode(t, err, refusal.ApprovalRequired)
}
