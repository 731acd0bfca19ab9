package sqlstore

import (
	"context"
	"testing"
)

// prepRecorder is a DB that records what New prepares (and inserts
// without RETURNING, as SQLite's adapter); nothing else is called.
type prepRecorder struct {
	DB
	Inserter
	prepared map[string]bool
}

func (p *prepRecorder) Prepare(_ context.Context, query string) { p.prepared[query] = true }

// TestAuditChunksPrepared: a batch of any size is split into INSERTs whose
// texts New prepared (SQLite runs a statement not prepared before by
// compiling it, on every run inside a transaction: a batch of 26 entries
// was two of its three statements compiled each time), of at most 64 rows,
// that cover the batch exactly.
func TestAuditChunksPrepared(t *testing.T) {
	for _, inserter := range []bool{true, false} {
		rec := &prepRecorder{prepared: map[string]bool{}}
		var db DB = rec
		if !inserter {
			db = struct {
				DB
				Preparer
			}{rec, rec}
		}
		New(db, Options{})
		for n := 1; n <= 300; n++ {
			left, stmts := n, 0
			for left > 0 {
				c := auditChunk(left)
				text := auditInsert(c)
				if inserter {
					text = auditInsertExec(c)
				}
				if c < 1 || c > 64 || c > left || !rec.prepared[text] {
					t.Fatalf("inserter %v, a batch of %d: a chunk of %d rows (prepared: %v)", inserter, n, c, rec.prepared[text])
				}
				left -= c
				stmts++
			}
			if n <= 64 && stmts > 7 {
				t.Errorf("a batch of %d takes %d statements", n, stmts)
			}
		}
	}
}
