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
	if len(ms) != 4 || ms[0].Name != "0001_servers" || ms[2].Name != "0003_approvals_once" || ms[3].Name != "0004_executors" || LatestVersion() != 4 {
		t.Fatalf("migrations = %+v", ms)
	}
}

func TestStatements(t *testing.T) {
	sql := "-- comment; not a statement\nCREATE TABLE a (b {{BYTES}});\n\nCREATE INDEX i\n  ON a (b);\nSELECT 1"
	got := Statements(Dialect{Bytes: "BYTEA"}, sql)
	want := []string{"CREATE TABLE a (b BYTEA);", "CREATE INDEX i\n  ON a (b);", "SELECT 1"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("Statements = %q, want %q", got, want)
	}
	for _, m := range must(Migrations()) {
		for _, d := range []Dialect{{Bytes: "BLOB"}, {Bytes: "BYTEA"}} {
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
