package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/store"
)

// readCounter counts the record reads of a real store.
type readCounter struct {
	store.Store
	reads atomic.Int32
}

func (r *readCounter) GetRecord(ctx context.Context, key store.RecordKey) (store.Record, error) {
	r.reads.Add(1)
	return r.Store.GetRecord(ctx, key)
}

// TestGuardedPureGuard: with a policy.Pure guard, Guarded asks the guard
// before reading: an allowed fresh call is claimed without a read and runs
// once, and its repeat is replayed by the claim (one effect at the server,
// no read). A call the guard does not allow is read first: a recorded one
// is still answered from its record whatever the guard says now, an
// approval-required one is never claimed until approved (then runs once),
// a denied one leaves no record. A guard that is not Pure is never asked
// about a recorded call and is read before.
func TestGuardedPureGuard(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		ctx := ctxT(t)
		file := filepath.Join(t.TempDir(), "effects")
		cs := inMemServer(t, file)
		rs := &readCounter{Store: s}
		j := newJournal(t, rs, &JournalOptions{Scope: "agent", Approvals: s})
		var checks atomic.Int32
		var verdict atomic.Value // of policy.Decision
		verdict.Store(policy.Allowed())
		pure := policy.PureFunc(func(context.Context, policy.Call) (policy.Decision, error) {
			checks.Add(1)
			return verdict.Load().(policy.Decision), nil
		})
		args := json.RawMessage(`{"amount":7}`)
		call := func(id string) Call {
			return Call{RunID: "run", ToolCallID: id, Server: "bank", Tool: "bank__charge", RemoteName: "charge", Args: args, Owner: "alice"}
		}
		effects := func(id string) int {
			effs, _ := effectsIn(t, file)
			return len(effs["run:"+id])
		}
		absent := func(id string) {
			t.Helper()
			if _, err := s.GetRecord(ctx, store.RecordKey{Scope: "agent", RunID: "run", ToolCallID: id}); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("%s has a record: %v", id, err)
			}
		}

		// Allowed: claimed without a read, run once; the repeat is
		// replayed by the claim, byte for byte.
		first, replayed, err := j.Guarded(ctx, call("a"), pure, effectOf(cs, "charge", args))
		if err != nil || replayed || first.IsError {
			t.Fatal(first, replayed, err)
		}
		if n := rs.reads.Load(); n != 0 {
			t.Errorf("%d record reads before the claim of a call a Pure guard allowed, want 0", n)
		}
		again, replayed, err := j.Guarded(ctx, call("a"), pure, nil2(t))
		if err != nil || !replayed || string(mustJSONT(t, again)) != string(mustJSONT(t, first)) {
			t.Fatalf("repeat: %v %v, want the first result replayed", replayed, err)
		}
		if n := effects("a"); n != 1 {
			t.Fatalf("%d effects of a, want 1", n)
		}
		if rec := getRecord(t, s, j, call("a")); rec.State != store.StateSucceeded {
			t.Fatalf("record of a: %+v", rec)
		}

		// The guard now denies (a contract changed, say): the recorded
		// call is still answered from its record, never refused or run.
		verdict.Store(policy.Denied(refusal.Quarantined, "changed"))
		again, replayed, err = j.Guarded(ctx, call("a"), pure, nil2(t))
		if err != nil || !replayed || string(mustJSONT(t, again)) != string(mustJSONT(t, first)) {
			t.Fatalf("recorded call under a denying guard: %v %v, want the first result replayed", replayed, err)
		}
		// A fresh call it denies: refused, no record, no effect.
		_, _, err = j.Guarded(ctx, call("d"), pure, nil2(t))
		wantCode(t, err, refusal.Quarantined)
		absent("d")

		// Approval required: never claimed until approved; then it runs
		// once and replays, the guard still requiring approval.
		verdict.Store(policy.NeedsApproval("charges move money"))
		var id string
		for range 2 {
			_, _, err = j.Guarded(ctx, call("p"), pure, nil2(t))
			id = wantCode(t, err, refusal.ApprovalRequired).ApprovalID
			absent("p")
		}
		if _, err := s.DecideApproval(ctx, id, true, "ops", time.Now()); err != nil {
			t.Fatal(err)
		}
		res, replayed, err := j.Guarded(ctx, call("p"), pure, effectOf(cs, "charge", args))
		if err != nil || replayed || res.IsError {
			t.Fatal(res, replayed, err)
		}
		if _, replayed, err = j.Guarded(ctx, call("p"), pure, nil2(t)); err != nil || !replayed {
			t.Fatalf("approved call repeated: %v %v, want a replay", replayed, err)
		}
		if n := effects("p"); n != 1 {
			t.Fatalf("%d effects of p, want 1", n)
		}

		// A guard that is not Pure: read first, not asked about a
		// recorded call.
		checks.Store(0)
		counting := policy.GuardFunc(func(ctx context.Context, c policy.Call) (policy.Decision, error) {
			checks.Add(1)
			return policy.Allowed(), nil
		})
		reads := rs.reads.Load()
		if _, replayed, err := j.Guarded(ctx, call("a"), counting, nil2(t)); err != nil || !replayed {
			t.Fatalf("replay under a counting guard: %v %v", replayed, err)
		}
		if checks.Load() != 0 || rs.reads.Load() != reads+1 {
			t.Errorf("counting guard asked %d times, %d reads, about a recorded call; want 0 and 1", checks.Load(), rs.reads.Load()-reads)
		}
	})
}

