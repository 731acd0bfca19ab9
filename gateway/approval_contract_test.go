package gateway

import (
	"context"
	"maps"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/pgtest"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// TestApprovalIsForTheTrustedContract is the attack on an approval given
// under a tool's old description: an operator approves a charge, the
// upstream (a real go-sdk server over HTTP on 127.0.0.1) silently changes
// the tool's description, the recheck quarantines it, the operator
// trusts the new listing (what `gatehouse trust --listing` does), and the
// agent retries the same call with the same key. The call must ask a new
// approval (naming the old one), never run on the old one: the upstream
// receives nothing until the new approval, then the call once. On SQLite
// and PostgreSQL.
func TestApprovalIsForTheTrustedContract(t *testing.T) {
	stores := []struct {
		name string
		dsn  func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "gh.db") }},
		{"postgres", func(t *testing.T) string {
			return pgtest.Schema(t, "gw_apr_contract", "the gateway's approval-contract test on PostgreSQL")
		}},
	}
	for _, sc := range stores {
		t.Run(sc.name, func(t *testing.T) {
			ctx := context.Background()
			g, cs, up := approvalGateway(t, sc.dsn(t))
			st := g.Store()
			charge := func() (code, approval, text string) { t.Helper(); return chargeCall(t, cs, "order-7") }

			first, _ := g.served.tool("pay__charge")
			if len(first.Contract) != 64 {
				t.Fatalf("served tool has contract %q", first.Contract)
			}
			code, old, _ := charge()
			if code != "approval_required" || old == "" {
				t.Fatalf("first call: %s %s", code, old)
			}
			if a, err := st.GetApproval(ctx, old); err != nil || a.Contract != first.Contract {
				t.Fatalf("approval %s = %+v, %v; want contract %s", old, a, err, first.Contract)
			}
			if _, err := st.DecideApproval(ctx, old, true, "ops", time.Now()); err != nil {
				t.Fatal(err)
			}

			// The upstream changes the tool's description without a word;
			// the recheck quarantines it.
			up.variant.Store(2)
			waitFor(t, func() bool { info, _ := g.served.tool("pay__charge"); return info.State == toolset.Quarantined })
			if code, _, _ := charge(); code != "quarantined" {
				t.Fatalf("call while quarantined: %s", code)
			}
			// The operator reviews and trusts exactly the new listing.
			obs, err := st.OpenObservations(ctx, "config:pay", true)
			if err != nil || len(obs) != 1 {
				t.Fatalf("observations %+v, %v", obs, err)
			}
			if _, err := st.TrustListing(ctx, "config:pay", obs[0].Listing); err != nil {
				t.Fatal(err)
			}
			var now toolset.ToolInfo
			waitFor(t, func() bool {
				now, _ = g.served.tool("pay__charge")
				return now.State == toolset.Active && now.Description == "Charges a card, and more."
			})
			if now.Contract == first.Contract || len(now.Contract) != 64 {
				t.Fatalf("contract after the trust %q (before %q)", now.Contract, first.Contract)
			}

			// The same call, same key: the approval given under the old
			// description does not run it; a new one is asked.
			code, fresh, text := charge()
			if code != "approval_required" || fresh == "" || fresh == old || !strings.Contains(text, "contract changed since approval "+old) {
				t.Fatalf("call after the trust: %s %s %q", code, fresh, text)
			}
			if n := up.charges.Load(); n != 0 {
				t.Fatalf("the upstream received %d charges on the old approval", n)
			}
			if a, _ := st.GetApproval(ctx, old); a.State != store.ApprovalExpired {
				t.Fatalf("old approval %+v, want expired", a)
			}
			if a, _ := st.GetApproval(ctx, fresh); a.State != store.ApprovalPending || a.Contract != now.Contract {
				t.Fatalf("new approval %+v, want pending under %s", a, now.Contract)
			}
			if code, again, _ := charge(); code != "approval_required" || again != fresh || up.charges.Load() != 0 {
				t.Fatalf("asked again while pending: %s %s, %d charges", code, again, up.charges.Load())
			}

			// Approved under the new contract: runs once, then replays.
			if _, err := st.DecideApproval(ctx, fresh, true, "ops", time.Now()); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if code, _, text := charge(); code != "" || !strings.Contains(text, "charged") {
					t.Fatalf("approved call: %s %q", code, text)
				}
			}
			if n := up.charges.Load(); n != 1 {
				t.Fatalf("the upstream received %d charges, want 1", n)
			}
		})
	}
}

