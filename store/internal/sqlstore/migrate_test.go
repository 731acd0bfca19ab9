package sqlstore

import (
	"strings"
	"testing"
)

func TestMigrationsAreSequential(t *testing.T) {
	ms, err := Migrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 14 || ms[0].Name != "0001_servers" || ms[2].Name != "0003_approvals_once" || ms[3].Name != "0004_executors" ||
		ms[4].Name != "0005_baseline_kinds_drift" || ms[5].Name != "0006_audit" || ms[6].Name != "0007_connections" ||
		ms[7].Name != "0008_approval_contract" || ms[8].Name != "0009_connection_account" || ms[9].Name != "0010_sessions" || ms[10].Name != "0011_audit_lean" ||
		ms[11].Name != "0012_sessions_subject" || ms[12].Name != "0013_keyed_lean" || ms[13].Name != "0014_audit_blocks" || LatestVersion() != 14 {
		t.Fatalf("migrations = %+v", ms)
	}
}

func TestStatements(t *testing.T) {
	sql := "-- comment; not a statement\nCREATE TABLE a (id {{SERIAL}}, b {{BYTES}});\n\nCREATE INDEX i\n  ON a (b);\nSELECT 1"
	got := Statements(Dialect{Bytes: "BYTEA", Serial: "BIGSERIAL PRIMARY KEY"}, sql)
	want := []string{"CREATE TABLE a (id BIGSERIAL PRIMARY KEY, b BYTEA);", "CREATE INDEX i\n  ON a (b);", "SELECT 1"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("Statements = %q, want %q", got, want)
	}
	for _, m := range must(Migrations()) {
		for _, d := range []Dialect{{Name: "sqlite", Bytes: "BLOB", Serial: "INTEGER PRIMARY KEY AUTOINCREMENT"}, {Name: "postgres", Bytes: "BYTEA", Serial: "BIGSERIAL PRIMARY KEY"}} {
			for _, s := range Statements(d, m.SQL) {
				if strings.Contains(s, "{{") || strings.Contains(s, "--") {
					t.Fatalf("%s: unsubstituted or commented statement %q", m.Name, s)
				}
			}
		}
	}
}

// TestStatementsOfOneDialect: statements after "-- only NAME" are the
// dialect NAME's alone, up to "-- every dialect".
func TestStatementsOfOneDialect(t *testing.T) {
	sql := "CREATE TABLE a (b INT);\n-- only sqlite\nCREATE INDEX s ON a (b);\nDROP INDEX t;\n-- every dialect\nCREATE TABLE c (d INT);\n-- only postgres\nCREATE INDEX p ON c (d);"
	for _, c := range []struct{ dialect, want string }{
		{"sqlite", "CREATE TABLE a (b INT);|CREATE INDEX s ON a (b);|DROP INDEX t;|CREATE TABLE c (d INT);"},
		{"postgres", "CREATE TABLE a (b INT);|CREATE TABLE c (d INT);|CREATE INDEX p ON c (d);"},
		{"", "CREATE TABLE a (b INT);|CREATE TABLE c (d INT);"},
	} {
		if got := strings.Join(Statements(Dialect{Name: c.dialect}, sql), "|"); got != c.want {
			t.Errorf("%q: Statements = %q, want %q", c.dialect, got, c.want)
		}
	}
	// Version 13 changes SQLite's schema only.
	m := must(Migrations())[12]
	if pg := Statements(Dialect{Name: "postgres", Bytes: "BYTEA", Serial: "BIGSERIAL PRIMARY KEY"}, m.SQL); len(pg) != 0 {
		t.Errorf("%s on PostgreSQL: %q, want nothing", m.Name, pg)
	}
	if lite := Statements(Dialect{Name: "sqlite", Bytes: "BLOB"}, m.SQL); len(lite) != 8 {
		t.Errorf("%s on SQLite: %d statements, want 8: %q", m.Name, len(lite), lite)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
