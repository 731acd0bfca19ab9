//go:build unix

package sqlite_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/store/sqlite"
)

var farFuture = time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC)

// withUmask runs the test under umask u (process-wide: these tests are not
// parallel).
func withUmask(t *testing.T, u int) {
	t.Helper()
	old := syscall.Umask(u)
	t.Cleanup(func() { syscall.Umask(old) })
}

func mode(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// TestNewStoreIsPrivate: a store Open creates is readable by its owner
// only — the database, its -wal and -shm files 0600, the directory it
// made 0700 — under a permissive umask and under one that would make the
// directory unusable.
func TestNewStoreIsPrivate(t *testing.T) {
	for _, umask := range []int{0o022, 0o000, 0o277} {
		t.Run(fs.FileMode(umask).String(), func(t *testing.T) {
			withUmask(t, umask)
			root := t.TempDir()
			path := filepath.Join(root, "state", "gatehouse.db")
			st, err := sqlite.Open(t.Context(), path, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			// A write, so the WAL holds a frame (and exists under every driver version).
			if _, err := st.IncrBy(t.Context(), "k", 1, farFuture); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{path, path + "-wal", path + "-shm"} {
				if m := mode(t, f); m != 0o600 {
					t.Errorf("%s: mode %v, want -rw-------", filepath.Base(f), m)
				}
			}
			if d := filepath.Join(root, "state"); mode(t, d) != 0o700 {
				t.Errorf("%s: mode %v, want drwx------", d, mode(t, d))
			}
		})
	}
}

// TestNewStoreInExistingDirIsPrivate: the common case — the folder exists
// (a volume, /var/lib/gatehouse), umask 022 — gives 0600 files, not 0644.
func TestNewStoreInExistingDirIsPrivate(t *testing.T) {
	withUmask(t, 0o022)
	path := filepath.Join(t.TempDir(), "gatehouse.db")
	st, err := sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.IncrBy(t.Context(), "k", 1, farFuture); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		if m := mode(t, f); m != 0o600 {
			t.Errorf("%s: mode %v, want -rw-------", filepath.Base(f), m)
		}
	}
}

// TestExistingStoreKeepsItsMode: Open leaves the mode an operator gave an
// existing database (and its directory) alone.
func TestExistingStoreKeepsItsMode(t *testing.T) {
	withUmask(t, 0o022)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "gatehouse.db")
	st, err := sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	st, err = sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if m := mode(t, path); m != 0o640 {
		t.Errorf("database: mode %v, want the operator's -rw-r-----", m)
	}
	if m := mode(t, dir); m != 0o750 {
		t.Errorf("directory: mode %v, want the operator's drwxr-x---", m)
	}
}
