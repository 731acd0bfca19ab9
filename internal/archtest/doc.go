// Package archtest holds the test that keeps docs/ARCHITECTURE.md true: the
// package table there must list every package of the module, with the
// module packages and the other modules each one imports, and every import
// must stay within its package's layer or below.
//
//	go test ./internal/archtest
package archtest
