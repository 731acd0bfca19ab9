package sqlite_test

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/sqlite"
)

// tree describes every file and folder under root: its relative path, mode,
// size and the SHA-256 of its bytes. Two equal trees are byte for byte
// the same.
func tree(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		b.WriteString(rel + " " + fi.Mode().String())
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			b.WriteString(" " + hex.EncodeToString(sum[:]))
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// foreignDB writes a SQLite database that is not a Gatehouse store: one
// table of its own, in WAL mode when wal is set (closed cleanly, so no
// -wal or -shm file is left beside it).
func foreignDB(t *testing.T, path string, wal bool) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if wal {
		if _, err := db.Exec("PRAGMA journal_mode=WAL"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine')"); err != nil {
		t.Fatal(err)
	}
}

var mustExist = &store.Options{MustExist: true}

// TestMustExistCreatesNothing: Open with MustExist refuses a path that
// holds no Gatehouse store with ErrNoStore, and the folder it looked in
// is byte for byte as it was: no database, folder, -wal or -shm file
// created, a foreign database not touched.
func TestMustExistCreatesNothing(t *testing.T) {
	cases := []struct {
		name   string
		setup  func(t *testing.T, dir string) string // returns the path to open
		reason string
	}{
		{"missing file", func(t *testing.T, dir string) string {
			return filepath.Join(dir, "gatehouse.db")
		}, "(the file does not exist)"},
		{"missing folder", func(t *testing.T, dir string) string {
			return filepath.Join(dir, ".gatehouse", "gatehouse.db")
		}, "(the folder " + filepath.Join("DIR", ".gatehouse") + " does not exist)"},
		{"missing folders", func(t *testing.T, dir string) string {
			return filepath.Join(dir, "a", "b", "gatehouse.db")
		}, "(the folder " + filepath.Join("DIR", "a") + " does not exist)"},
		{"empty file", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "gatehouse.db")
			if err := os.WriteFile(p, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		}, "(the file is empty)"},
		{"not a database", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "gatehouse.db")
			if err := os.WriteFile(p, []byte(strings.Repeat("not a SQLite database\n", 100)), 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		}, "(not a SQLite database)"},
		{"a folder", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "gatehouse.db")
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
			return p
		}, "(not a regular file)"},
		{"foreign database", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "other.db")
			foreignDB(t, p, false)
			return p
		}, "(a SQLite database without Gatehouse's schema_migrations table)"},
		{"foreign database in WAL mode", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "other.db")
			foreignDB(t, p, true)
			return p
		}, "(a SQLite database without Gatehouse's schema_migrations table)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := c.setup(t, dir)
			before := tree(t, dir)
			st, err := sqlite.Open(t.Context(), path, mustExist)
			if err == nil {
				st.Close()
				t.Fatal("opened: want ErrNoStore")
			}
			if !errors.Is(err, store.ErrNoStore) {
				t.Fatalf("err = %v, want ErrNoStore", err)
			}
			want := "store: no Gatehouse store at sqlite:" + path + " " + strings.ReplaceAll(c.reason, "DIR", dir)
			if err.Error() != want {
				t.Errorf("err = %q\nwant  %q", err, want)
			}
			if after := tree(t, dir); after != before {
				t.Errorf("the folder changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

// TestMustExistRelativePath: the error names the absolute path, so an
// operator in the wrong folder sees which one was looked in.
func TestMustExistRelativePath(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	_, err := sqlite.Open(t.Context(), filepath.Join(".gatehouse", "gatehouse.db"), mustExist)
	want := "store: no Gatehouse store at sqlite:" + filepath.Join(dir, ".gatehouse", "gatehouse.db") +
		" (the folder " + filepath.Join(dir, ".gatehouse") + " does not exist)"
	if !errors.Is(err, store.ErrNoStore) || err.Error() != want {
		t.Fatalf("err = %v\nwant  %s", err, want)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("the folder holds %v", ents)
	}
}

// TestMustExistOpensStore: a store that exists opens with MustExist, both
// closed (everything in the database file, no WAL beside it) and while
// another connection writes to it (its commits in the WAL), and its rows
// are there. A path with characters a URI gives a meaning to opens too.
func TestMustExistOpensStore(t *testing.T) {
	for _, name := range []string{"gatehouse.db", "50% #1 & co.db"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), name)
			st, err := sqlite.Open(t.Context(), path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.IncrBy(t.Context(), "closed", 1, farFuture); err != nil {
				t.Fatal(err)
			}
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(path + "-wal"); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("a closed store keeps its WAL (%v): the immutable read is not what this tests", err)
			}
			again, err := sqlite.Open(t.Context(), path, mustExist)
			if err != nil {
				t.Fatalf("MustExist on a closed store: %v", err)
			}
			defer again.Close()
			if n, err := again.IncrBy(t.Context(), "closed", 1, farFuture); err != nil || n != 2 {
				t.Fatalf("IncrBy = %d, %v; want 2", n, err)
			}
			// again is live: its write sits in the WAL, with the -shm beside it.
			if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() == 0 {
				t.Fatalf("no WAL frames beside the live store (%v)", err)
			}
			third, err := sqlite.Open(t.Context(), path, mustExist)
			if err != nil {
				t.Fatalf("MustExist on a live store: %v", err)
			}
			defer third.Close()
			if n, err := third.IncrBy(t.Context(), "closed", 1, farFuture); err != nil || n != 3 {
				t.Fatalf("IncrBy = %d, %v; want 3", n, err)
			}
		})
	}
}

