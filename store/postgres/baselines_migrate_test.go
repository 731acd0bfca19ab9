package postgres_test

import (
	"testing"

	"github.com/gatehouse-dev/gatehouse/store/internal/sqlstore"
	"github.com/gatehouse-dev/gatehouse/store/internal/storetest"
)

// TestMigrateBaselinesFromV4: a schema written by version 4 (one-string
// baseline keys) upgrades to baselines by kind, versions unchanged.
func TestMigrateBaselinesFromV4(t *testing.T) {
	_, cfg := freshSchema(t)
	c := connect(t, cfg().ConnConfig)
	ctx := t.Context()
	ms, err := sqlstore.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	stmts := []string{`CREATE TABLE schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`}
	for _, m := range ms[:4] {
		stmts = append(stmts, sqlstore.Statements(sqlstore.Dialect{Bytes: "BYTEA"}, m.SQL)...)
	}
	for _, s := range append(stmts, storetest.BaselinesV4Rows()...) {
		if _, err := c.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	for _, m := range ms[:4] {
		if _, err := c.Exec(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, 1)`, m.Version, m.Name); err != nil {
			t.Fatal(err)
		}
	}
	s := openCfg(t, cfg(), nil)
	var v int64
	if err := s.DB().QueryRow(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&v); err != nil || v != sqlstore.LatestVersion() {
		t.Fatalf("schema version %d, %v after Open", v, err)
	}
	storetest.CheckBaselinesFromV4(t, s)
}
