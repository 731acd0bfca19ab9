package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

// seedStore writes journal rows and approvals into a real SQLite file and
// returns its DSN.
func seedStore(t *testing.T) string {
	t.Helper()
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "state", "gh.db")
	ctx := context.Background()
	st, err := openStore(ctx, dsn, true)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now()
	for i, owner := range []string{"alice", "alice", "bob"} {
		rec := store.Record{
			RecordKey:   store.RecordKey{Scope: "gw", RunID: "run-" + owner, ToolCallID: string(rune('a' + i))},
			Fingerprint: "fp", Owner: owner, Executor: "x", LeaseUntil: now.Add(time.Minute),
		}
		if ok, _, err := st.Claim(ctx, rec); err != nil || !ok {
			t.Fatalf("claim: %v %v", ok, err)
		}
		if err := st.Complete(ctx, rec.RecordKey, "x", store.StateSucceeded, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"apr_1", "apr_2"} {
		_, _, err := st.CreateApproval(ctx, store.Approval{
			ID: id, RecordKey: store.RecordKey{Scope: "gw", RunID: "run-x", ToolCallID: id},
			Server: "bank", Tool: "bank__transfer", ArgsFingerprint: "fp", Reason: "requires approval", Owner: "alice",
			State: store.ApprovalPending, ExpiresAt: now.Add(time.Hour),
		}, 0)
		if err != nil {
			t.Fatal(err)
		}
	}
	return dsn
}

func TestRunsListAndPurge(t *testing.T) {
	dsn := seedStore(t)
	code, out, errOut := run(t, "runs", "list", "--store", dsn, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got struct {
		Runs []runJSON `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Runs) != 2 {
		t.Fatalf("runs = %+v", got.Runs)
	}
	byRun := map[string]runJSON{}
	for _, r := range got.Runs {
		byRun[r.RunID] = r
	}
	if r := byRun["run-alice"]; r.Calls != 2 || r.Succeeded != 2 || r.Subject != "alice" {
		t.Errorf("alice run = %+v", r)
	}

	code, out, _ = run(t, "runs", "list", "--store", dsn, "--subject", "bob")
	if code != 0 || !strings.Contains(out, "run-bob") || strings.Contains(out, "run-alice") {
		t.Fatalf("exit %d out %q", code, out)
	}

	// Purge says how many rows it deleted (2 journal rows + 2 approvals of alice).
	code, out, _ = run(t, "runs", "purge", "--store", dsn, "--subject", "alice")
	if code != 0 || !strings.Contains(out, "purged 4 rows") {
		t.Fatalf("exit %d out %q", code, out)
	}
	_, out, _ = run(t, "runs", "list", "--store", dsn, "--json")
	if strings.Contains(out, "run-alice") || !strings.Contains(out, "run-bob") {
		t.Fatalf("after purge: %s", out)
	}
	// Purging everyone is not offered.
	if code, _, _ := run(t, "runs", "purge", "--store", dsn); code != 2 {
		t.Fatalf("purge without --subject: exit %d", code)
	}
}

func TestApprovals(t *testing.T) {
	dsn := seedStore(t)
	code, out, _ := run(t, "approvals", "list", "--store", dsn)
	if code != 0 || !strings.Contains(out, "apr_1") || !strings.Contains(out, "bank__transfer") {
		t.Fatalf("exit %d out %q", code, out)
	}
	if code, out, _ := run(t, "approvals", "approve", "apr_1", "--store", dsn, "--by", "ops"); code != 0 || !strings.Contains(out, "approved") {
		t.Fatalf("approve: exit %d out %q", code, out)
	}
	if code, out, _ := run(t, "approvals", "deny", "apr_2", "--store", dsn); code != 0 || !strings.Contains(out, "denied") {
		t.Fatalf("deny: exit %d out %q", code, out)
	}
	// A decision is final.
	code, _, errOut := run(t, "approvals", "deny", "apr_1", "--store", dsn)
	if code != 1 || !strings.Contains(errOut, "already approved by ops") {
		t.Fatalf("re-decide: exit %d stderr %q", code, errOut)
	}
	code, _, errOut = run(t, "approvals", "approve", "nope", "--store", dsn)
	if code != 1 || !strings.Contains(errOut, `no approval with ID "nope"`) {
		t.Fatalf("unknown id: exit %d stderr %q", code, errOut)
	}
	// Pending list is empty now; --all shows both decisions, read back from the store.
	_, out, _ = run(t, "approvals", "list", "--store", dsn, "--json")
	if !strings.Contains(out, `"approvals": []`) {
		t.Fatalf("pending after decisions: %s", out)
	}
	_, out, _ = run(t, "approvals", "list", "--store", dsn, "--json", "--all")
	var got struct {
		Approvals []approvalJSON `json:"approvals"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	for _, a := range got.Approvals {
		states[a.ID] = a.State + "/" + a.DecidedBy
	}
	if states["apr_1"] != "approved/ops" || !strings.HasPrefix(states["apr_2"], "denied/") {
		t.Fatalf("states = %v", states)
	}
}

func TestStoreDSNErrors(t *testing.T) {
	code, _, errOut := run(t, "runs", "list", "--store", "mysql://x")
	if code != 2 || !strings.Contains(errOut, "scheme") {
		t.Fatalf("exit %d stderr %q", code, errOut)
	}
	code, _, errOut = run(t, "runs", "list", "--config", filepath.Join(t.TempDir(), "nope.yaml"))
	if code != 1 || !strings.Contains(errOut, "nope.yaml") {
		t.Fatalf("exit %d stderr %q", code, errOut)
	}
}

// TestApprovalsListShowsHiddenCharacters: what a caller chose (its key,
// its arguments) reaches the operator's terminal with every hidden or
// reordering character escaped, as the console shows it; a TAB or LF
// cannot break the table's row.
func TestApprovalsListShowsHiddenCharacters(t *testing.T) {
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "gh.db")
	ctx := context.Background()
	st, err := openStore(ctx, dsn, true)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = st.CreateApproval(ctx, store.Approval{
		ID: "apr_h", RecordKey: store.RecordKey{Scope: "gw", RunID: "run-h", ToolCallID: "c"},
		Server: "bank", Tool: "bank__transfer", ArgsFingerprint: "fp", Reason: "requires approval", Owner: "mallory",
		Args:      []byte("{\"to\":\"acme\u202e\u2066evil\u2069\",\"memo\":\"pay\u200bnow\"}"),
		CallerKey: "k\tfake-column\nsecond-row", State: store.ApprovalPending, ExpiresAt: time.Now().Add(time.Hour),
	}, 0)
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "approvals", "list", "--store", dsn)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"⟦U+202E⟧", "⟦U+2066⟧", "⟦U+2069⟧", "pay⟦U+200B⟧now", "k⟦U+0009⟧fake-column⟦U+000A⟧second-row"} {
		if !strings.Contains(out, want) {
			t.Errorf("approvals list does not show %q:\n%s", want, out)
		}
	}
	for _, hidden := range []string{"\u202e", "\u2066", "\u200b", "\tfake", "\nsecond"} {
		if strings.Contains(out, hidden) {
			t.Errorf("approvals list printed %q raw:\n%s", hidden, out)
		}
	}
	if lines := strings.Count(strings.TrimSpace(out), "\n") + 1; lines != 2 {
		t.Errorf("approvals list printed %d lines, want a header and one row:\n%s", lines, out)
	}
}
