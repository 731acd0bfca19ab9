package e2e

import "testing"

// TestSIGKILLUnderLoadKeepsAuditWithJournalOnPostgres is
// TestSIGKILLUnderLoadKeepsAuditWithJournal on PostgreSQL, where a batch of
// the commit queue (claims, audited completions and their entries) is one
// pipelined transaction: every call answered has its entry, every
// completion its entry and every entry its completion, across three
// SIGKILLs under load, and the chain verifies.
func TestSIGKILLUnderLoadKeepsAuditWithJournalOnPostgres(t *testing.T) {
	t.Parallel()
	sigkillUnderLoad(t, t.TempDir(), pgStore(t))
}
