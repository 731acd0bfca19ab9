package durable

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/store"
)

func TestNewApprovalID(t *testing.T) {
	a, b := newApprovalID(), newApprovalID()
	if len(a) != 20 || a[:4] != "apr_" || a == b {
		t.Fatalf("newApprovalID = %q, %q", a, b)
	}
}

func TestGuardedApprovals(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		ctx := ctxT(t)
		file := filepath.Join(t.TempDir(), "effects")
		cs := inMemServer(t, file)
		j := newJournal(t, s, &JournalOptions{Scope: "agent", Approvals: s})
		var checks atomic.Int32
		guard := policy.GuardFunc(func(_ context.Context, c policy.Call) (policy.Decision, error) {
			checks.Add(1)
			if c.Tool == "bank__charge" {
				return policy.NeedsApproval("charges move money"), nil
			}
			return policy.Allowed(), nil
		})
		args := json.RawMessage(`{"amount":100}`)
		c := Call{RunID: "run1", ToolCallID: "t1", Server: "bank", Tool: "bank__charge", RemoteName: "charge", Args: args, Owner: "alice"}
		eff := effectOf(cs, "charge", args)

		// Pending: approval_required, the same ID every time, nothing runs.
		var id string
		for i := range 2 {
			_, _, err := j.Guarded(ctx, c, guard, eff)
			e := wantCode(t, err, refusal.ApprovalRequired)
			if !e.Retryable || e.ApprovalID == "" || (i > 0 && e.ApprovalID != id) {
				t.Fatalf("approval_required: %+v", e)
			}
			id = e.ApprovalID
			r := e.Result()
			if sc := r.StructuredContent.(map[string]any); sc["approvalId"] != id {
				t.Fatalf("result %+v", sc)
			}
		}
		a, err := s.GetApproval(ctx, id)
		fp, _ := fingerprint(c)
		if err != nil || a.State != store.ApprovalPending || a.Server != "bank" || a.Tool != "bank__charge" ||
			a.ArgsFingerprint != fp || a.Owner != "alice" || a.Reason != "charges move money" || a.RunID != "run1" {
			t.Fatalf("approval %+v %v", a, err)
		}
		// Another argument under the same key: key_reused.
		c2 := c
		c2.Args = json.RawMessage(`{"amount":100000}`)
		_, _, err = j.Guarded(ctx, c2, guard, nil2(t))
		wantCode(t, err, refusal.KeyReused)

		// The operator approves; a resumed run (a new journal, as after a
		// restart) finds the approval and runs the call once.
		if _, err := s.DecideApproval(ctx, id, true, "ops", time.Now()); err != nil {
			t.Fatal(err)
		}
		j2 := newJournal(t, s, &JournalOptions{Scope: "agent", Approvals: s})
		res, replayed, err := j2.Guarded(ctx, c, guard, eff)
		if err != nil || replayed || res.IsError {
			t.Fatal(res, replayed, err)
		}
		before := checks.Load()
		res2, replayed, err := j2.Guarded(ctx, c, guard, nil2(t))
		if err != nil || !replayed || string(mustJSONT(t, res2)) != string(mustJSONT(t, res)) {
			t.Fatal(replayed, err)
		}
		if checks.Load() != before {
			t.Fatal("the guard was asked again about a call already recorded")
		}
		effs, _ := effectsIn(t, file)
		if len(effs["run1:t1"]) != 1 {
			t.Fatalf("effects %v", effs)
		}

		// Denied: approval_denied, every time; the effect never runs.
		d := Call{RunID: "run1", ToolCallID: "t2", Server: "bank", Tool: "bank__charge", Args: args, Owner: "alice"}
		_, _, err = j.Guarded(ctx, d, guard, nil2(t))
		e := wantCode(t, err, refusal.ApprovalRequired)
		if _, err := s.DecideApproval(ctx, e.ApprovalID, false, "ops", time.Now()); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			_, _, err = j.Guarded(ctx, d, guard, nil2(t))
			if e := wantCode(t, err, refusal.ApprovalDenied); e.Retryable || e.ApprovalID == "" {
				t.Fatalf("%+v", e)
			}
		}
		if _, err := s.GetRecord(ctx, store.RecordKey{Scope: "agent", RunID: "run1", ToolCallID: "t2"}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a denied call left a record: %v", err)
		}
	})
}

func TestGuardedDeny(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		ctx := ctxT(t)
		cases := []struct {
			name  string
			guard policy.Guard
			code  refusal.Code
		}{
			{"readonly", policy.ReadOnly("bank__balance"), refusal.Denied},
			{"call_limit", policy.GuardFunc(func(context.Context, policy.Call) (policy.Decision, error) {
				return policy.Denied(refusal.CallLimit, "bank__charge was called 20 times in this run"), nil
			}), refusal.CallLimit},
			{"error", policy.GuardFunc(func(context.Context, policy.Call) (policy.Decision, error) {
				return policy.Decision{}, errors.New("counter store down")
			}), refusal.Denied},
			{"invalid", policy.GuardFunc(func(context.Context, policy.Call) (policy.Decision, error) {
				return policy.Decision{}, nil
			}), refusal.Denied},
		}
		j := newJournal(t, s, nil) // no approval store
		for i, tc := range cases {
			c := Call{RunID: "r", ToolCallID: tc.name, Server: "bank", Tool: "bank__charge"}
			_, _, err := j.Guarded(ctx, c, tc.guard, nil2(t))
			e := wantCode(t, err, tc.code)
			if e.Message == "" || e.Retryable {
				t.Fatalf("%d %s: %+v", i, tc.name, e)
			}
		}
		// require_approval without an approval store: refused, not run.
		c := Call{RunID: "r", ToolCallID: "na", Server: "bank", Tool: "bank__charge"}
		_, _, err := j.Guarded(ctx, c, policy.GuardFunc(func(context.Context, policy.Call) (policy.Decision, error) {
			return policy.NeedsApproval("x"), nil
		}), nil2(t))
		wantCode(t, err, refusal.Denied)
		// Allowed: runs once.
		var runs atomic.Int32
		ok := func(context.Context, string) (*mcp.CallToolResult, error) {
			runs.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "1"}}}, nil
		}
		c = Call{RunID: "r", ToolCallID: "ok", Server: "bank", Tool: "bank__balance"}
		for range 2 {
			if _, _, err := j.Guarded(ctx, c, policy.ReadOnly("bank__balance"), ok); err != nil {
				t.Fatal(err)
			}
		}
		if runs.Load() != 1 {
			t.Fatalf("ran %d times", runs.Load())
		}
	})
}
