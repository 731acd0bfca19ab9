//go:build linux && (amd64 || arm64)

package sqlite

import (
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// SQLite's reads, writes and locks as raw system calls.
//
// The transpiled SQLite makes its system calls through modernc.org/libc,
// which enters each through package syscall: the runtime marks the
// goroutine as in a system call that may block (entersyscall) and wakes
// its monitor thread (sysmon) when it sleeps. The monitor then ticks every
// 20 µs for about a millisecond, taking back the processor of a call that
// lasts longer than a tick. A keyed call writes a journal claim and an
// audited completion, some 14 pwrites and 8 fcntl locks on the -wal and
// -shm files, and between calls the gateway goes idle: each call woke the
// monitor again, about 60 µs of the process's CPU a keyed call on this
// machine (docs/BENCHMARKS.md, issue 36 item 5).
//
// SQLite's unix VFS keeps the system calls it makes in a table a program
// may change (sqlite3_vfs.xSetSystemCall, for every connection of the
// process). installRawSyscalls puts behind pread, pwrite and fcntl
// functions that make the same system call as a raw one
// (syscall.RawSyscall6: no entersyscall, no monitor), with the same
// arguments, results and errno:
//
//   - pread and pwrite of the database, -wal and -shm files: they reach
//     the page cache and return (SQLite never opens its files with
//     O_DIRECT or O_SYNC: its durability is its fsyncs, which stay as they
//     are). A write the kernel throttles holds the goroutine's processor
//     for that wait, as a long computation would; a call moves at most
//     rawLimit bytes, larger ones (never made by SQLite with its default
//     page sizes) go through libc as before.
//   - fcntl with F_SETLK, F_GETLK and their open-file-description
//     twins, which never wait for a lock (a held lock is an EAGAIN or
//     EACCES at once: SQLite's busy handler waits, by sleeping, outside),
//     and F_GETFD, F_SETFD and F_GETFL. Every other command (F_SETLKW,
//     which waits; F_SETFL, to which libc adds O_LARGEFILE; F_GETOWN...)
//     goes through libc as before.
//
// fsync, open, close, ftruncate, fstat, mmap and the rest are libc's as
// before. The table holds C function pointers; the transpiled SQLite calls
// one as a Go func value of the C function's signature, so a replacement
// is a func value of exactly that signature (those of the linux/amd64 and
// linux/arm64 builds of modernc.org/sqlite; elsewhere nothing is
// replaced). Replacements are installed once in the process, before its
// first connection opens, and never removed: SQLite may call them from
// any connection until the process ends, so they live in a package-level
// variable, the one piece of process state this package keeps, as
// SQLite's VFS is the process's.
var rawSys rawSyscalls

// rawSyscalls is the process's replacement of SQLite's pread, pwrite and
// fcntl.
type rawSyscalls struct {
	once sync.Once
	ok   bool // installed

	orig [numRawSys]uintptr // libc's functions, for the calls not made raw

	// The replacements' func values: what the C pointers point to.
	pread  func(*libc.TLS, int32, uintptr, uint64, int64) int64
	pwrite func(*libc.TLS, int32, uintptr, uint64, int64) int64
	fcntl  func(*libc.TLS, int32, int32, uintptr) int32

	// Counted for tests: the calls made raw, and those passed to libc.
	raw, passed atomic.Int64
}

// The system calls replaced, by their names in the unix VFS's table.
const (
	rawPread = iota
	rawPwrite
	rawFcntl
	numRawSys
)

var rawSysNames = [numRawSys]string{"pread", "pwrite", "fcntl"}

// rawLimit is the most bytes one raw pread or pwrite moves (SQLite's
// largest page is 64 KiB).
const rawLimit = 256 << 10

// The fcntl commands made raw (F_OFD_*: linux's values, the same on amd64
// and arm64).
const (
	fOFDGetLK = 36
	fOFDSetLK = 37
)

// installRawSyscalls puts the raw pread, pwrite and fcntl behind the
// default VFS, once in the process, and reports whether they are in place
// (false when the VFS does not let its system calls be replaced: SQLite
// then calls libc's as it does).
func installRawSyscalls() bool {
	rawSys.once.Do(func() {
		tls := libc.NewTLS()
		defer tls.Close()
		vfs := sqlite3.Xsqlite3_vfs_find(tls, 0)
		if vfs == 0 {
			return
		}
		v := (*sqlite3.Tsqlite3_vfs)(cPtr(vfs))
		if v.FiVersion < 3 || v.FxSetSystemCall == 0 || v.FxGetSystemCall == 0 {
			return
		}
		get := *(*func(*libc.TLS, uintptr, uintptr) uintptr)(unsafe.Pointer(&v.FxGetSystemCall))
		set := *(*func(*libc.TLS, uintptr, uintptr, uintptr) int32)(unsafe.Pointer(&v.FxSetSystemCall))
		var names [numRawSys]uintptr
		for i, n := range rawSysNames {
			p, err := libc.CString(n) // kept: SQLite compares the names it is given
			if err != nil {
				return
			}
			names[i] = p
			if rawSys.orig[i] = get(tls, vfs, p); rawSys.orig[i] == 0 {
				return
			}
		}
		h := &rawSys
		h.pread = h.positional(rawPread, syscall.SYS_PREAD64)
		h.pwrite = h.positional(rawPwrite, syscall.SYS_PWRITE64)
		h.fcntl = func(tls *libc.TLS, fd, cmd int32, va uintptr) int32 {
			switch cmd {
			case syscall.F_SETLK, syscall.F_GETLK, fOFDSetLK, fOFDGetLK, syscall.F_GETFD, syscall.F_SETFD, syscall.F_GETFL:
				// The one argument, as libc reads it: the first
				// variadic word (a struct flock's address for the locks).
				var arg uintptr
				if va != 0 {
					arg = *(*uintptr)(cPtr(va))
				}
				h.raw.Add(1)
				r, _, e := syscall.RawSyscall(syscall.SYS_FCNTL, uintptr(fd), uintptr(cmd), arg)
				return int32(result(tls, int64(r), e))
			}
			h.passed.Add(1)
			return (*(*func(*libc.TLS, int32, int32, uintptr) int32)(unsafe.Pointer(&h.orig[rawFcntl])))(tls, fd, cmd, va)
		}
		hooks := [numRawSys]uintptr{
			rawPread:  funcPtr(&h.pread),
			rawPwrite: funcPtr(&h.pwrite),
			rawFcntl:  funcPtr(&h.fcntl),
		}
		for i := range hooks {
			if rc := set(tls, vfs, names[i], hooks[i]); rc != 0 {
				// Those set stay set: each is libc's call made raw, so a
				// table half replaced behaves as one not replaced.
				return
			}
		}
		h.ok = true
	})
	return rawSys.ok
}

// positional is the replacement of pread or pwrite (the table's entry i,
// the system call sysno): raw up to rawLimit bytes at an offset, libc's
// otherwise.
func (h *rawSyscalls) positional(i int, sysno uintptr) func(*libc.TLS, int32, uintptr, uint64, int64) int64 {
	return func(tls *libc.TLS, fd int32, buf uintptr, n uint64, off int64) int64 {
		if n > rawLimit || off < 0 {
			h.passed.Add(1)
			return (*(*func(*libc.TLS, int32, uintptr, uint64, int64) int64)(unsafe.Pointer(&h.orig[i])))(tls, fd, buf, n, off)
		}
		h.raw.Add(1)
		r, _, e := syscall.RawSyscall6(sysno, uintptr(fd), buf, uintptr(n), uintptr(off), 0, 0)
		return result(tls, int64(r), e)
	}
}

// result is a system call's result as libc returns it: r, or -1 with
// tls's errno set to e.
func result(tls *libc.TLS, r int64, e syscall.Errno) int64 {
	if e != 0 {
		*(*int32)(cPtr(libc.X__errno_location(tls))) = int32(e)
		return -1
	}
	return r
}

// cPtr is the pointer a C address holds (memory libc allocates, off the
// Go heap).
func cPtr(u uintptr) unsafe.Pointer { return unsafe.Add(nil, u) }

// funcPtr is the C function pointer of the Go func value *f: the value
// itself (a func value is a pointer), which the transpiled SQLite calls
// as it calls its own.
func funcPtr[F any](f *F) uintptr { return *(*uintptr)(unsafe.Pointer(f)) }
