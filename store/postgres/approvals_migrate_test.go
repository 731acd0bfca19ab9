package postgres_test

import (
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/store/internal/sqlstore"
	"github.com/gatehouse-dev/gatehouse/store/internal/storetest"
)

// allVersions is 1..the latest schema version.
func allVersions() []int64 {
	var vs []int64
	for v := int64(1); v <= sqlstore.LatestVersion(); v++ {
		vs = append(vs, v)
	}
	return vs
}

// TestMigrateApprovalsFromV2: a schema at version 2 with approvals in
// every state upgrades without losing any.
func TestMigrateApprovalsFromV2(t *testing.T) {
	_, cfg := freshSchema(t)
	c := connect(t, cfg().ConnConfig)
	ctx := t.Context()
	ms, err := sqlstore.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	stmts := []string{`CREATE TABLE schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`}
	for _, m := range ms[:2] {
		stmts = append(stmts, sqlstore.Statements(sqlstore.Dialect{Bytes: "BYTEA"}, m.SQL)...)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	for _, s := range stmts {
		if _, err := c.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	for _, m := range ms[:2] {
		if _, err := c.Exec(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, 1)`, m.Version, m.Name); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range storetest.ApprovalsV2Rows(now) {
		if _, err := c.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	storetest.CheckApprovalsFromV2(t, openCfg(t, cfg(), nil), now)
}
