package gateway

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/audit"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/pgtest"
	"github.com/gatehouse-dev/gatehouse/store"
)

// The statements that make the store refuse the audit entry of a keyed
// call to count (the one written with its journal completion: its detail
// names the journal record, toolCallId),
// and undo it. A failure injected in the real store, between the
// completion's UPDATE and the entry's INSERT of one transaction.
var injectAuditFailure = map[string][2]string{
	"sqlite": {
		// SQLite keeps the trail in blocks (a run of entries, their texts
		// as bytes in the block): the block that holds such an entry.
		`CREATE TRIGGER inject_audit_failure BEFORE INSERT ON audit_blocks
WHEN instr(NEW.data, CAST('count' AS BLOB)) > 0 AND instr(NEW.data, CAST('"toolCallId"' AS BLOB)) > 0
BEGIN SELECT RAISE(ABORT, 'injected: the audit insert fails'); END`,
		`DROP TRIGGER inject_audit_failure`,
	},
	"postgres": {
		`CREATE FUNCTION inject_audit_failure() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.tool = 'count' AND NEW.outcome = 'ok' AND position('"toolCallId"' in convert_from(NEW.detail, 'UTF8')) > 0 THEN RAISE EXCEPTION 'injected: the audit insert fails'; END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER inject_audit_failure BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION inject_audit_failure()`,
		`DROP TRIGGER inject_audit_failure ON audit_log`,
	},
}

