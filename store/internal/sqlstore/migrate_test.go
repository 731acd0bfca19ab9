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
	if len(ms) != 12 || ms[0].Name != "0001_servers" || ms[2].Name != "0003_approvals_once" || ms[3].Name != "0004_executors" ||
		ms[4].Name != "0005_baseline_kinds_drift" || ms[5].Name != "0006_audit" || ms[6].Name != "0007_connections" ||
		ms[7].Name != "0008_approval_contract" || ms[8].Name != "0009_connection_account" || ms[9].Name != "0010_sessions" || ms[10].Name != "0011_audit_lean" ||
		ms[11].Name != "0012_sessions_subject" || LatestVersion() != 12 {
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
		for _, d := range []Dialect{{Bytes: "BLOB", Serial: "INTEGER PRIMARY KEY AUTOINCREMENT"}, {Bytes: "BYTEA", Serial: "BIGSERIAL PRIMARY KEY"}} {
			for _, s := range Statements(d, m.SQL) {
				if strings.Contains(s, "{{") || strings.Contains(s, "--") {
					t.Fatalf("%s: unsubstituted or commented statement %q", m.Name, s)
				}
			}
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
