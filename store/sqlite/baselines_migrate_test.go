package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/gatehouse-dev/gatehouse/store/internal/sqlstore"
	"github.com/gatehouse-dev/gatehouse/store/internal/storetest"
	"github.com/gatehouse-dev/gatehouse/store/sqlite"
)

// TestMigrateBaselinesFromV4: a file written by schema version 4 (one-string
// baseline keys) upgrades to baselines by kind, versions unchanged, and the
// rebuilt table keeps its foreign key.
func TestMigrateBaselinesFromV4(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v4.db")
	rawExec(t, path, append(schemaAt(t, sqlstore.Dialect{Bytes: "BLOB"}, 4), storetest.BaselinesV4Rows()...)...)
	s, err := sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var v int64
	if err := s.SQLDB().QueryRow(`SELECT MAX(version) FROM schema_migrations`).Scan(&v); err != nil || v != sqlstore.LatestVersion() {
		t.Fatalf("schema version %d, %v after Open", v, err)
	}
	storetest.CheckBaselinesFromV4(t, s)
	rows, err := s.SQLDB().Query(`PRAGMA foreign_key_check`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if rows.Next() {
		t.Fatal("PRAGMA foreign_key_check reports a violation after the migration")
	}
	var fk int
	if err := s.SQLDB().QueryRow(`SELECT COUNT(*) FROM pragma_foreign_key_list('baselines') WHERE "table" = 'servers' AND on_delete = 'CASCADE'`).Scan(&fk); err != nil || fk != 1 {
		t.Fatalf("baselines' foreign keys to servers with ON DELETE CASCADE: %d, %v", fk, err)
	}
}
