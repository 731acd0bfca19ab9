package sqlite

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/audit"
	"github.com/gatehouse-dev/gatehouse/store"
)

// TestAuditInsertsRaw: the audit trail's batches are inserted through the
// driver's own statement (one, prepared once: a batch is one block), and
// what they write reads back as written, IDs included, and verifies; a
// batch whose seq is taken is a conflict, as through database/sql, and
// writes nothing.
func TestAuditInsertsRaw(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "raw.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	at := time.UnixMilli(1_780_000_000_000)
	mk := func(n int) []store.AuditEntry {
		es := make([]store.AuditEntry, n)
		for i := range es {
			es[i] = store.AuditEntry{Chain: "gw/raw", At: at.Add(time.Duration(i) * time.Millisecond), Kind: audit.KindCall,
				Subject: []string{"alice", "bob"}[i%2], Server: "echo", Tool: "echo", ArgsDigest: "sha256:00", Outcome: "ok",
				Duration: time.Duration(i) * time.Microsecond, Instance: "i1"}
		}
		es[n-1].Detail = []byte(`{"replayed":true}`)
		return es
	}
	var written []store.AuditEntry
	for _, n := range []int{1, 26, 64, 70} {
		out, err := s.AppendAuditLinked(ctx, mk(n), audit.Link)
		if err != nil {
			t.Fatalf("batch of %d: %v", n, err)
		}
		written = append(written, out...)
	}
	raw := s.DB().(*sqlDB).raw
	if got := len(raw.stmts); got != 1 {
		t.Errorf("%d raw statements prepared, want 1 (the block's insert)", got)
	}
	var blocks int
	if err := s.SQLDB().QueryRow(`SELECT COUNT(*) FROM audit_blocks`).Scan(&blocks); err != nil || blocks != 4 {
		t.Errorf("%d blocks (%v), want 4: a batch is one block", blocks, err)
	}
	back, err := s.ReadAuditChain(ctx, "gw/raw", 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != len(written) {
		t.Fatalf("read %d entries, wrote %d", len(back), len(written))
	}
	for i, w := range written {
		b := back[i]
		if b.ID != w.ID || b.Seq != w.Seq || b.Hash != w.Hash || b.PrevHash != w.PrevHash || b.Subject != w.Subject ||
			!b.At.Equal(w.At) || b.Duration != w.Duration || string(b.Detail) != string(w.Detail) || b.Instance != w.Instance {
			t.Fatalf("entry %d reads back as %+v, written %+v", i, b, w)
		}
	}
	res, err := audit.Verify(ctx, s, &audit.VerifyOptions{Chain: "gw/raw"})
	if err != nil || res.Problem != nil {
		t.Fatalf("verify: %v, %+v", err, res)
	}
	// A batch whose first seq is taken: a conflict, nothing written.
	dup := written[len(written)-3:]
	for i := range dup {
		dup[i].ID = 0
	}
	if err := s.AppendAudit(ctx, dup); err == nil {
		t.Fatal("a batch of taken seqs was appended")
	}
	again, err := s.ReadAuditChain(ctx, "gw/raw", 0, 1000)
	if err != nil || len(again) != len(written) {
		t.Fatalf("after the conflict: %d entries (%v), want %d", len(again), err, len(written))
	}
}
