package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

// ApprovalsV2Rows returns the statements that put approvals (and one
// journal record) into a database at schema version 2, the last version
// with one approval per call and no expiry, as asked at now. Run them,
// open the store (which migrates), then CheckApprovalsFromV2.
func ApprovalsV2Rows(now time.Time) []string {
	ms := now.UnixMilli()
	hour := time.Hour.Milliseconds()
	row := func(id, call, state string, created, decided int64, by string) string {
		return fmt.Sprintf(`INSERT INTO approvals (id, scope, run_id, tool_call_id, server, tool, args_fingerprint, reason, owner, state, created_at, decided_at, decided_by)
VALUES ('%s', 'gw', 'run', '%s', 'bank', 'bank__transfer', 'fp-%s', 'requires approval', 'alice', '%s', %d, %d, '%s')`,
			id, call, call, state, created, decided, by)
	}
	return []string{
		fmt.Sprintf(`INSERT INTO journal (scope, run_id, tool_call_id, fingerprint, state, owner, executor, lease_until, created_at, updated_at, expires_at)
VALUES ('gw', 'run', 'c-used', 'fp', 'succeeded', 'alice', 'x', %d, %d, %d, %d)`, ms-hour, ms-hour, ms-hour, ms+23*hour),
		row("apr_pending", "c-pending", "pending", ms-hour, 0, ""),
		row("apr_used", "c-used", "approved", ms-2*hour, ms-90*time.Minute.Milliseconds(), "ops"),
		row("apr_open", "c-open", "approved", ms-2*hour, ms-90*time.Minute.Milliseconds(), "ops"),
		row("apr_denied", "c-denied", "denied", ms-3*hour, ms-2*hour, "sec"),
	}
}

// CheckApprovalsFromV2 checks that the rows of ApprovalsV2Rows(now) read
// back after the migration: every approval kept, expiring 24 hours after
// it was asked, its decision kept, the approved one whose call has a
// journal record used, and the call of a used approval free to ask again.
func CheckApprovalsFromV2(t *testing.T, s store.Store, now time.Time) {
	t.Helper()
	ctx := ctxT(t)
	all := get(s.ListApprovals(ctx, "")).ok(t)
	byID := map[string]store.Approval{}
	for _, a := range all {
		byID[a.ID] = a
	}
	want := map[string]store.ApprovalState{"apr_pending": store.ApprovalPending, "apr_used": store.ApprovalUsed,
		"apr_open": store.ApprovalApproved, "apr_denied": store.ApprovalDenied}
	if len(all) != len(want) {
		t.Fatalf("after migration: %d approvals, want %d: %+v", len(all), len(want), all)
	}
	for id, st := range want {
		a := byID[id]
		if a.State != st || !a.ExpiresAt.Equal(a.CreatedAt.Add(24*time.Hour)) || a.Args != nil || a.Owner != "alice" || a.ArgsFingerprint == "" || a.Contract != "" {
			t.Errorf("%s after migration = %+v, want state %s", id, a, st)
		}
		if decided := id != "apr_pending"; decided != (len(a.Decisions) == 1) {
			t.Errorf("%s decisions = %+v", id, a.Decisions)
		} else if decided && (a.Decisions[0].By != a.DecidedBy || !a.Decisions[0].At.Equal(a.DecidedAt)) {
			t.Errorf("%s decision = %+v, approval decided by %s at %v", id, a.Decisions[0], a.DecidedBy, a.DecidedAt)
		}
	}
	if u := byID["apr_used"]; !u.UsedAt.Equal(u.DecidedAt) {
		t.Errorf("used approval = %+v", u)
	}
	// The migrated rows behave: the pending one is decided, the open one
	// is spent once, the used one's call asks again.
	get(s.DecideApproval(ctx, "apr_pending", true, "ops", now)).ok(t)
	get(s.UseApproval(ctx, "apr_open", now)).ok(t)
	_, err := s.UseApproval(ctx, "apr_used", now)
	wantErr(t, err, store.ErrNotApproved)
	a, created, err := s.CreateApproval(ctx, store.Approval{ID: "apr_new", RecordKey: store.RecordKey{Scope: "gw", RunID: "run", ToolCallID: "c-used"},
		Owner: "alice", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}, 0)
	if err != nil || !created || a.State != store.ApprovalPending {
		t.Fatalf("asking again for a used approval's call = %+v, %v, %v", a, created, err)
	}
}

