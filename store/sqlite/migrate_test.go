package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/sqlstore"
	"github.com/gatehouse-dev/gatehouse/store/sqlite"
)

func rawExec(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// snapshot dumps the schema and every row of every table.
func snapshot(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var b strings.Builder
	rows, err := db.Query(`SELECT type, name, COALESCE(sql, '') FROM sqlite_master ORDER BY type, name`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var typ, name, s string
		if err := rows.Scan(&typ, &name, &s); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %s %s\n", typ, name, s)
		if typ == "table" {
			tables = append(tables, name)
		}
	}
	rows.Close()
	for _, tb := range tables {
		rs, err := db.Query(`SELECT * FROM ` + tb + ` ORDER BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rs.Columns()
		for rs.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rs.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s %v\n", tb, vals)
		}
		rs.Close()
	}
	return b.String()
}

func columns(t *testing.T, db *sql.DB) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, tb := range []string{"schema_migrations", "servers", "baselines", "journal", "counters", "approvals", "executors", "observations"} {
		rows, err := db.Query(`SELECT name, type, "notnull", COALESCE(dflt_value, ''), pk FROM pragma_table_info(?)`, tb)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var name, typ, dflt string
			var notnull, pk int
			if err := rows.Scan(&name, &typ, &notnull, &dflt, &pk); err != nil {
				t.Fatal(err)
			}
			out[tb] = append(out[tb], fmt.Sprint(name, typ, notnull, dflt, pk))
		}
		rows.Close()
	}
	return out
}

func TestMigrateFromV1(t *testing.T) {
	ctx := t.Context()
	fixture, err := os.ReadFile("testdata/v1.sql")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "v1.db")
	rawExec(t, path, string(fixture))

	s, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	bank, err := s.GetServer(ctx, "acme/bank")
	if err != nil {
		t.Fatal(err)
	}
	if bank.Name != "bank" || bank.Type != "http" || bank.URL != "https://bank.example/mcp" ||
		string(bank.Catalogue) != `{"tools":[{"name":"transfer"}]}` || bank.UpdatedAt.UnixMilli() != 1767225600123 || bank.BaselineVersion != 0 {
		t.Fatalf("v1 row after migration = %+v", bank)
	}
	if local, err := s.GetServer(ctx, "acme/local"); err != nil || local.Catalogue != nil || local.Type != "stdio" {
		t.Fatalf("v1 stdio row = %+v, %v", local, err)
	}
	if bl, err := s.GetBaseline(ctx, "acme/bank"); err != nil || len(bl) != 0 {
		t.Fatalf("baseline of a v1 row = %v, %v", bl, err)
	}
	// The new tables work on the migrated database.
	if n, err := s.SaveBaseline(ctx, "acme/bank", store.Baseline{{Kind: store.KindTool, Name: "transfer"}: {Value: "fp"}}); err != nil || n != 1 {
		t.Fatalf("SaveBaseline on migrated db = %d, %v", n, err)
	}
	if v, err := s.IncrBy(ctx, "c", 1, time.Time{}); err != nil || v != 1 {
		t.Fatalf("IncrBy on migrated db = %d, %v", v, err)
	}
	var versions []int64
	rows, err := s.SQLDB().QueryContext(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var v int64
		rows.Scan(&v)
		versions = append(versions, v)
	}
	rows.Close()
	if !reflect.DeepEqual(versions, allVersions()) {
		t.Fatalf("schema versions %v", versions)
	}
	// The migrated schema is the schema of a fresh database.
	fresh := openTemp(t, nil)
	if got, want := columns(t, s.SQLDB()), columns(t, fresh.SQLDB()); !reflect.DeepEqual(got, want) {
		t.Fatalf("migrated schema differs from fresh:\n%v\n%v", got, want)
	}
}

func TestSchemaTooNew(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "new.db")
	s, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutServer(ctx, store.Server{ID: "a", Name: "a", Type: "stdio"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	rawExec(t, path,
		fmt.Sprintf(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (%d, 'from_the_future', 1)`, sqlstore.LatestVersion()+1),
		`CREATE TABLE future_things (x TEXT)`)
	before := snapshot(t, path)

	_, err = sqlite.Open(ctx, path, nil)
	if !errors.Is(err, store.ErrSchemaTooNew) {
		t.Fatalf("Open of a newer schema = %v, want ErrSchemaTooNew", err)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("version %d", sqlstore.LatestVersion()+1)) || !strings.Contains(err.Error(), fmt.Sprintf("up to %d", sqlstore.LatestVersion())) {
		t.Fatalf("error does not name the versions: %v", err)
	}
	if after := snapshot(t, path); after != before {
		t.Fatalf("a refused Open changed the database:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

func TestConcurrentOpenMigratesOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "race.db")
	const n = 6
	var wg sync.WaitGroup
	errs := make([]error, n)
	stores := make([]*sqlite.Store, n)
	for i := range n {
		wg.Go(func() { stores[i], errs[i] = sqlite.Open(context.Background(), path, nil) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("opener %d: %v", i, err)
		}
		defer stores[i].Close()
	}
	var count int
	if err := stores[0].SQLDB().QueryRow(`SELECT COUNT(*) FROM schema_migrations`).Scan(&count); err != nil || count != int(sqlstore.LatestVersion()) {
		t.Fatalf("schema_migrations rows = %d, %v; want %d", count, err, sqlstore.LatestVersion())
	}
	var mode string
	if err := stores[0].SQLDB().QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q, %v", mode, err)
	}
	var fk int
	if err := stores[0].SQLDB().QueryRow(`PRAGMA foreign_keys`).Scan(&fk); err != nil || fk != 1 {
		t.Fatalf("foreign_keys = %d, %v", fk, err)
	}
}

func TestOpenRefusesBadPaths(t *testing.T) {
	for _, p := range []string{"", "a?b.db", ":memory:", "file:x.db"} {
		if _, err := sqlite.Open(t.Context(), p, nil); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Open(%q) = %v, want ErrInvalid", p, err)
		}
	}
}
