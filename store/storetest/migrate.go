package storetest

import (
	"fmt"
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
		if a.State != st || !a.ExpiresAt.Equal(a.CreatedAt.Add(24*time.Hour)) || a.Args != nil || a.Owner != "alice" || a.ArgsFingerprint == "" {
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