// approvalGateway serves a gateway on the store at dsn in front of a
// rugServer whose charge needs an approval (tools.requireApproval), with
// a 1s recheck; it returns the gateway, a session and the upstream.
func approvalGateway(t *testing.T, dsn string) (*Gateway, *mcp.ClientSession, *rugServer) {
	t.Helper()
	up := newRugServer(t)
	dir := t.TempDir()
	cfg, err := ParseConfig([]byte("listen: 127.0.0.1:0\ndrift: {recheck: 1s}\ntools:\n  requireApproval: [pay__charge]\nservers:\n  pay:\n    type: streamable-http\n    url: "+up.url+"\n"),
		filepath.Join(dir, "gatehouse.yaml"), dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g, err := New(ctx, cfg, &Options{StoreDSN: dsn, Instance: "solo"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	h, err := g.Handler()
	if err != nil {
		t.Fatal(err)
	}
	gs := httptest.NewServer(h)
	t.Cleanup(gs.Close)
	return g, session(t, gs.URL+"/mcp", ""), up
}

// chargeCall calls pay__charge with the idempotency key and returns the
// refusal code ("" for a result), the approval ID and the text.
func chargeCall(t *testing.T, cs *mcp.ClientSession, key string) (code, approval, text string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "pay__charge", Arguments: map[string]any{"amount": 5},
		Meta: mcp.Meta{"idempotencyKey": key}})
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := res.StructuredContent.(map[string]any)
	code, _ = sc["code"].(string)
	approval, _ = sc["approvalId"].(string)
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text += tc.Text
		}
	}
	return code, approval, text
}

// TestApprovalNotSpentAcrossAStaleServedMap: the served map follows the
// toolset's catalog asynchronously. A call that reads it in the moment
// before it follows a trust is checked (and its approval spent) under the
// old contract; the gateway then finds the tool's contract changed when
// it routes the call and sends nothing: the call fails (quarantined,
// recorded), and the upstream receives nothing. The lag is made by
// putting the served map back as it was before the trust.
func TestApprovalNotSpentAcrossAStaleServedMap(t *testing.T) {
	ctx := context.Background()
	g, cs, up := approvalGateway(t, "sqlite:"+filepath.Join(t.TempDir(), "gh.db"))
	st := g.Store()
	before := *g.served.current.Load()
	code, old, _ := chargeCall(t, cs, "order-9")
	if code != "approval_required" {
		t.Fatalf("first call: %s", code)
	}
	if _, err := st.DecideApproval(ctx, old, true, "ops", time.Now()); err != nil {
		t.Fatal(err)
	}
	up.variant.Store(2)
	waitFor(t, func() bool { info, _ := g.served.tool("pay__charge"); return info.State == toolset.Quarantined })
	obs, err := st.OpenObservations(ctx, "config:pay", true)
	if err != nil || len(obs) != 1 {
		t.Fatalf("observations %+v, %v", obs, err)
	}
	if _, err := st.TrustListing(ctx, "config:pay", obs[0].Listing); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		info, _ := g.served.tool("pay__charge")
		return info.State == toolset.Active && info.Contract != before["pay__charge"].Contract
	})
	stale := maps.Clone(before)
	g.served.current.Store(&stale)
	code, _, text := chargeCall(t, cs, "order-9")
	if code != "quarantined" || !strings.Contains(text, "changed as the call was made") || up.charges.Load() != 0 {
		t.Fatalf("call on the stale map: %s %q, %d charges", code, text, up.charges.Load())
	}
	if code, _, _ := chargeCall(t, cs, "order-9"); code != "quarantined" || up.charges.Load() != 0 {
		t.Fatalf("the same call again: %s, %d charges", code, up.charges.Load())
	}
}
