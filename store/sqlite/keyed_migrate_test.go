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

// v12Dialect is SQLite's dialect as versions up to 12 wrote it.
var v12Dialect = sqlstore.Dialect{Name: "sqlite", Bytes: "BLOB", Serial: "INTEGER PRIMARY KEY AUTOINCREMENT"}

// queryStrings returns the first column of q's rows on path.
func queryStrings(t *testing.T, path, q string, args ...any) []string {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s sql.NullString
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s.String)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMigrateKeyedFromV12: a file written by schema version 12 (the
// journal's indexes on owner and on expires_at, audit_log's id
// AUTOINCREMENT) upgrades to version 13: the journal has one index, on
// (owner, expires_at), which Sweep, Purge and the runs of one owner use
// and which leave every record they did before; audit_log's id is the row
// ID (nothing in sqlite_sequence), every entry keeps its ID, the chain
// verifies, and a writer continues it with IDs after the greatest ever
// given, also once retention has cut the chain to its head.
func TestMigrateKeyedFromV12(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v12.db")
	ctx := t.Context()
	at0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	old := v10Chain(30, at0)
	stmts := schemaAt(t, v12Dialect, 12)
	for _, e := range old {
		stmts = append(stmts, fmt.Sprintf(`INSERT INTO audit_log (chain, seq, at, kind, subject, server, tool, args_digest, outcome, duration_us, instance, prev_hash, hash, detail)
VALUES ('%s', %d, %d, '%s', '%s', '%s', '%s', '%s', '%s', %d, '%s', '%s', '%s', NULL)`, e.Chain, e.Seq, e.At.UnixMilli(), e.Kind, e.Subject, e.Server, e.Tool,
			e.ArgsDigest, e.Outcome, e.Duration.Microseconds(), e.Instance, e.PrevHash, e.Hash))
	}
	// Records of three owners: a third expired at now, one never expiring.
	now := at0.Add(time.Hour)
	for i := range 30 {
		owner := []string{"alice", "bob", "carol"}[i%3]
		exp := now.Add(time.Duration(i%3-1) * time.Minute).UnixMilli() // -1 min, now, +1 min
		if i == 4 {
			exp = 0
		}
		stmts = append(stmts, fmt.Sprintf(`INSERT INTO journal (scope, run_id, tool_call_id, fingerprint, state, outcome, owner, executor, lease_until, created_at, updated_at, expires_at)
VALUES ('s', 'run-%s', 'call-%02d', 'fp', 'succeeded', X'7B7D', '%s', 'e', 0, %d, %d, %d)`, owner, i, owner, at0.UnixMilli(), at0.UnixMilli(), exp))
	}
	rawExec(t, path, stmts...)
	if got := strings.Join(queryStrings(t, path, `SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'journal' ORDER BY name`), " "); got != "journal_expires_at journal_owner sqlite_autoindex_journal_1" {
		t.Fatalf("the version 12 fixture's journal indexes: %q", got)
	}
	if got := queryStrings(t, path, `SELECT seq FROM sqlite_sequence WHERE name = 'audit_log'`); len(got) != 1 || got[0] != "30" {
		t.Fatalf("the version 12 fixture's audit counter: %q", got)
	}
	// Migration 13 restates audit_log's columns to rebuild the table: each
	// must come out as it was (name, type, NOT NULL, default, key), and its
	// indexes the same.
	const columnsQ = `SELECT name || ' ' || type || ' ' || "notnull" || ' ' || IFNULL(dflt_value, '-') || ' ' || pk FROM pragma_table_info('audit_log') ORDER BY cid`
	const indexesQ = `SELECT name || ': ' || IFNULL(sql, '') FROM sqlite_master WHERE type = 'index' AND tbl_name = 'audit_log' ORDER BY name`
	columnsV12, indexesV12 := queryStrings(t, path, columnsQ), queryStrings(t, path, indexesQ)
	if len(columnsV12) < 14 {
		t.Fatalf("the version 12 fixture's audit_log columns: %q", columnsV12)
	}

	// Migration 13 alone (audit_log is gone since 14: its checks here).
	migrateRaw(t, path, v12Dialect, 12, 13)
	if got := queryStrings(t, path, `SELECT sql FROM sqlite_master WHERE name = 'audit_log'`); len(got) != 1 || strings.Contains(strings.ToUpper(got[0]), "AUTOINCREMENT") || !strings.Contains(got[0], "id          INTEGER PRIMARY KEY,") {
		t.Fatalf("audit_log after the migration: %q", got)
	}
	if got := queryStrings(t, path, columnsQ); strings.Join(got, "\n") != strings.Join(columnsV12, "\n") {
		t.Fatalf("audit_log's columns after the migration:\n%s\nbefore:\n%s", strings.Join(got, "\n"), strings.Join(columnsV12, "\n"))
	}
	if got := queryStrings(t, path, indexesQ); strings.Join(got, "\n") != strings.Join(indexesV12, "\n") {
		t.Fatalf("audit_log's indexes after the migration:\n%s\nbefore:\n%s", strings.Join(got, "\n"), strings.Join(indexesV12, "\n"))
	}
	if got := strings.Join(queryStrings(t, path, `SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'audit_log' ORDER BY name`), " "); got != "audit_log_chain" {
		t.Fatalf("audit indexes after the migration: %q", got)
	}
	if got := queryStrings(t, path, `SELECT name FROM sqlite_sequence WHERE name = 'audit_log'`); len(got) != 0 {
		t.Fatalf("sqlite_sequence still counts audit_log: %q", got)
	}

	s, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	if got := strings.Join(queryStrings(t, path, `SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'journal' ORDER BY name`), " "); got != "journal_owner_expires sqlite_autoindex_journal_1" {
		t.Fatalf("journal indexes after the migration: %q", got)
	}
	entries, err := s.ListAudit(ctx, store.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range entries {
		if e.ID != int64(i+1) || e.Seq != old[i].Seq || e.Hash != old[i].Hash {
			t.Fatalf("entry %d after the migration: id %d seq %d", i, e.ID, e.Seq)
		}
	}
	checkMigratedAudit(t, s, old, at0) // verifies, filters, and 37 entries more

	// The journal through its one index.
	runs, err := s.ListRuns(ctx, store.RunFilter{Owner: "bob"})
	if err != nil || len(runs) != 1 || runs[0].Calls != 10 {
		t.Fatalf("bob's runs: %+v, %v", runs, err)
	}
	n, err := s.Sweep(ctx, now)
	if err != nil || n != 19 { // expired a minute ago (10) or at now (10), less the one that never expires
		t.Fatalf("Sweep = %d, %v; want 19", n, err)
	}
	for _, c := range []struct {
		owner string
		left  int64
	}{{"alice", 0}, {"bob", 1}, {"carol", 10}} {
		recs, err := s.ListRuns(ctx, store.RunFilter{Owner: c.owner})
		var left int64
		for _, r := range recs {
			left += r.Calls
		}
		if err != nil || left != c.left {
			t.Fatalf("%s's records after Sweep: %d, %v; want %d", c.owner, left, err, c.left)
		}
	}
	if n, err := s.Purge(ctx, "carol"); err != nil || n != 10 {
		t.Fatalf("Purge(carol) = %d, %v", n, err)
	}

	// IDs are never given again: retention keeps the head, whose ID is
	// the greatest, and new entries follow it, in this process and after a
	// reopen.
	last := int64(len(old)) + 37
	head, err := s.AuditHead(ctx, "gw/old")
	if err != nil || head.Last != last {
		t.Fatalf("head %+v, %v", head, err)
	}
	if err := s.PutAuditCheckpoint(ctx, store.AuditCheckpoint{Chain: "gw/old", Seq: last - 1, Hash: entryHash(t, s, "gw/old", last-1)}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.TruncateAudit(ctx, "gw/old", last); err != nil || n != last-1 {
		t.Fatalf("TruncateAudit = %d, %v", n, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := audit.NewWriter(ctx, s, &audit.WriterOptions{Chain: "gw/old", Instance: "new", Linger: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append(ctx, store.AuditEntry{Kind: audit.KindCall, Subject: "dave", Tool: "pay", ArgsDigest: audit.ArgsDigest(nil), Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := w.Flush(cctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	after, err := s.ListAudit(ctx, store.AuditFilter{})
	if err != nil || len(after) != 2 || after[0].ID != last || after[1].ID != last+1 || after[1].Seq != last+1 {
		t.Fatalf("the chain after retention and one more entry: %+v, %v", after, err)
	}
}

// entryHash is the hash of chain's entry seq.
func entryHash(t *testing.T, st store.AuditStore, chain string, seq int64) string {
	t.Helper()
	es, err := st.ReadAuditChain(t.Context(), chain, seq-1, 1)
	if err != nil || len(es) != 1 {
		t.Fatalf("entry %s/%d: %v, %v", chain, seq, es, err)
	}
	return es[0].Hash
}
