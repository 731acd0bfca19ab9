package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/audit"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/pgtest"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// TestAuditRecordsCalls: real calls (a go-sdk client over HTTP to a gateway
// in front of a real upstream) leave in the store, on this instance's
// chain, the entries they should: each call with its subject, tool,
// server, outcome, duration and the digest of its arguments (never the
// arguments), a replay marked, an approval asked for with its ID, a
// refusal with its code, a drift observed; the chain verifies. On SQLite
// (both fronts) and PostgreSQL.
func TestAuditRecordsCalls(t *testing.T) {
	stores := []struct {
		name     string
		bytePath bool
		dsn      func(t *testing.T) string
	}{
		{"sqlite/bytePath=true", true, func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "gh.db") }},
		{"sqlite/bytePath=false", false, func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "gh.db") }},
		{"postgres", true, func(t *testing.T) string { return pgtest.Schema(t, "gw_audit", "the gateway's audit trail on PostgreSQL") }},
	}
	for _, sc := range stores {
		t.Run(sc.name, func(t *testing.T) {
			ctx := context.Background()
			e := parityGateway(t, newParityUpstream(t), sc.bytePath, sc.dsn(t), "tools:\n  requireApproval: [pay]\n")
			alice, bob := e.session("alice-token"), e.session("bob-token")
			secret := "4111-1111-1111-1111"
			wantCodes(t, []string{
				e.call(alice, "alice", "count", map[string]any{"card": secret}, ""),
				e.call(alice, "alice", "fail", nil, ""),
				e.call(alice, "alice", "count", map[string]any{"n": 1}, "k-1"),
				e.call(alice, "alice", "count", map[string]any{"n": 1}, "k-1"),
				e.call(alice, "alice", "pay", map[string]any{"amount": 5}, "p-1"),
				e.call(bob, "bob", "nope", nil, ""),
			}, "", "", "", "", "approval_required", "")
			// Drift: the upstream changes a tool; the re-listing quarantines it.
			e.up.srv.AddTool(&mcp.Tool{Name: "morph", Description: "Changed: now exfiltrates.", InputSchema: objectSchema},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, fmt.Errorf("must not run") })
			if err := e.g.Toolset().Reconcile(ctx); err != nil {
				t.Fatal(err)
			}
			waitFor(t, func() bool { info, _ := e.g.served.tool("morph"); return info.State == toolset.Quarantined })
			wantCodes(t, []string{e.call(alice, "alice", "morph", nil, "")}, "quarantined")
			if n := e.up.effectCounts()["count"]; n != 2 {
				t.Fatalf("count ran %d times, want 2", n)
			}

			if err := e.g.audit.w.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			chain := e.g.audit.w.Chain()
			got, err := e.g.Store().ListAudit(ctx, store.AuditFilter{Chain: chain})
			if err != nil {
				t.Fatal(err)
			}
			type row struct{ kind, subject, tool, outcome, detail string }
			var rows []row
			for _, en := range got {
				rows = append(rows, row{en.Kind, en.Subject, en.Tool, en.Outcome, string(en.Detail)})
				if en.Instance == "" || "gw/"+en.Instance != chain {
					t.Errorf("entry %d: instance %q on chain %q", en.Seq, en.Instance, chain)
				}
				if strings.Contains(string(en.Detail)+en.ArgsDigest, secret) || strings.Contains(string(en.Detail), "amount") {
					t.Errorf("entry %d carries the arguments: %+v", en.Seq, en)
				}
			}
			approval := ""
			for _, r := range rows {
				if r.kind == audit.KindApprovalRequested {
					var d struct{ ApprovalID string }
					_ = json.Unmarshal([]byte(r.detail), &d)
					approval = d.ApprovalID
				}
			}
			pending, _ := e.g.Store().ListApprovals(ctx, store.ApprovalPending)
			if len(pending) != 1 || approval != pending[0].ID {
				t.Fatalf("approval in the trail %q, pending %+v", approval, pending)
			}
			want := []row{
				{audit.KindCall, "alice", "count", "ok", ""},
				{audit.KindCall, "alice", "fail", "tool_error", ""},
				{audit.KindCall, "alice", "count", "ok", ""},
				{audit.KindCall, "alice", "count", "ok", `{"replayed":true}`},
				{audit.KindApprovalRequested, "alice", "pay", "approval_required", `{"approvalId":"` + approval + `"}`},
				{audit.KindRefusal, "bob", "nope", "unknown_tool", ""},
				{audit.KindDrift, "", "morph", "quarantined", `{"kind":"tool"}`},
				{audit.KindRefusal, "alice", "morph", "quarantined", ""},
			}
			if fmt.Sprint(rows) != fmt.Sprint(want) {
				t.Fatalf("entries\n%v\nwant\n%v", rows, want)
			}
			first := got[0]
			if first.Server != "up" || first.ArgsDigest != audit.ArgsDigest(json.RawMessage(`{"card":"`+secret+`"}`)) || first.Duration <= 0 {
				t.Fatalf("first entry %+v", first)
			}
			res, err := audit.Verify(ctx, e.g.Store(), nil)
			if err != nil || res.Problem != nil {
				t.Fatalf("verify: %v %v", err, res.Problem)
			}
		})
	}
}

// waitFor polls cond for up to 10 s (the served map follows a re-listing
// asynchronously).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
