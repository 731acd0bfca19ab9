package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/durable"
	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/store"
)

// listApprovals runs `approvals list --json` (with extra flags).
func listApprovals(t *testing.T, dsn string, extra ...string) []approvalJSON {
	t.Helper()
	code, out, errOut := run(t, append([]string{"approvals", "list", "--store", dsn, "--json"}, extra...)...)
	if code != 0 {
		t.Fatalf("approvals list: exit %d: %s", code, errOut)
	}
	var got struct {
		Approvals []approvalJSON `json:"approvals"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return got.Approvals
}

// TestApprovalsShowWhatIsApproved: two transfers that differ only in the
// amount wait for approval; the operator's list tells them apart (caller,
// tool, arguments as sent, key, when asked, when they expire), approving
// one records who ran the command and runs that one only.
func TestApprovalsShowWhatIsApproved(t *testing.T) {
	ctx := context.Background()
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "gh.db")
	st, err := openStore(ctx, dsn, true)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	j, err := durable.NewJournal(st, &durable.JournalOptions{Scope: "gateway", Approvals: st})
	if err != nil {
		t.Fatal(err)
	}
	guard := policy.GuardFunc(func(context.Context, policy.Call) (policy.Decision, error) {
		return policy.NeedsApproval("transfers need an operator"), nil
	})
	ran := map[string]int{}
	effect := func(_ context.Context, key string) (*mcp.CallToolResult, error) {
		ran[key]++
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	}
	calls := map[string]durable.Call{}
	for _, amount := range []string{"100", "100000"} {
		c := durable.Call{RunID: "gw_run", ToolCallID: "k-" + amount, Server: "bank", Tool: "bank__transfer",
			Args: json.RawMessage(`{"to":"acct-9","amount":` + amount + `}`), Owner: "acme-ltd", Key: "transfer-" + amount, Contract: "contract-v1"}
		_, _, err := j.Guarded(ctx, c, guard, effect)
		if e, ok := refusal.As(err); !ok || e.Code != refusal.ApprovalRequired {
			t.Fatalf("amount %s: %v", amount, err)
		}
		calls[amount] = c
	}

	list := listApprovals(t, dsn)
	if len(list) != 2 || list[0].ID == list[1].ID {
		t.Fatalf("approvals = %+v", list)
	}
	byAmount := map[string]approvalJSON{}
	for _, a := range list {
		var args struct {
			Amount json.Number `json:"amount"`
			To     string      `json:"to"`
		}
		if err := json.Unmarshal(a.Args, &args); err != nil || args.To != "acct-9" {
			t.Fatalf("%s: args %s: %v", a.ID, a.Args, err)
		}
		if a.Subject != "acme-ltd" || a.Tool != "bank__transfer" || a.State != "pending" || a.Key != "transfer-"+args.Amount.String() ||
			a.AskedAt.IsZero() || a.ExpiresAt == nil || a.ExpiresAt.Sub(a.AskedAt) != durable.DefaultApprovalTTL || a.Contract != "contract-v1" {
			t.Errorf("approval as listed = %+v", a)
		}
		byAmount[args.Amount.String()] = a
	}
	if len(byAmount) != 2 {
		t.Fatalf("the two amounts are not told apart: %+v", list)
	}
	// The table shows the arguments too.
	if _, out, _ := run(t, "approvals", "list", "--store", dsn); !strings.Contains(out, `"amount":100000`) || !strings.Contains(out, `"amount":100}`) || !strings.Contains(out, "acme-ltd") {
		t.Fatalf("table:\n%s", out)
	}

	// Approve the small one without --by: the decider is user@host.
	small := byAmount["100"]
	code, out, errOut := run(t, "approvals", "approve", small.ID, "--store", dsn)
	if code != 0 {
		t.Fatalf("approve: exit %d: %s", code, errOut)
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	who := u.Username + "@" + host
	if !strings.Contains(out, "approved by "+who) || !strings.Contains(out, `"amount":100}`) {
		t.Fatalf("approve said %q, want the decider %s and the arguments", out, who)
	}
	for _, amount := range []string{"100", "100000"} {
		_, _, err := j.Guarded(ctx, calls[amount], guard, effect)
		if amount == "100" && err != nil {
			t.Fatal(err)
		}
		if e, ok := refusal.As(err); amount == "100000" && (!ok || e.Code != refusal.ApprovalRequired) {
			t.Fatalf("the big transfer after approving the small one: %v", err)
		}
	}
	if len(ran) != 1 || ran["gw_run:k-100"] != 1 {
		t.Fatalf("ran = %v, want the small transfer once", ran)
	}
	all := listApprovals(t, dsn, "--all")
	for _, a := range all {
		if a.ID != small.ID {
			continue
		}
		if a.State != "used" || a.UsedAt == nil || len(a.Decisions) != 1 || a.Decisions[0].By != who || a.Decisions[0].Verdict != "approved" {
			t.Fatalf("the approved one after its use = %+v", a)
		}
	}
	if pending := listApprovals(t, dsn); len(pending) != 1 || pending[0].ID != byAmount["100000"].ID {
		t.Fatalf("pending after the use = %+v", pending)
	}
	// --by overrides; an empty one is refused.
	if code, _, _ := run(t, "approvals", "deny", byAmount["100000"].ID, "--store", dsn, "--by", ""); code != 2 {
		t.Fatalf("--by '': exit %d", code)
	}
}

// TestApprovalsExpired: an expired approval is not listed as pending,
// shows as expired with --all, and cannot be approved.
func TestApprovalsExpired(t *testing.T) {
	ctx := context.Background()
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "gh.db")
	st, err := openStore(ctx, dsn, true)
	if err != nil {
		t.Fatal(err)
	}
	asked := time.Now().Add(-2 * time.Hour)
	_, _, err = st.CreateApproval(ctx, store.Approval{ID: "apr_old", RecordKey: store.RecordKey{Scope: "gw", RunID: "r", ToolCallID: "c"},
		Server: "bank", Tool: "bank__transfer", Args: []byte(`{"amount":5}`), Owner: "alice", CreatedAt: asked, ExpiresAt: asked.Add(time.Hour)}, 0)
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	if l := listApprovals(t, dsn); len(l) != 0 {
		t.Fatalf("pending = %+v", l)
	}
	if l := listApprovals(t, dsn, "--all"); len(l) != 1 || l[0].State != "expired" {
		t.Fatalf("--all = %+v", l)
	}
	code, _, errOut := run(t, "approvals", "approve", "apr_old", "--store", dsn, "--by", "ops")
	want := fmt.Sprintf("approval apr_old has expired (at %s) and can no longer be decided", asked.Add(time.Hour).UTC().Format(time.RFC3339))
	if code != 1 || !strings.Contains(errOut, want) {
		t.Fatalf("approve expired: exit %d stderr %q", code, errOut)
	}
}
