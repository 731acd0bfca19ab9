package sqlite_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/store/internal/sqlstore"
	"github.com/gatehouse-dev/gatehouse/store/internal/storetest"
	"github.com/gatehouse-dev/gatehouse/store/sqlite"
)

// allVersions is 1..the latest schema version.
func allVersions() []int64 {
	var vs []int64
	for v := int64(1); v <= sqlstore.LatestVersion(); v++ {
		vs = append(vs, v)
	}
	return vs
}

// schemaAt returns the statements that build schema version upTo.
func schemaAt(t *testing.T, d sqlstore.Dialect, upTo int64) []string {
	t.Helper()
	ms, err := sqlstore.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	out := []string{`CREATE TABLE schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`}
	for _, m := range ms[:upTo] {
		out = append(out, sqlstore.Statements(d, m.SQL)...)
		out = append(out, fmt.Sprintf(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (%d, '%s', 1)`, m.Version, m.Name))
	}
	return out
}

// TestMigrateApprovalsFromV2: a database at version 2 with approvals in
// every state upgrades without losing any.
func TestMigrateApprovalsFromV2(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v2.db")
	now := time.Now().UTC().Truncate(time.Millisecond)
	rawExec(t, path, append(schemaAt(t, sqlstore.Dialect{Bytes: "BLOB"}, 2), storetest.ApprovalsV2Rows(now)...)...)
	s, err := sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.CheckApprovalsFromV2(t, s, now)
}
