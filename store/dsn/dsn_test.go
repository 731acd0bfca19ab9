package dsn_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/dsn"
	"github.com/gatehouse-dev/gatehouse/store/memory"
	"github.com/gatehouse-dev/gatehouse/store/postgres"
	"github.com/gatehouse-dev/gatehouse/store/sqlite"
)

func TestOpenBadDSNs(t *testing.T) {
	ctx := t.Context()
	for _, tc := range []struct {
		name, dsn string
		want      error
	}{
		{"empty", "", store.ErrEmptyDSN},
		{"unknown scheme", "mysql://db/x", store.ErrUnknownScheme},
		{"no scheme", "./gatehouse.db", store.ErrUnknownScheme},
		{"sqlite without path", "sqlite:", store.ErrMissingPath},
		{"ambiguous sqlite URL", "sqlite://x.db", store.ErrInvalidDSN},
		{"bad durability", "sqlite:x.db?durability=maybe", store.ErrInvalidDSN},
		{"memory with a path", "memory:foo", store.ErrInvalidDSN},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := dsn.Open(ctx, tc.dsn, nil)
			if err == nil {
				s.Close()
				t.Fatalf("Open(%q) succeeded", tc.dsn)
			}
			if !errors.Is(err, tc.want) || !errors.Is(err, store.ErrInvalidDSN) {
				t.Fatalf("Open(%q) = %v, want %v", tc.dsn, err, tc.want)
			}
		})
	}
}

// TestOpenSQLiteInMissingDirectory: a SQLite store whose folder does not
// exist yet creates it, private (0700), when the folder's parent exists,
// as `gatehouse serve` expects of its default .gatehouse/gatehouse.db; a
// deeper missing path is refused, naming its first missing folder, and
// nothing is created.
func TestOpenSQLiteInMissingDirectory(t *testing.T) {
	root := t.TempDir()
	s, err := dsn.Open(t.Context(), "sqlite:"+filepath.Join(root, "dir", "g.db"), nil)
	if err != nil {
		t.Fatalf("Open in a missing directory = %v", err)
	}
	s.Close()
	if fi, err := os.Stat(filepath.Join(root, "dir")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("dir: %v %v, want a 0700 directory", fi, err)
	}

	root = t.TempDir()
	_, err = dsn.Open(t.Context(), "sqlite:"+filepath.Join(root, "no", "such", "dir", "g.db"), nil)
	if want := "the folder " + filepath.Join(root, "no") + " does not exist"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Open in a missing tree = %v, want %q", err, want)
	}
	if ents, _ := os.ReadDir(root); len(ents) != 0 {
		t.Fatalf("Open in a missing tree created %v", ents)
	}
}