// TestGuardedPureGuardReplays: behind a Pure guard, replays that keep
// coming are read first (answered without a claim, hence without a write),
// and once fresh calls dominate again the claim goes first; either way
// every call runs once and every repeat replays.
func TestGuardedPureGuardReplays(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		ctx := ctxT(t)
		file := filepath.Join(t.TempDir(), "effects")
		cs := inMemServer(t, file)
		rs := &readCounter{Store: s}
		j := newJournal(t, rs, nil)
		args := json.RawMessage(`{"amount":1}`)
		call := func(id string) Call {
			return Call{RunID: "run", ToolCallID: id, Server: "bank", Tool: "charge", Args: args, Owner: "alice"}
		}
		first, _, err := j.Guarded(ctx, call("x"), policy.AllowAll(), effectOf(cs, "charge", args))
		if err != nil || rs.reads.Load() != 0 {
			t.Fatalf("fresh call: %v, %d reads", err, rs.reads.Load())
		}
		for i := range 10 {
			res, replayed, err := j.Guarded(ctx, call("x"), policy.AllowAll(), nil2(t))
			if err != nil || !replayed || string(mustJSONT(t, res)) != string(mustJSONT(t, first)) {
				t.Fatalf("replay %d: %v %v", i, replayed, err)
			}
		}
		if n := rs.reads.Load(); n < 8 {
			t.Errorf("%d reads for 10 replays in a row, want the read first for (nearly) all of them", n)
		}
		for i := range 40 {
			if _, replayed, err := j.Guarded(ctx, call(fmt.Sprint("y", i)), policy.AllowAll(), effectOf(cs, "charge", args)); err != nil || replayed {
				t.Fatalf("fresh call y%d: %v %v", i, replayed, err)
			}
		}
		before := rs.reads.Load()
		if _, _, err := j.Guarded(ctx, call("z"), policy.AllowAll(), effectOf(cs, "charge", args)); err != nil {
			t.Fatal(err)
		}
		if rs.reads.Load() != before {
			t.Error("a fresh call after 40 fresh calls was read before its claim")
		}
		effs, _ := effectsIn(t, file)
		for _, id := range append([]string{"x", "z"}, "y0", "y39") {
			if len(effs["run:"+id]) != 1 {
				t.Errorf("%s: %d effects, want 1", id, len(effs["run:"+id]))
			}
		}
		if len(effs) != 42 {
			t.Errorf("%d keys with effects, want 42", len(effs))
		}
	})
}
