package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/gatehouse-dev/gatehouse/store"
)

// firstMissing returns the highest folder of dir that does not exist
// (dir itself when its parent exists); dir is missing.
func firstMissing(dir string) string {
	for {
		parent := filepath.Dir(dir)
		if parent == dir {
			return dir
		}
		if _, err := os.Stat(parent); !errors.Is(err, fs.ErrNotExist) {
			return dir
		}
		dir = parent
	}
}

// probe checks that the file at abs (an absolute path) holds a Gatehouse
// store, a SQLite database with the schema_migrations table, creating
// nothing: no file, folder, -wal or -shm file. A SQLite connection opened
// read-only on a database in WAL mode creates the -wal and -shm files when
// they are missing and leaves them behind, so probe reads the file as
// immutable (no locks, nothing written beside it) when no WAL is beside it
// or the WAL is empty: then the file holds every commit. When a WAL with
// frames is there (a store in use, or one whose process died), its -shm is
// there too and a read-only connection reads both, creating nothing; a WAL
// without its -shm cannot be read without creating one and is refused
// with store.ErrUnavailable (a normal open, `gatehouse store init` or the
// gateway, recovers it).
func probe(ctx context.Context, abs string, busy time.Duration) error {
	where := "sqlite:" + abs
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if dir := filepath.Dir(abs); !exists(dir) {
			return noStore(where, "the folder %s does not exist", firstMissing(dir))
		}
		return noStore(where, "the file does not exist")
	case err != nil:
		return fmt.Errorf("%w: %s: %w", store.ErrUnavailable, where, err)
	case !fi.Mode().IsRegular():
		return noStore(where, "not a regular file")
	case fi.Size() == 0:
		return noStore(where, "the file is empty")
	}
	params := "mode=ro&immutable=1"
	if wal, err := os.Stat(abs + "-wal"); err == nil && wal.Size() > 0 {
		if !exists(abs + "-shm") {
			return fmt.Errorf("%w: %s: its -wal file has no -shm file beside it, and reading the WAL would create one; "+
				"a normal open (gatehouse serve, gatehouse store init) recovers it", store.ErrUnavailable, where)
		}
		params = "mode=ro"
	}
	db, err := sql.Open("sqlite", fileURI(abs)+"?"+params+"&_pragma=busy_timeout("+strconv.FormatInt(busy.Milliseconds(), 10)+")")
	if err != nil {
		return fmt.Errorf("%w: %s: %w", store.ErrUnavailable, where, err)
	}
	defer db.Close()
	var n int
	err = db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`).Scan(&n)
	var se *sqlite.Error
	switch {
	case errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_NOTADB:
		return noStore(where, "not a SQLite database")
	case err != nil:
		return fmt.Errorf("%w: %s: %w", store.ErrUnavailable, where, err)
	case n == 0:
		return noStore(where, "a SQLite database without Gatehouse's schema_migrations table")
	}
	return nil
}

func noStore(where, format string, args ...any) error {
	return fmt.Errorf("%w at %s (%s)", store.ErrNoStore, where, fmt.Sprintf(format, args...))
}

// exists reports whether path exists; an error other than "does not
// exist" (a folder that may not be searched) counts as existing, so that
// the error is reported where it happens.
func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, fs.ErrNotExist)
}

// fileURI returns the SQLite URI ("file:/abs/path") of an absolute path,
// with the characters a URI path gives a meaning to escaped ('?' never
// reaches here: Open refuses it).
func fileURI(abs string) string {
	p := filepath.ToSlash(abs)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows volume: file:/C:/...
	}
	return "file:" + strings.NewReplacer("%", "%25", "#", "%23").Replace(p)
}
