package gateway

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/audit"
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
		{"postgres", true, func(t *testing.T) string {
			return pgtest.Schema(t, "gw_audit", "the gateway's audit trail on PostgreSQL")
		}},
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
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return nil, fmt.Errorf("must not run")
				})
			if err := e.g.Toolset().Reconcile(ctx); err != nil {
				t.Fatal(err)
			}
			waitFor(t, func() bool { info, _ := e.g.served.tool("morph"); return info.State == toolset.Quarantined })
			wantCodes(t, []string{e.call(alice, "alice", "morph", nil, "")}, "quarantined")
			if n := e.up.effectCounts()["count"]; n != 2 {
				t.Fatalf("count ran %d times, want 2", n)
			}

			if err := e.g.audit.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			chain := e.g.audit.Chain()
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
			// The keyed call's entry (committed with its completion) names
			// the caller's key and its journal record.
			runID, callID := unitOfWork("alice", "count", "k-1")
			want := []row{
				{audit.KindCall, "alice", "count", "ok", ""},
				{audit.KindCall, "alice", "fail", "tool_error", ""},
				{audit.KindCall, "alice", "count", "ok", `{"key":"k-1","runId":"` + runID + `","toolCallId":"` + callID + `"}`},
				{audit.KindCall, "alice", "count", "ok", `{"replayed":true}`},
				{audit.KindApprovalRequested, "alice", "pay", "approval_required", `{"approvalId":"` + approval + `"}`},
				{audit.KindRefusal, "bob", "nope", "unknown_tool", ""},
				{audit.KindDrift, "", "morph", "quarantined", `{"kind":"tool"}`},
				{audit.KindRefusal, "alice", "morph", "quarantined", ""},
			}
			// The chain holds entries in commit order: a keyed call's entry
			// commits with its journal completion, before the call answers;
			// an unkeyed call's through the queue, after it answered. So
			// compare them as a set.
			key := func(r row) string { return fmt.Sprint(r) }
			slices.SortFunc(rows, func(a, b row) int { return strings.Compare(key(a), key(b)) })
			slices.SortFunc(want, func(a, b row) int { return strings.Compare(key(a), key(b)) })
			if fmt.Sprint(rows) != fmt.Sprint(want) {
				t.Fatalf("entries\n%v\nwant\n%v", rows, want)
			}
			var first store.AuditEntry
			for _, en := range got {
				if en.ArgsDigest == audit.ArgsDigest(json.RawMessage(`{"card":"`+secret+`"}`)) {
					first = en
				}
			}
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

// TestDocsAuditConfigParses keeps docs/audit.md's config parsing.
func TestDocsAuditConfigParses(t *testing.T) {
	md, err := os.ReadFile(filepath.Join("..", "docs", "audit.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := yamlBlocks(t, md)
	if len(blocks) == 0 {
		t.Fatal("docs/audit.md has no yaml block")
	}
	for _, b := range blocks {
		dir := t.TempDir()
		cfg, err := ParseConfig([]byte(b.text), filepath.Join(dir, "audit.yaml"), dir)
		if err != nil || !cfg.Audit.Enabled || cfg.Audit.SigningKeyFile == "" {
			t.Errorf("docs/audit.md line %d: %v %+v", b.line, err, cfg)
		}
	}
}

// TestAuditSignedCheckpoints: a gateway given audit.signingKeyFile (or
// the variable of audit.signingKeyEnv) signs its checkpoints with it: its
// chain verifies with the public key after real calls and a shutdown, and
// not with another key. A key that is not one stops New with the field.
func TestAuditSignedCheckpoints(t *testing.T) {
	for _, viaEnv := range []bool{false, true} {
		t.Run(fmt.Sprintf("env=%v", viaEnv), func(t *testing.T) {
			ctx := context.Background()
			_, key, _ := ed25519.GenerateKey(rand.Reader)
			pemKey, _ := audit.MarshalPrivateKey(key)
			dir := t.TempDir()
			keyConf := "signingKeyFile: audit.key"
			if viaEnv {
				t.Setenv("GH_TEST_AUDIT_KEY", string(pemKey))
				keyConf = "signingKeyEnv: GH_TEST_AUDIT_KEY"
			} else if err := os.WriteFile(filepath.Join(dir, "audit.key"), pemKey, 0o600); err != nil {
				t.Fatal(err)
			}
			up := newParityUpstream(t)
			dsn := "sqlite:" + filepath.Join(dir, "gh.db")
			yml := fmt.Sprintf("listen: 127.0.0.1:0\nstore: %q\naudit: {%s}\nservers:\n  up: {type: streamable-http, url: %q, prefix: \"\"}\n", dsn, keyConf, up.url)
			g, url := serveGateway(t, yml, dir)
			cs := session(t, url, "")
			for i := range 3 {
				if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "count", Arguments: map[string]any{"i": i}}); err != nil {
					t.Fatal(err)
				}
			}
			cs.Close()
			if err := g.Close(); err != nil {
				t.Fatal(err)
			}
			st2, err := openStore(ctx, dsn, "test")
			if err != nil {
				t.Fatal(err)
			}
			defer st2.Close()
			res, err := audit.Verify(ctx, st2, &audit.VerifyOptions{PublicKey: key.Public().(ed25519.PublicKey)})
			if err != nil || res.Problem != nil || len(res.Chains) != 1 || res.Chains[0].Entries != 3 || res.Chains[0].Signed < 1 { // the first checkpoint (30 s after the first entry) may come before the one at shutdown
				t.Fatalf("verify: %v %+v %+v", err, res.Problem, res.Chains)
			}
			_, other, _ := ed25519.GenerateKey(rand.Reader)
			if res, _ := audit.Verify(ctx, st2, &audit.VerifyOptions{PublicKey: other.Public().(ed25519.PublicKey)}); res.Problem == nil {
				t.Fatal("verified with another key")
			}
		})
	}
	t.Run("bad key", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "audit.key"), []byte("not a key"), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := ParseConfig([]byte("listen: 127.0.0.1:0\nstore: 'memory:'\naudit: {signingKeyFile: audit.key}\n"), filepath.Join(dir, "gh.yaml"), dir)
		if err != nil {
			t.Fatal(err)
		}
		_, err = New(context.Background(), cfg, nil)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != "audit.signingKeyFile" {
			t.Fatalf("New with a bad key: %v", err)
		}
	})
}
