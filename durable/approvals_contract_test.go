package durable

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/store"
)

// TestApprovalIsForItsContract is the attack on an approval given under a
// tool's old contract: an operator approves a charge while the tool says
// one thing, the tool's description changes and the change is trusted,
// and the same call with the same key comes back. It must ask a new
// approval (naming the old one), run nothing on the old one, and run once
// when the new one is approved. A denial under the old contract asks
// again too; an approval asked with no contract (before contracts were
// recorded) is superseded by a call that knows its contract; a call that
// knows no contract is answered by the live approval, as before. On a
// real effect server (a stdio subprocess) and the memory, SQLite and
// PostgreSQL stores.
func TestApprovalIsForItsContract(t *testing.T) {
	for _, k := range storeKinds(t, true) {
		t.Run(k.name, func(t *testing.T) {
			s, _ := k.open(t)
			r := newApprovalRig(t, s)
			ctx := ctxT(t)
			args := json.RawMessage(`{"amount":100}`)
			ca := Call{RunID: "run", ToolCallID: "pay", Server: "bank", Tool: "bank__charge", RemoteName: "charge",
				Args: args, Owner: "alice", Contract: "contract-A"}
			cb := ca
			cb.Contract = "contract-B"

			_, _, err := r.j.Guarded(ctx, ca, approvalGuard, r.eff(args))
			first := wantCode(t, err, refusal.ApprovalRequired).ApprovalID
			if a, err := s.GetApproval(ctx, first); err != nil || a.Contract != "contract-A" {
				t.Fatalf("approval %s = %+v, %v", first, a, err)
			}
			if _, err := s.DecideApproval(ctx, first, true, "ops", time.Now()); err != nil {
				t.Fatal(err)
			}
			// The tool's contract changed (and was trusted): the same call
			// with the same key asks again.
			_, _, err = r.j.Guarded(ctx, cb, approvalGuard, r.eff(args))
			e := wantCode(t, err, refusal.ApprovalRequired)
			if e.ApprovalID == "" || e.ApprovalID == first || !strings.Contains(e.Message, "contract changed since approval "+first) {
				t.Fatalf("call under the new contract: %+v", e)
			}
			second := e.ApprovalID
			if n := r.effects(t, "run:pay"); n != 0 {
				t.Fatalf("%d effects under an approval of another contract", n)
			}
			if a, _ := s.GetApproval(ctx, first); a.State != store.ApprovalExpired {
				t.Fatalf("old approval = %+v, want expired", a)
			}
			if a, _ := s.GetApproval(ctx, second); a.State != store.ApprovalPending || a.Contract != "contract-B" {
				t.Fatalf("new approval = %+v", a)
			}
			// Asked again while pending: the same new approval, nothing run.
			_, _, err = r.j.Guarded(ctx, cb, approvalGuard, r.eff(args))
			if e := wantCode(t, err, refusal.ApprovalRequired); e.ApprovalID != second {
				t.Fatalf("pending new approval: %+v", e)
			}
			if _, err := s.DecideApproval(ctx, first, true, "ops", time.Now()); err == nil {
				t.Fatal("the superseded approval was decided")
			}
			if _, err := s.DecideApproval(ctx, second, true, "ops", time.Now()); err != nil {
				t.Fatal(err)
			}
			if _, replayed, err := r.j.Guarded(ctx, cb, approvalGuard, r.eff(args)); err != nil || replayed {
				t.Fatalf("approved call: replayed %v, %v", replayed, err)
			}
			if _, replayed, err := r.j.Guarded(ctx, cb, approvalGuard, r.eff(args)); err != nil || !replayed {
				t.Fatalf("same call again: replayed %v, %v", replayed, err)
			}
			if n := r.effects(t, "run:pay"); n != 1 {
				t.Fatalf("%d effects, want 1", n)
			}

			// A denial under the old contract: the changed tool is judged
			// again.
			da, db := ca, cb
			da.ToolCallID, db.ToolCallID = "deny", "deny"
			_, _, err = r.j.Guarded(ctx, da, approvalGuard, r.eff(args))
			denied := wantCode(t, err, refusal.ApprovalRequired).ApprovalID
			if _, err := s.DecideApproval(ctx, denied, false, "ops", time.Now()); err != nil {
				t.Fatal(err)
			}
			_, _, err = r.j.Guarded(ctx, da, approvalGuard, r.eff(args))
			wantCode(t, err, refusal.ApprovalDenied)
			_, _, err = r.j.Guarded(ctx, db, approvalGuard, r.eff(args))
			if e := wantCode(t, err, refusal.ApprovalRequired); e.ApprovalID == denied {
				t.Fatalf("denial under another contract answered: %+v", e)
			}

			// An approval asked with no contract is superseded by a call
			// that knows its contract; a call that knows none is answered
			// by the live approval, whatever its contract.
			na := ca
			na.ToolCallID, na.Contract = "none", ""
			_, _, err = r.j.Guarded(ctx, na, approvalGuard, r.eff(args))
			none := wantCode(t, err, refusal.ApprovalRequired).ApprovalID
			if _, err := s.DecideApproval(ctx, none, true, "ops", time.Now()); err != nil {
				t.Fatal(err)
			}
			nk := na
			nk.Contract = "contract-A"
			_, _, err = r.j.Guarded(ctx, nk, approvalGuard, r.eff(args))
			known := wantCode(t, err, refusal.ApprovalRequired).ApprovalID
			if known == none {
				t.Fatalf("approval without a contract answered for contract-A")
			}
			if _, err := s.DecideApproval(ctx, known, true, "ops", time.Now()); err != nil {
				t.Fatal(err)
			}
			if _, _, err := r.j.Guarded(ctx, na, approvalGuard, r.eff(args)); err != nil {
				t.Fatalf("call with no contract on an approval of contract-A: %v", err)
			}
			if n := r.effects(t, "run:none"); n != 1 {
				t.Fatalf("%d effects of run:none, want 1", n)
			}
			if n := r.effects(t, "run:deny"); n != 0 {
				t.Fatalf("%d effects of run:deny, want 0", n)
			}
		})
	}
}
