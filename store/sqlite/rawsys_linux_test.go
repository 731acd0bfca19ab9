//go:build linux && (amd64 || arm64)

package sqlite

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"

	"modernc.org/libc"

	"github.com/gatehouse-dev/gatehouse/internal/audit"
	"github.com/gatehouse-dev/gatehouse/store"
)

// errno is tls's errno, as libc's callers read it.
func errno(tls *libc.TLS) syscall.Errno {
	return syscall.Errno(*(*int32)(cPtr(libc.X__errno_location(tls))))
}

// TestRawSyscallsCarrySQLite: a store's writes and reads go through the
// raw calls, and what they wrote reads back after a reopen.
func TestRawSyscallsCarrySQLite(t *testing.T) {
	if !installRawSyscalls() {
		t.Fatal("the unix VFS refused the raw system calls")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "raw.db")
	raw0 := rawSys.raw.Load()
	s, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if _, err := s.AppendAuditLinked(ctx, []store.AuditEntry{{Chain: "c", Kind: "call", Subject: "s", Server: "x", Tool: "t", Outcome: "ok", Instance: "i", ArgsDigest: string(rune('a' + i%26))}}, audit.Link); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := rawSys.raw.Load() - raw0; n < 100 {
		t.Fatalf("50 commits made %d raw system calls, want pwrites and locks for each", n)
	}
	s, err = Open(ctx, path, &store.Options{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.ListAudit(ctx, store.AuditFilter{Chain: "c"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 50 {
		t.Fatalf("read back %d entries, want 50", len(got))
	}
}

// TestRawSyscallsAsLibc: each replacement answers as libc's call does,
// with the bytes moved, the result, and errno on a failure; a command it
// does not make raw goes to libc.
func TestRawSyscallsAsLibc(t *testing.T) {
	if !installRawSyscalls() {
		t.Fatal("the unix VFS refused the raw system calls")
	}
	tls := libc.NewTLS()
	defer tls.Close()
	path := filepath.Join(t.TempDir(), "f")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd := int32(f.Fd())

	// pwrite and pread at an offset, from and into C memory.
	const n = 4096
	buf := libc.Xmalloc(tls, n)
	defer libc.Xfree(tls, buf)
	page := unsafe.Slice((*byte)(cPtr(buf)), n)
	for i := range page {
		page[i] = byte(i * 7)
	}
	want := bytes.Clone(page)
	if r := rawSys.pwrite(tls, fd, buf, n, 8192); r != n {
		t.Fatalf("pwrite = %d (errno %v), want %d", r, errno(tls), n)
	}
	onDisk, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(onDisk) != 8192+n || !bytes.Equal(onDisk[8192:], want) {
		t.Fatalf("the file holds %d bytes, the page not at 8192", len(onDisk))
	}
	clear(page)
	if r := rawSys.pread(tls, fd, buf, n, 8192); r != n || !bytes.Equal(page, want) {
		t.Fatalf("pread = %d, bytes equal %v", r, bytes.Equal(page, want))
	}
	if r := rawSys.pread(tls, fd, buf, n, 1<<20); r != 0 {
		t.Fatalf("pread past the end = %d, want 0", r)
	}

	// Failures: -1 and errno, as libc.
	if r := rawSys.pwrite(tls, -1, buf, n, 0); r != -1 || errno(tls) != syscall.EBADF {
		t.Fatalf("pwrite to fd -1 = %d, errno %v; want -1, EBADF", r, errno(tls))
	}
	if r := rawSys.pread(tls, fd, buf, n, -1); r != -1 || errno(tls) != syscall.EINVAL {
		t.Fatalf("pread at -1 = %d, errno %v; want -1, EINVAL (libc's answer)", r, errno(tls))
	}

	// Locks: an open file description's write lock, then another's
	// refused at once (EAGAIN), then F_GETLK names the holder's type.
	g, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	lk := libc.Xmalloc(tls, flockSize)
	defer libc.Xfree(tls, lk)
	va := libc.Xmalloc(tls, 8)
	defer libc.Xfree(tls, va)
	*(*uintptr)(cPtr(va)) = lk
	setLock := func(typ int16) {
		*(*syscall.Flock_t)(cPtr(lk)) = syscall.Flock_t{Type: typ, Whence: 0, Start: 120, Len: 1}
	}
	setLock(syscall.F_WRLCK)
	if r := rawSys.fcntl(tls, fd, fOFDSetLK, va); r != 0 {
		t.Fatalf("OFD lock = %d, errno %v", r, errno(tls))
	}
	setLock(syscall.F_WRLCK)
	if r := rawSys.fcntl(tls, int32(g.Fd()), fOFDSetLK, va); r != -1 || (errno(tls) != syscall.EAGAIN && errno(tls) != syscall.EACCES) {
		t.Fatalf("a second OFD write lock = %d, errno %v; want -1, EAGAIN", r, errno(tls))
	}
	setLock(syscall.F_WRLCK)
	if r := rawSys.fcntl(tls, int32(g.Fd()), fOFDGetLK, va); r != 0 || (*(*syscall.Flock_t)(cPtr(lk))).Type != syscall.F_WRLCK {
		t.Fatalf("F_OFD_GETLK = %d, type %d; want the holder's write lock", r, (*(*syscall.Flock_t)(cPtr(lk))).Type)
	}
	setLock(syscall.F_UNLCK)
	if r := rawSys.fcntl(tls, fd, fOFDSetLK, va); r != 0 {
		t.Fatalf("unlock = %d, errno %v", r, errno(tls))
	}
	setLock(syscall.F_WRLCK)
	if r := rawSys.fcntl(tls, int32(g.Fd()), fOFDSetLK, va); r != 0 {
		t.Fatalf("the lock given back, another's = %d, errno %v", r, errno(tls))
	}

	// F_GETFD raw; F_SETFL to libc (which adds O_LARGEFILE).
	*(*uintptr)(cPtr(va)) = 0
	raw0, passed0 := rawSys.raw.Load(), rawSys.passed.Load()
	if r := rawSys.fcntl(tls, fd, syscall.F_GETFD, va); r != syscall.FD_CLOEXEC {
		t.Fatalf("F_GETFD = %d, want FD_CLOEXEC (os.OpenFile sets it)", r)
	}
	*(*uintptr)(cPtr(va)) = uintptr(syscall.O_NONBLOCK)
	if r := rawSys.fcntl(tls, fd, syscall.F_SETFL, va); r != 0 {
		t.Fatalf("F_SETFL = %d, errno %v", r, errno(tls))
	}
	if r := rawSys.fcntl(tls, fd, syscall.F_GETFL, va); r&syscall.O_NONBLOCK == 0 {
		t.Fatalf("F_GETFL = %#x, want O_NONBLOCK set through libc", r)
	}
	if d := rawSys.raw.Load() - raw0; d != 2 {
		t.Fatalf("%d calls made raw, want 2 (F_GETFD, F_GETFL)", d)
	}
	if d := rawSys.passed.Load() - passed0; d != 1 {
		t.Fatalf("%d calls passed to libc, want 1 (F_SETFL)", d)
	}

	// A write over rawLimit goes to libc, and lands as well.
	big := libc.Xmalloc(tls, rawLimit+1)
	defer libc.Xfree(tls, big)
	passed0 = rawSys.passed.Load()
	if r := rawSys.pwrite(tls, fd, big, rawLimit+1, 0); r != rawLimit+1 {
		t.Fatalf("a large pwrite = %d, errno %v", r, errno(tls))
	}
	if rawSys.passed.Load() != passed0+1 {
		t.Fatal("a pwrite over rawLimit was made raw")
	}
}

// flockSize is the size of a C struct flock.
const flockSize = uint64(unsafe.Sizeof(syscall.Flock_t{}))
