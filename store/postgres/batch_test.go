package postgres

import (
	"errors"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/audit"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/pgtest"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/sqlbatch"
)

// TestBatchOneImplicitTransaction: a batch sent in one round trip (its
// chains' heads known) runs as the pipeline's implicit transaction, with
// no BEGIN or COMMIT: a statement that fails in it (an audited completion
// of a record that is not started) leaves nothing of the batch written,
// neither the claim before it nor the audit entry after it, and the
// batch's error says nothing was committed (sqlbatch.ErrStatement); the
// same batch with a record to complete commits every statement.
func TestBatchOneImplicitTransaction(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, pgtest.Schema(t, "gh_batch_test", "the pipelined batch's transaction"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	d := poolDB{p: s.pool}
	now := time.Now()
	rec := func(call string) store.Record {
		return store.Record{RecordKey: store.RecordKey{Scope: "s", RunID: "r", ToolCallID: call}, Fingerprint: "f", State: store.StateStarted,
			Owner: "o", Executor: "e", LeaseUntil: now.Add(time.Minute), CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(time.Hour)}
	}
	entry := store.AuditEntry{Chain: "gw/batch", At: now, Kind: audit.KindCall, Subject: "o", Tool: "t", ArgsDigest: audit.ArgsDigest(nil), Outcome: "ok", Instance: "i"}
	batch := func(completed string) []*sqlbatch.Op {
		done := rec(completed)
		done.State, done.Outcome = store.StateSucceeded, []byte(`{}`)
		return []*sqlbatch.Op{
			{Kind: sqlbatch.Claim, Rec: rec("new")},
			{Kind: sqlbatch.Complete, Rec: done, Audit: []store.AuditEntry{entry}, Link: audit.Link},
		}
	}
	empty := func(string) (store.AuditHead, bool) { return store.AuditHead{Chain: "gw/batch"}, true }

	_, err = d.RunBatch(ctx, batch("missing"), empty)
	if !errors.Is(err, sqlbatch.ErrStatement) {
		t.Fatalf("a batch whose completion fails: %v, want sqlbatch.ErrStatement", err)
	}
	if _, err := s.GetRecord(ctx, rec("new").RecordKey); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the claim of the failed batch: %v, want it not committed", err)
	}
	if es, err := s.ListAudit(ctx, store.AuditFilter{}); err != nil || len(es) != 0 {
		t.Fatalf("the audit entry of the failed batch: %+v, %v", es, err)
	}

	if ok, _, err := s.Claim(ctx, rec("held")); err != nil || !ok {
		t.Fatal(ok, err)
	}
	ops := batch("held")
	heads, err := d.RunBatch(ctx, ops, empty)
	if err != nil {
		t.Fatal(err)
	}
	if !ops[0].Claimed || ops[1].Err != nil || len(ops[1].Linked) != 1 || ops[1].Linked[0].ID == 0 || len(heads) != 1 || heads[0].Last != 1 {
		t.Fatalf("the batch: claimed %v, completion %v, linked %+v, heads %+v", ops[0].Claimed, ops[1].Err, ops[1].Linked, heads)
	}
	got, err := s.GetRecord(ctx, rec("held").RecordKey)
	if err != nil || got.State != store.StateSucceeded {
		t.Fatalf("the completed record: %+v, %v", got, err)
	}
	if es, err := s.ListAudit(ctx, store.AuditFilter{}); err != nil || len(es) != 1 || es[0].ID != ops[1].Linked[0].ID {
		t.Fatalf("the audit entry: %+v, %v", es, err)
	}
}