// TestMustExistNewStoreInWAL: a store whose schema is still only in the
// WAL (created by a process that has not checkpointed) is found: the WAL
// is read, not just the database file.
func TestMustExistNewStoreInWAL(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gatehouse.db")
	st, err := sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// Nothing checkpoints the WAL until it grows (checkpoint.go): the
	// database file alone has no schema_migrations table yet.
	if hasTable(t, path) {
		t.Skip("the schema reached the database file already: this case cannot be built here")
	}
	again, err := sqlite.Open(t.Context(), path, mustExist)
	if err != nil {
		t.Fatalf("MustExist on a store whose schema is in the WAL: %v", err)
	}
	again.Close()
}

// hasTable reports whether the database file at path, read alone (its WAL
// ignored), has the schema_migrations table. It reads a copy, so that
// nothing is written beside the store.
func hasTable(t *testing.T, path string) bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(t.TempDir(), "copy.db")
	if err := os.WriteFile(cp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+cp+"?immutable=1")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name = 'schema_migrations'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// TestMustExistWALWithoutShm: a store whose process died leaves its WAL;
// without the -shm beside it, reading the WAL would create one, so
// MustExist refuses (ErrUnavailable, not ErrNoStore: it may well be a
// store) and creates nothing. A normal open recovers it.
func TestMustExistWALWithoutShm(t *testing.T) {
	live := filepath.Join(t.TempDir(), "gatehouse.db")
	st, err := sqlite.Open(t.Context(), live, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.IncrBy(t.Context(), "k", 1, farFuture); err != nil {
		t.Fatal(err)
	}
	// The files as a killed process leaves them, less the -shm.
	dir := t.TempDir()
	path := filepath.Join(dir, "gatehouse.db")
	for _, suffix := range []string{"", "-wal"} {
		data, err := os.ReadFile(live + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path+suffix, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	before := tree(t, dir)
	_, err = sqlite.Open(t.Context(), path, mustExist)
	if !errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrNoStore) || !strings.Contains(err.Error(), "no -shm file") {
		t.Fatalf("err = %v, want ErrUnavailable naming the missing -shm", err)
	}
	if after := tree(t, dir); after != before {
		t.Fatalf("the folder changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	recovered, err := sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer recovered.Close()
	if n, err := recovered.IncrBy(t.Context(), "k", 1, farFuture); err != nil || n != 2 {
		t.Fatalf("IncrBy = %d, %v; want 2 (the WAL's commit recovered)", n, err)
	}
}

// TestCreateMakesOneFolder: creating, Open makes the folder of the file
// when that folder's parent exists, and refuses a deeper missing path,
// naming its first missing folder and creating nothing.
func TestCreateMakesOneFolder(t *testing.T) {
	root := t.TempDir()
	st, err := sqlite.Open(t.Context(), filepath.Join(root, "state", "g.db"), nil)
	if err != nil {
		t.Fatalf("one missing folder: %v", err)
	}
	st.Close()
	if fi, err := os.Stat(filepath.Join(root, "state")); err != nil || !fi.IsDir() {
		t.Fatalf("state/ not created: %v", err)
	}

	root = t.TempDir()
	for _, deep := range []string{filepath.Join(root, "a", "b", "g.db"), filepath.Join(root, "a", "b", "c", "g.db")} {
		_, err = sqlite.Open(t.Context(), deep, nil)
		want := "the folder " + filepath.Join(root, "a") + " does not exist"
		if !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: err = %v, want ErrUnavailable with %q", deep, err, want)
		}
		if ents, _ := os.ReadDir(root); len(ents) != 0 {
			t.Fatalf("%s: created %v", deep, ents)
		}
	}

	// A relative path: its folder is made inside the working directory.
	wd := t.TempDir()
	t.Chdir(wd)
	_, err = sqlite.Open(t.Context(), filepath.Join("typo", "data", "g.db"), nil)
	if err == nil || !strings.Contains(err.Error(), "the folder typo does not exist") {
		t.Fatalf("err = %v, want the folder typo named", err)
	}
	st, err = sqlite.Open(t.Context(), filepath.Join("data", "g.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if _, err := os.Stat(filepath.Join(wd, "data", "g.db")); err != nil {
		t.Fatal(err)
	}
}
