//go:build !(linux && (amd64 || arm64))

package sqlite

// installRawSyscalls leaves SQLite's system calls to libc off linux/amd64
// and linux/arm64 (rawsys_linux.go).
func installRawSyscalls() bool { return false }
