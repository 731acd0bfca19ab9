package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/audit"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/sqlstore"
	"github.com/gatehouse-dev/gatehouse/store/sqlite"
)

// v10Chain is the chain a database of schema version 10 holds in
// TestMigrateAuditFromV10: n linked entries of subjects alice and bob in
// turn, a minute apart from at0.
func v10Chain(n int, at0 time.Time) []store.AuditEntry {
	out := make([]store.AuditEntry, n)
	head := store.AuditHead{Chain: "gw/old"}
	for i := range out {
		subject := []string{"alice", "bob"}[i%2]
		out[i] = audit.Link(store.AuditEntry{At: at0.Add(time.Duration(i) * time.Minute), Kind: audit.KindCall, Subject: subject,
			Server: "bank", Tool: "pay", ArgsDigest: audit.ArgsDigest([]byte(fmt.Sprintf(`{"n":%d}`, i))), Outcome: "ok",
			Duration: 1500 * time.Microsecond, Instance: "old"}, head)
		head.Last, head.Hash = out[i].Seq, out[i].Hash
	}
	return out
}

// TestMigrateAuditFromV10: a file written by schema version 10 (the
// audit table with its indexes on at and (subject, id)) upgrades to
// version 11: only the (chain, seq) index is left; then to the latest
// (blocks since 14): the chain written before verifies, the filters read
// the same entries, and a writer continues the chain, which verifies
// whole.
func TestMigrateAuditFromV10(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v10.db")
	at0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	old := v10Chain(40, at0)
	rawExec(t, path, schemaAt(t, sqlstore.Dialect{Bytes: "BLOB", Serial: "INTEGER PRIMARY KEY AUTOINCREMENT"}, 10)...)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range old {
		if _, err := db.Exec(`INSERT INTO audit_log (chain, seq, at, kind, subject, server, tool, args_digest, outcome, duration_us, instance, prev_hash, hash, detail)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)`, e.Chain, e.Seq, e.At.UnixMilli(), e.Kind, e.Subject, e.Server, e.Tool, e.ArgsDigest, e.Outcome,
			e.Duration.Microseconds(), e.Instance, e.PrevHash, e.Hash); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	if got := auditIndexes(t, path); got != "audit_log_at audit_log_chain audit_log_subject" {
		t.Fatalf("the version 10 fixture's audit indexes: %q", got)
	}

	migrateRaw(t, path, sqlstore.Dialect{Name: "sqlite", Bytes: "BLOB", Serial: "INTEGER PRIMARY KEY AUTOINCREMENT"}, 10, 11)
	if got := auditIndexes(t, path); got != "audit_log_chain" {
		t.Fatalf("audit indexes after migration 11: %q, want audit_log_chain only", got)
	}

	s, err := sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var v int64
	if err := s.SQLDB().QueryRow(`SELECT MAX(version) FROM schema_migrations`).Scan(&v); err != nil || v < 11 || v != sqlstore.LatestVersion() {
		t.Fatalf("schema version %d, %v after Open", v, err)
	}
	checkMigratedAudit(t, s, old, at0)
}

// migrateRaw applies the migrations after from up to to on path, as
// Migrate would, without opening a store.
func migrateRaw(t *testing.T, path string, d sqlstore.Dialect, from, to int64) {
	t.Helper()
	ms, err := sqlstore.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	var stmts []string
	for _, m := range ms[from:to] {
		stmts = append(stmts, sqlstore.Statements(d, m.SQL)...)
		stmts = append(stmts, fmt.Sprintf(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (%d, '%s', 1)`, m.Version, m.Name))
	}
	rawExec(t, path, stmts...)
}

// auditIndexes lists the indexes of audit_log in path, by name.
func auditIndexes(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'audit_log' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(names, " ")
}

// checkMigratedAudit checks a store migrated with the entries old (of
// v10Chain) in it: they verify, the subject and time filters read them
// back, and a writer (the gateway's path) appends after them.
func checkMigratedAudit(t *testing.T, st store.AuditStore, old []store.AuditEntry, at0 time.Time) {
	t.Helper()
	ctx := t.Context()
	verify := func(want int64) {
		t.Helper()
		res, err := audit.Verify(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Problem != nil || len(res.Chains) != 1 || res.Chains[0].Entries != want || res.Chains[0].Last != want {
			t.Fatalf("verify after the migration: %+v, problem %v", res.Chains, res.Problem)
		}
	}
	verify(int64(len(old)))
	alice, err := st.ListAudit(ctx, store.AuditFilter{Subject: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if len(alice) != len(old)/2 {
		t.Fatalf("alice's entries: %d, want %d", len(alice), len(old)/2)
	}
	for i, e := range alice {
		if e.Seq != int64(2*i+1) || e.Hash != old[2*i].Hash || (i > 0 && e.ID <= alice[i-1].ID) {
			t.Fatalf("alice's entry %d: seq %d id %d hash %s", i, e.Seq, e.ID, e.Hash)
		}
	}
	window, err := st.ListAudit(ctx, store.AuditFilter{Subject: "bob", Since: at0.Add(10 * time.Minute), Until: at0.Add(20 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if len(window) != 5 || window[0].Seq != 12 || window[4].Seq != 20 {
		t.Fatalf("bob's entries from minute 10 to 20: %+v", window)
	}
	w, err := audit.NewWriter(ctx, st, &audit.WriterOptions{Chain: "gw/old", Instance: "new", Linger: -1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 37 {
		if err := w.Append(ctx, store.AuditEntry{Kind: audit.KindCall, Subject: "carol", Tool: "pay", ArgsDigest: audit.ArgsDigest(nil),
			Outcome: "ok", Duration: time.Duration(i) * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := w.Flush(cctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	verify(int64(len(old)) + 37)
	carol, err := st.ListAudit(ctx, store.AuditFilter{Subject: "carol", Since: at0})
	if err != nil {
		t.Fatal(err)
	}
	if len(carol) != 37 {
		t.Fatalf("carol's entries after the old chain: %d, want 37", len(carol))
	}
	if carol[0].Seq != int64(len(old))+1 || carol[0].PrevHash != old[len(old)-1].Hash {
		t.Fatalf("carol's first entry does not follow the old chain: %+v", carol[0])
	}
}
