package gateway

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/server"
	"github.com/gatehouse-dev/gatehouse/store"
)

// TestKeyedCallsPureGuard: without a call cap the gateway's guard (the
// firewall's pins, tools.requireApproval) is policy.Pure, so the journal
// asks it before reading a keyed call's record; through a real gateway and
// upstream on SQLite, a keyed call still runs once and replays, a call
// needing approval is never claimed (no journal row) until approved, then
// runs once and replays, and a denied one leaves no row. With a call cap
// the guard counts (not Pure), and a replay is not counted again.
func TestKeyedCallsPureGuard(t *testing.T) {
	up := newParityUpstream(t)
	e := parityGateway(t, up, true, "sqlite:"+filepath.Join(t.TempDir(), "gh.db"), "tools:\n  requireApproval: [pay]\n")
	if !policy.IsPure(e.g.pipe.guard) {
		t.Fatal("the gateway's guard without a call cap is not Pure: every keyed call reads its record before its claim")
	}
	ctx := context.Background()
	row := func(tool, key string) string {
		t.Helper()
		runID, callID := unitOfWork(server.Subject("alice"), tool, key)
		r, err := e.g.Store().GetRecord(ctx, store.RecordKey{Scope: journalScope, RunID: runID, ToolCallID: callID})
		if err != nil {
			return "none"
		}
		return string(r.State)
	}
	cs := e.session("alice-token")
	first := e.call(cs, "alice", "count", nil, "c-1")
	if again := e.call(cs, "alice", "count", nil, "c-1"); again != first || up.effectCounts()["count"] != 1 || row("count", "c-1") != "succeeded" {
		t.Fatalf("keyed count twice: %s then %s, %d effects, row %s; want one effect replayed", first, again, up.effectCounts()["count"], row("count", "c-1"))
	}

	a := []string{e.call(cs, "alice", "pay", nil, "p-1"), e.call(cs, "alice", "pay", nil, "p-2")}
	wantCodes(t, a, "approval_required", "approval_required")
	if row("pay", "p-1") != "none" || row("pay", "p-2") != "none" || up.effectCounts()["pay"] != 0 {
		t.Fatalf("calls waiting for approval: rows %s %s, %d effects; want none, none, 0", row("pay", "p-1"), row("pay", "p-2"), up.effectCounts()["pay"])
	}
	list, err := e.g.Store().ListApprovals(ctx, store.ApprovalPending)
	if err != nil || len(list) != 2 {
		t.Fatalf("pending approvals %v %v", list, err)
	}
	for _, ap := range list {
		if _, err := e.g.Store().DecideApproval(ctx, ap.ID, ap.ToolCallID == mustCallID(t, "pay", "p-1"), "ops", time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	paid := e.call(cs, "alice", "pay", nil, "p-1")
	if again := e.call(cs, "alice", "pay", nil, "p-1"); again != paid || refusalCode(paid) != "" || up.effectCounts()["pay"] != 1 || row("pay", "p-1") != "succeeded" {
		t.Fatalf("approved pay twice: %s then %s, %d effects, row %s; want one effect replayed", paid, again, up.effectCounts()["pay"], row("pay", "p-1"))
	}
	wantCodes(t, []string{e.call(cs, "alice", "pay", nil, "p-2")}, "approval_denied")
	if row("pay", "p-2") != "none" || up.effectCounts()["pay"] != 1 {
		t.Fatalf("denied pay: row %s, %d effects; want none, 1", row("pay", "p-2"), up.effectCounts()["pay"])
	}

	capped := parityGateway(t, newParityUpstream(t), true, "sqlite:"+filepath.Join(t.TempDir(), "gh.db"), "firewall: {maxCallsPerRun: 1}\n")
	if policy.IsPure(capped.g.pipe.guard) {
		t.Fatal("the gateway's guard with a call cap counts calls but says it is Pure")
	}
	cs = capped.session("alice-token")
	b := []string{capped.call(cs, "alice", "count", nil, "c-1"), capped.call(cs, "alice", "count", nil, "c-1"), capped.call(cs, "alice", "count", nil, "c-2")}
	wantCodes(t, b, "", "", "call_limit")
	if b[1] != b[0] || capped.up.effectCounts()["count"] != 1 {
		t.Fatalf("capped: %q, %d effects; want the first replayed, then call_limit", b, capped.up.effectCounts()["count"])
	}
}

func mustCallID(t *testing.T, tool, key string) string {
	t.Helper()
	_, callID := unitOfWork(server.Subject("alice"), tool, key)
	return callID
}