// TestOpenMustExist: with MustExist, dsn.Open refuses what holds no
// Gatehouse store with ErrNoStore (memory: never does), creates nothing,
// and opens a store that exists.
func TestOpenMustExist(t *testing.T) {
	ctx := t.Context()
	must := &store.Options{MustExist: true}
	if s, err := dsn.Open(ctx, "memory:", must); !errors.Is(err, store.ErrNoStore) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("memory: with MustExist = %v, want ErrNoStore", err)
	}
	dir := t.TempDir()
	d := "sqlite:" + filepath.Join(dir, "g.db") + "?durability=power"
	if _, err := dsn.Open(ctx, d, must); !errors.Is(err, store.ErrNoStore) {
		t.Fatalf("a missing file with MustExist = %v, want ErrNoStore", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("MustExist created %v", ents)
	}
	s, err := dsn.Open(ctx, d, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = dsn.Open(ctx, d, must)
	if err != nil {
		t.Fatalf("MustExist on the store just created: %v", err)
	}
	var sync int
	if err := s.(*sqlite.Store).SQLDB().QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil || sync != 2 {
		t.Fatalf("synchronous = %d, %v; want 2 (FULL): the DSN's durability applies with MustExist too", sync, err)
	}
	s.Close()
}

func TestOpenSQLiteNotADatabase(t *testing.T) {
	p := filepath.Join(t.TempDir(), "junk.db")
	junk := []byte(strings.Repeat("this is not a database file ", 200))
	if err := os.WriteFile(p, junk, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := dsn.Open(t.Context(), "sqlite:"+p, nil)
	if err == nil {
		t.Fatal("Open of a non-database file succeeded")
	}
	if got, _ := os.ReadFile(p); string(got) != string(junk) {
		t.Fatal("Open modified a file that is not a database")
	}
}

func TestOpenUnreachablePostgres(t *testing.T) {
	// A port that was free a moment ago: nothing listens there.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err = dsn.Open(ctx, "postgres://gh:topsecret@"+addr+"/gh?sslmode=disable&connect_timeout=2", nil)
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Open of a closed port = %v, want ErrUnavailable", err)
	}
	if strings.Contains(err.Error(), "topsecret") {
		t.Fatalf("error repeats the password: %v", err)
	}
	if time.Since(start) > 8*time.Second {
		t.Fatalf("Open took %v to fail", time.Since(start))
	}
}

func TestOpenUnparseablePostgres(t *testing.T) {
	_, err := dsn.Open(t.Context(), "postgres://gh:topsecret@db.example/gh?sslmode=sideways", nil)
	if !errors.Is(err, store.ErrInvalidDSN) {
		t.Fatalf("Open = %v, want ErrInvalidDSN", err)
	}
	if strings.Contains(err.Error(), "topsecret") {
		t.Fatalf("error repeats the password: %v", err)
	}
}

func TestOpenKinds(t *testing.T) {
	ctx := t.Context()
	m, err := dsn.Open(ctx, "memory:", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, ok := m.(*memory.Store); !ok {
		t.Fatalf("memory: opened %T", m)
	}

	p := filepath.Join(t.TempDir(), "g.db")
	s, err := dsn.Open(ctx, "sqlite:"+p+"?durability=power", nil)
	if err != nil {
		t.Fatal(err)
	}
	ss, ok := s.(*sqlite.Store)
	if !ok {
		t.Fatalf("sqlite: opened %T", s)
	}
	var sync int
	if err := ss.SQLDB().QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil || sync != 2 {
		t.Fatalf("synchronous = %d, %v; want 2 (FULL) for durability=power", sync, err)
	}
	if err := s.PutServer(ctx, store.Server{ID: "a", Name: "a", Type: "stdio"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// Reopening the file finds the row: it is a file, not memory.
	s2, err := dsn.Open(ctx, "sqlite:"+p, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if _, err := s2.GetServer(ctx, "a"); err != nil {
		t.Fatalf("row lost across reopen: %v", err)
	}
	if err := s2.(*sqlite.Store).SQLDB().QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil || sync != 1 {
		t.Fatalf("synchronous = %d, %v; want 1 (NORMAL) by default", sync, err)
	}

	pg := os.Getenv("GATEHOUSE_TEST_POSTGRES")
	if pg == "" {
		t.Log("GATEHOUSE_TEST_POSTGRES is unset; skipping the PostgreSQL part")
		return
	}
	// The shared public schema is not ours to migrate; open a throwaway
	// schema through search_path in the URL.
	schema := "gh_dsn_test_" + strings.ReplaceAll(time.Now().Format("150405.000000"), ".", "")
	admin, err := pgx.Connect(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	defer admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
	sep := "?"
	if strings.Contains(pg, "?") {
		sep = "&"
	}
	ps, err := dsn.Open(ctx, pg+sep+"search_path="+schema+"&durability=power", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	var v string
	if err := ps.(*postgres.Store).DB().QueryRow(ctx, "SHOW synchronous_commit").Scan(&v); err != nil || v != "on" {
		t.Fatalf("synchronous_commit = %q, %v", v, err)
	}
	var n int
	if err := ps.(*postgres.Store).DB().QueryRow(ctx, "SELECT COUNT(*) FROM "+schema+".schema_migrations").Scan(&n); err != nil || n == 0 {
		t.Fatalf("migrations in %s: %d, %v", schema, n, err)
	}
}