// BaselinesV4Rows returns the statements that put servers and baselines
// into a database at schema version 4, the last with one-string baseline
// keys: instructions under "", prompts and resource templates under
// "prompt " and "resource-template " prefixes, the "pinned ..." markers,
// and tools (some named like the prefixes in another case, or with LIKE's
// wildcards). Run them, open the store (which migrates), then
// CheckBaselinesFromV4.
func BaselinesV4Rows() []string {
	server := func(id string, version int64) string {
		return fmt.Sprintf(`INSERT INTO servers (id, name, type, url, catalogue, updated_at, baseline_version)
VALUES ('%s', '%s', 'http', 'https://%s.example/mcp', NULL, 1767225600000, %d)`, id, id, id, version)
	}
	row := func(server, key, value string) string {
		return fmt.Sprintf(`INSERT INTO baselines (server_id, tool, fingerprint, created_at) VALUES ('%s', '%s', '%s', 1767225600000)`,
			server, strings.ReplaceAll(key, "'", "''"), value)
	}
	stmts := []string{server("acme/pay", 7), server("acme/other", 3), server("acme/empty", 0)}
	for _, r := range v4Keys() {
		stmts = append(stmts, row("acme/pay", r.key, r.value))
	}
	return append(stmts, row("acme/other", "charge", "other-charge"), row("acme/other", "", "other-instr"))
}

// v4Key is a baseline row of acme/pay at version 4 and the entry it must
// become.
type v4Key struct {
	key, value string
	want       store.BaselineKey
}

// v4Keys are the baseline rows of acme/pay at version 4.
func v4Keys() []v4Key {
	return []v4Key{
		{"", "fp-instr", store.BaselineKey{Kind: store.KindInstructions}},
		{"charge", "fp-charge", store.BaselineKey{Kind: store.KindTool, Name: "charge"}},
		{"v1.2.list-items", "fp-dots", store.BaselineKey{Kind: store.KindTool, Name: "v1.2.list-items"}},
		{"récupérer", "fp-accents", store.BaselineKey{Kind: store.KindTool, Name: "récupérer"}},
		{"prompt summarize", "fp-p1", store.BaselineKey{Kind: store.KindPrompt, Name: "summarize"}},
		{"prompt 天気 report", "fp-p2", store.BaselineKey{Kind: store.KindPrompt, Name: "天気 report"}},
		{"prompt ", "fp-p3", store.BaselineKey{Kind: store.KindPrompt, Name: ""}},
		{"resource-template file:///{path}", "fp-t1", store.BaselineKey{Kind: store.KindTemplate, Name: "file:///{path}"}},
		{"resource-template db://x%20y/{id}", "fp-t2", store.BaselineKey{Kind: store.KindTemplate, Name: "db://x%20y/{id}"}},
		{"pinned prompts", store.PinnedMarker, store.BaselineKey{Kind: store.KindMarker, Name: store.MarkerPrompts}},
		{"pinned resource-templates", store.PinnedMarker, store.BaselineKey{Kind: store.KindMarker, Name: store.MarkerTemplates}},
		{"prompt", "fp-bare", store.BaselineKey{Kind: store.KindTool, Name: "prompt"}},
		{"promptx", "fp-px", store.BaselineKey{Kind: store.KindTool, Name: "promptx"}},
		{"prompt_x", "fp-underscore", store.BaselineKey{Kind: store.KindTool, Name: "prompt_x"}},
		{"Prompt upper", "fp-case", store.BaselineKey{Kind: store.KindTool, Name: "Prompt upper"}},
		{"RESOURCE-TEMPLATE x", "fp-case2", store.BaselineKey{Kind: store.KindTool, Name: "RESOURCE-TEMPLATE x"}},
		{"resource_template x", "fp-underscore2", store.BaselineKey{Kind: store.KindTool, Name: "resource_template x"}},
		{"pinned prompts ", "fp-space", store.BaselineKey{Kind: store.KindTool, Name: "pinned prompts "}},
		{"it's", "fp-quote", store.BaselineKey{Kind: store.KindTool, Name: "it's"}},
	}
}