// TestAuditKeyedCommitsWithJournal: a keyed call's audit entry is committed
// in the same transaction as its journal completion (through the group
// commit), on a real SQLite file and real PostgreSQL, through a real
// gateway in front of a real upstream:
//
//   - as soon as a keyed call has answered, its record is succeeded and its
//     entry is in the store (no flush: it did not wait in the queue), linked
//     in the chain; with 8 callers at once too (batches of completions);
//   - when the store refuses the entry (a trigger: a failure between the
//     completion's UPDATE and the entry's INSERT), the completion is not
//     committed either: the record stays started, a retry of the key is
//     run_busy and never a replay of a "done" call, and the entry is then
//     recorded through the queue marked notRecorded;
//   - the chain verifies.
func TestAuditKeyedCommitsWithJournal(t *testing.T) {
	stores := []struct {
		name string
		open func(t *testing.T) (dsn string, exec func(string))
	}{
		{"sqlite", func(t *testing.T) (string, func(string)) {
			path := filepath.Join(t.TempDir(), "gh.db")
			return "sqlite:" + path, func(stmt string) {
				t.Helper()
				db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(20000)")
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				if _, err := db.Exec(stmt); err != nil {
					t.Fatalf("%s: %v", stmt, err)
				}
			}
		}},
		{"postgres", func(t *testing.T) (string, func(string)) {
			dsn := pgtest.Schema(t, "gw_auditjournal", "the audit entries in the journal's transaction on PostgreSQL")
			return dsn, func(stmt string) {
				t.Helper()
				ctx := context.Background()
				c, err := pgx.Connect(ctx, dsn)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close(ctx)
				if _, err := c.Exec(ctx, stmt); err != nil {
					t.Fatalf("%s: %v", stmt, err)
				}
			}
		}},
	}
	for _, sc := range stores {
		t.Run(sc.name, func(t *testing.T) {
			ctx := context.Background()
			dsn, exec := sc.open(t)
			e := parityGateway(t, newParityUpstream(t), true, dsn, "")
			st := e.g.Store()
			chain := e.g.audit.Chain()
			record := func(key string) store.Record {
				t.Helper()
				runID, callID := unitOfWork("alice", "count", key)
				rec, err := st.GetRecord(ctx, store.RecordKey{Scope: journalScope, RunID: runID, ToolCallID: callID})
				if err != nil {
					t.Fatalf("record of %s: %v", key, err)
				}
				return rec
			}
			entriesOf := func(args map[string]any) []store.AuditEntry {
				t.Helper()
				b, _ := json.Marshal(args)
				d := audit.ArgsDigest(b)
				all, err := st.ListAudit(ctx, store.AuditFilter{Chain: chain})
				if err != nil {
					t.Fatal(err)
				}
				var out []store.AuditEntry
				for _, en := range all {
					if en.ArgsDigest == d {
						out = append(out, en)
					}
				}
				return out
			}

			// Keyed calls, one at a time: the record and the entry are both
			// there when the call answers.
			for i := range 4 {
				args := map[string]any{"n": i}
				key := fmt.Sprintf("k-%d", i)
				if code := refusalCode(e.call(e.session("alice-token"), "alice", "count", args, key)); code != "" {
					t.Fatalf("call %s refused: %s", key, code)
				}
				if rec := record(key); rec.State != store.StateSucceeded {
					t.Fatalf("record of %s is %s, want succeeded", key, rec.State)
				}
				got := entriesOf(args)
				runID, callID := unitOfWork("alice", "count", key)
				detail := `{"key":"` + key + `","runId":"` + runID + `","toolCallId":"` + callID + `"}`
				if len(got) != 1 || got[0].Kind != audit.KindCall || got[0].Outcome != "ok" || got[0].Subject != "alice" ||
					got[0].Server != "up" || got[0].Tool != "count" || string(got[0].Detail) != detail || got[0].Duration <= 0 {
					t.Fatalf("call %s answered; its entries in the store are %+v, want its one call entry (committed with its completion)", key, got)
				}
			}
			// Eight callers at once: completions share transactions; each
			// has its entry, and the chain stays one line.
			alice := e.session("alice-token")
			done := make(chan string, 8)
			for i := range 8 {
				go func() {
					done <- answer(alice.CallTool(ctx, &mcp.CallToolParams{Name: "count", Arguments: map[string]any{"p": i},
						Meta: mcp.Meta{"idempotencyKey": fmt.Sprintf("p-%d", i)}}))
				}()
			}
			for range 8 {
				if code := refusalCode(<-done); code != "" {
					t.Fatalf("a concurrent call was refused: %s", code)
				}
			}
			for i := range 8 {
				if got := entriesOf(map[string]any{"p": i}); len(got) != 1 {
					t.Fatalf("concurrent call p-%d answered with %d entries in the store, want 1", i, len(got))
				}
				if rec := record(fmt.Sprintf("p-%d", i)); rec.State != store.StateSucceeded {
					t.Fatalf("record of p-%d is %s", i, rec.State)
				}
			}

			// The store refuses the entry: the completion is not committed.
			exec(injectAuditFailure[sc.name][0])
			bad := map[string]any{"n": 99}
			e.call(alice, "alice", "count", bad, "k-bad")
			if n := e.up.effectCounts()["count"]; n != 13 {
				t.Fatalf("count ran %d times, want 13", n)
			}
			if rec := record("k-bad"); rec.State != store.StateStarted {
				t.Fatalf("the entry was refused but the record of k-bad is %s: a completion committed without its audit entry", rec.State)
			}
			for _, en := range entriesOf(bad) {
				if string(en.Detail) != `{"notRecorded":true}` {
					t.Fatalf("an entry of the refused call was written: %+v", en)
				}
			}
			if code := refusalCode(e.call(alice, "alice", "count", bad, "k-bad")); code != "run_busy" {
				t.Fatalf("retry of k-bad answers %q, want run_busy (its outcome is not recorded)", code)
			}
			if n := e.up.effectCounts()["count"]; n != 13 {
				t.Fatalf("the retry ran count again (%d)", n)
			}
			if err := e.g.audit.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			got := entriesOf(bad)
			if len(got) != 2 || string(got[0].Detail) != `{"notRecorded":true}` || got[0].Outcome != "ok" ||
				got[1].Kind != audit.KindRefusal || got[1].Outcome != "run_busy" {
				t.Fatalf("entries of k-bad: %+v, want the call marked notRecorded, then the run_busy refusal", got)
			}
			exec(injectAuditFailure[sc.name][1])

			res, err := audit.Verify(ctx, st, nil)
			if err != nil || res.Problem != nil {
				t.Fatalf("verify: %v %v", err, res.Problem)
			}
			if len(res.Chains) != 1 || res.Chains[0].Entries != 4+8+2 {
				t.Fatalf("chains %+v, want one of 14 entries", res.Chains)
			}
		})
	}
}
