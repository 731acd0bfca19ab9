package sqlite

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

// TestSweepOwnerByOwner: Sweep deletes the expired records of every owner
// (300 of them, each with an expired, a live and a never-expiring record)
// and no other, and SQLite runs it as a range of the (owner, expires_at)
// index per owner, not as a scan of the journal.
func TestSweepOwnerByOwner(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "s.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	now := time.Now()
	for i := range 300 {
		owner := fmt.Sprintf("owner-%03d", i)
		for j, exp := range []time.Time{now.Add(-time.Second), now.Add(time.Hour), {}} {
			rec := store.Record{RecordKey: store.RecordKey{Scope: "s", RunID: owner, ToolCallID: fmt.Sprint(j)}, Fingerprint: "f",
				State: store.StateStarted, Owner: owner, Executor: "e", LeaseUntil: now.Add(time.Minute), ExpiresAt: exp}
			if ok, _, err := s.Claim(ctx, rec); err != nil || !ok {
				t.Fatal(ok, err)
			}
		}
	}
	n, err := s.Sweep(ctx, now)
	if err != nil || n != 300 {
		t.Fatalf("Sweep = %d, %v; want 300", n, err)
	}
	var left, expired int
	if err := s.SQLDB().QueryRow(`SELECT COUNT(*), SUM(CASE WHEN expires_at <> 0 AND expires_at <= ? THEN 1 ELSE 0 END) FROM journal`, now.UnixMilli()).Scan(&left, &expired); err != nil {
		t.Fatal(err)
	}
	if left != 600 || expired != 0 {
		t.Fatalf("after Sweep: %d records, %d of them expired; want 600, 0", left, expired)
	}
	rows, err := s.SQLDB().Query(`EXPLAIN QUERY PLAN `+strings.Replace(sweepQuery, "$1", "?", 1), now.UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if p := strings.Join(plan, "; "); !strings.Contains(p, "INDEX journal_owner_expires (owner=? AND expires_at<?)") || strings.Contains(p, "SCAN journal") {
		t.Fatalf("Sweep's plan: %s", p)
	}
}