// CheckBaselinesFromV4 checks that the rows of BaselinesV4Rows read back
// after the migration: each entry under its kind and name with its value
// and no contract, every baseline version unchanged, and the migrated
// baselines behave (insert-only per key, a prompt beside a tool of the
// same name, observations and a trust, the cascade of DeleteServer).
func CheckBaselinesFromV4(t *testing.T, s store.Store) {
	t.Helper()
	ctx := ctxT(t)
	want := store.Baseline{}
	for _, r := range v4Keys() {
		want[r.want] = store.BaselineEntry{Value: r.value}
	}
	got := get(s.GetBaseline(ctx, "acme/pay")).ok(t)
	if !equalBaselines(got, want) {
		t.Fatalf("acme/pay after migration:\n%v\nwant\n%v", got, want)
	}
	other := get(s.GetBaseline(ctx, "acme/other")).ok(t)
	if !equalBaselines(other, store.Baseline{tool("charge"): {Value: "other-charge"}, store.BaselineKey{Kind: store.KindInstructions}: {Value: "other-instr"}}) {
		t.Fatalf("acme/other after migration: %v", other)
	}
	if b := get(s.GetBaseline(ctx, "acme/empty")).ok(t); len(b) != 0 {
		t.Fatalf("acme/empty after migration: %v", b)
	}
	for id, v := range map[string]int64{"acme/pay": 7, "acme/other": 3, "acme/empty": 0} {
		if got := get(s.BaselineVersion(ctx, id)).ok(t); got != v {
			t.Fatalf("%s: baseline version %d after migration, want %d (nobody re-trusts)", id, got, v)
		}
	}
	// Insert-only holds on migrated rows; kinds keep names apart.
	if n := get(s.SaveBaseline(ctx, "acme/pay", store.Baseline{tool("charge"): {Value: "drifted"}, store.BaselineKey{Kind: store.KindInstructions}: {Value: "drifted"},
		{Kind: store.KindPrompt, Name: "summarize"}: {Value: "drifted"}})).ok(t); n != 0 {
		t.Fatalf("a save over migrated entries added %d", n)
	}
	if n := get(s.SaveBaseline(ctx, "acme/pay", store.Baseline{{Kind: store.KindPrompt, Name: "charge"}: {Value: "p"}})).ok(t); n != 1 {
		t.Fatalf("a prompt named like a migrated tool added %d, want 1", n)
	}
	// Drift works on the migrated store.
	o, _, err := s.ObserveListing(ctx, store.Observation{ServerID: "acme/pay", Listing: "L", BaselineVersion: 8, SeenBy: "gw",
		Entries: store.Baseline{tool("charge"): {Value: "new", Contract: []byte(`{}`)}}, Drifted: true})
	if err != nil {
		t.Fatal(err)
	}
	if tr, err := s.TrustListing(ctx, "acme/pay", "L"); err != nil || tr.ID != o.ID {
		t.Fatalf("TrustListing on the migrated store = %+v, %v", tr, err)
	}
	if b := get(s.GetBaseline(ctx, "acme/pay")).ok(t); !equalBaselines(b, store.Baseline{tool("charge"): {Value: "new", Contract: []byte(`{}`)}}) {
		t.Fatalf("after the trust: %v", b)
	}
	// The rebuilt table still cascades from servers.
	if err := s.DeleteServer(ctx, "acme/other"); err != nil {
		t.Fatal(err)
	}
	putServer(t, s, "acme/other")
	if b := get(s.GetBaseline(ctx, "acme/other")).ok(t); len(b) != 0 {
		t.Fatalf("a deleted server's migrated baseline survived: %v", b)
	}
}
