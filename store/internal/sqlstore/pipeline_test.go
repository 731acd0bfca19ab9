package sqlstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse-dev/gatehouse/internal/audit"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/sqlstore"
	"github.com/gatehouse-dev/gatehouse/store/postgres"
)

// sends counts what pgx sends to the server on its own: each statement
// (BEGIN and COMMIT included) and each batch, once its statements are
// prepared on the connection: the round trips.
type sends struct{ n atomic.Int64 }

func (s *sends) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	s.n.Add(1)
	return ctx
}
func (s *sends) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (s *sends) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	s.n.Add(1)
	return ctx
}
func (s *sends) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (s *sends) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// openPG opens a PostgreSQL store with group commit gc on dsn, its
// connections named app (pg_stat_activity's application_name) and traced
// by tr when not nil.
func openPG(t *testing.T, dsn, app string, gc store.GroupCommit, tr *sends) *sqlstore.Store {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	if tr != nil {
		cfg.ConnConfig.Tracer = tr
	}
	st, err := postgres.OpenConfig(t.Context(), cfg, &store.Options{GroupCommit: gc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st.Store
}

func appName(t *testing.T) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "gc_pipeline_" + hex.EncodeToString(b)
}

// entry is a keyed call's audit entry on chain gw/test.
func entry(id string) store.AuditEntry {
	return store.AuditEntry{Chain: "gw/test", At: time.Now(), Kind: "call", Subject: "s", Server: "srv", Tool: id,
		ArgsDigest: "digest", Outcome: "ok", Instance: "test"}
}

// completeAudited completes id as executor with its entry.
func completeAudited(ctx context.Context, st *sqlstore.Store, id, executor string) (store.AuditEntry, error) {
	return st.CompleteAudited(ctx, key(id), executor, store.StateSucceeded, []byte("done "+id), entry(id), audit.Link)
}

// verifyChain checks gw/test with audit.Verify and returns its entries by
// tool (the key they record).
func verifyChain(t *testing.T, st *sqlstore.Store) map[string]store.AuditEntry {
	t.Helper()
	res, err := audit.Verify(t.Context(), st, &audit.VerifyOptions{Chain: "gw/test"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Problem != nil {
		t.Fatalf("the audit chain does not verify: %v", res.Problem)
	}
	es, err := st.ListAudit(t.Context(), store.AuditFilter{Chain: "gw/test"})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]store.AuditEntry{}
	for _, e := range es {
		if _, dup := out[e.Tool]; dup {
			t.Fatalf("two entries for %s", e.Tool)
		}
		out[e.Tool] = e
	}
	return out
}

// TestPipelinedBatchOneRoundTrip: on PostgreSQL a batch of the commit
// queue (claims and audited completions) is one round trip: BEGIN, the
// ops' statements, the entries' INSERT and COMMIT sent together, each op
// answered from its own statement. Statement by statement it took one
// round trip per statement (BEGIN, 4 claims, 2 completions, the INSERT,
// COMMIT: 9).
func TestPipelinedBatchOneRoundTrip(t *testing.T) {
	b := backends()[2]
	tr := &sends{}
	dsn, app := b.where(t), appName(t)
	st := openPG(t, dsn, app, store.GroupCommitOn, tr)
	admin, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	ctx := t.Context()
	for _, id := range []string{"warm", "done-1", "done-2"} {
		if claimed, _, err := st.Claim(ctx, rec(id, "owner-of-"+id)); err != nil || !claimed {
			t.Fatalf("claim %s: %v %v", id, claimed, err)
		}
	}
	// The chain's head is then known to the commit queue.
	if _, err := completeAudited(ctx, st, "warm", "owner-of-warm"); err != nil {
		t.Fatal(err)
	}
	release, first := block(t, b, st, "first", true)
	out := make(chan outcome, 6)
	for _, id := range []string{"c1", "c2", "c3", "c4"} {
		go func() {
			claimed, stored, err := st.Claim(context.Background(), rec(id, "owner-of-"+id))
			out <- outcome{id, claimed, stored, err}
		}()
	}
	linked := make(chan store.AuditEntry, 2)
	for _, id := range []string{"done-1", "done-2"} {
		go func() {
			e, err := completeAudited(context.Background(), st, id, "owner-of-"+id)
			linked <- e
			out <- outcome{id: "complete " + id, err: err}
		}()
	}
	waitFor(t, "6 ops queued", func() bool { _, q := st.GroupQueue(); return q == 6 })
	backendOf(t, admin, app, "INSERT INTO journal", "Lock") // the leader's claim is sent
	before := tr.n.Load()
	release() // the blocker's COMMIT: one send
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	got := collect(t, ch(out), 6)
	if n := tr.n.Load() - before; n != 2 {
		t.Errorf("%d sends for the blocker's COMMIT and a batch of 6 ops, want 2 (the batch in one round trip)", n)
	}
	for _, id := range []string{"c1", "c2", "c3", "c4"} {
		if o := got[id]; o.err != nil || !o.claimed || o.stored.Executor != "owner-of-"+id {
			t.Errorf("%s: %+v", id, o)
		}
	}
	for _, id := range []string{"done-1", "done-2"} {
		if o := got["complete "+id]; o.err != nil {
			t.Errorf("complete %s: %v", id, o.err)
		}
	}
	if batches, ops := st.GroupStats(); batches != 1 || ops != 6 {
		t.Errorf("%d batches of %d ops, want 1 of 6", batches, ops)
	}
	// Read back.
	for _, id := range []string{"c1", "c2", "c3", "c4", "first"} {
		if r, err := st.GetRecord(ctx, key(id)); err != nil || r.State != store.StateStarted {
			t.Errorf("%s: %+v %v", id, r, err)
		}
	}
	entries := verifyChain(t, st)
	close(linked)
	for e := range linked {
		if w, ok := entries[e.Tool]; !ok || w.Seq != e.Seq || w.Hash != e.Hash || w.ID != e.ID || e.ID == 0 {
			t.Errorf("entry %s answered %+v, stored %+v", e.Tool, e, w)
		}
	}
	for _, id := range []string{"done-1", "done-2"} {
		if r, err := st.GetRecord(ctx, key(id)); err != nil || r.State != store.StateSucceeded || string(r.Outcome) != "done "+id {
			t.Errorf("%s: %+v %v", id, r, err)
		}
		if _, ok := entries[id]; !ok {
			t.Errorf("no entry for %s", id)
		}
	}
}

func ch(c chan outcome) <-chan outcome { return c }

// TestPipelinedBatchResults: 8 goroutines race claims of the same keys,
// complete them with audit entries (the gateway's keyed calls), try to
// complete what they lost and what they never claimed, on PostgreSQL with
// group commit on and off (audited completions share transactions either
// way). Every op's answer is what one transaction per op gives: one winner
// per key, the stored record for the others, ErrLeaseLost / ErrNotStarted
// for a loser's completion and ErrNotFound for a key never claimed; a
// refused completion writes no entry, every successful one exactly one,
// and the chain verifies.
func TestPipelinedBatchResults(t *testing.T) {
	const workers, keys = 8, 25
	b := backends()[2]
	for _, gc := range []store.GroupCommit{store.GroupCommitOn, store.GroupCommitOff} {
		t.Run(string(gc), func(t *testing.T) {
			st := openPG(t, b.where(t), appName(t), gc, nil)
			ctx := t.Context()
			var mu sync.Mutex
			winners := map[string]string{}
			answered := map[string]store.AuditEntry{}
			errs := make(chan error, workers)
			var wg sync.WaitGroup
			for w := range workers {
				me := fmt.Sprintf("w%d", w)
				wg.Go(func() {
					fail := func(format string, args ...any) { errs <- fmt.Errorf(me+": "+format, args...) }
					for i := range keys {
						race := fmt.Sprintf("race-%02d", i)
						claimed, stored, err := st.Claim(ctx, rec(race, me))
						if err != nil {
							fail("claim %s: %v", race, err)
							return
						}
						if claimed {
							mu.Lock()
							if prev, dup := winners[race]; dup {
								mu.Unlock()
								fail("%s claimed by %s and %s", race, prev, me)
								return
							}
							winners[race] = me
							mu.Unlock()
							e, err := completeAudited(ctx, st, race, me)
							if err != nil {
								fail("complete %s: %v", race, err)
								return
							}
							mu.Lock()
							answered[race] = e
							mu.Unlock()
							continue
						}
						if stored.Executor == me || stored.Fingerprint != "fp-"+race {
							fail("lost %s but the stored record is %+v", race, stored)
							return
						}
						if _, err := completeAudited(ctx, st, race, me); !errors.Is(err, store.ErrLeaseLost) && !errors.Is(err, store.ErrNotStarted) {
							fail("a loser's complete of %s: %v, want lease lost or not started", race, err)
							return
						}
						ghost := fmt.Sprintf("ghost-%s-%02d", me, i)
						if _, err := completeAudited(ctx, st, ghost, me); !errors.Is(err, store.ErrNotFound) {
							fail("complete %s (never claimed): %v, want not found", ghost, err)
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if t.Failed() {
				return
			}
			if len(winners) != keys {
				t.Fatalf("%d keys won, want %d", len(winners), keys)
			}
			entries := verifyChain(t, st)
			if len(entries) != keys {
				t.Errorf("%d entries, want one per successful completion (%d)", len(entries), keys)
			}
			for race, winner := range winners {
				r, err := st.GetRecord(ctx, key(race))
				if err != nil || r.State != store.StateSucceeded || r.Executor != winner || string(r.Outcome) != "done "+race {
					t.Errorf("read back %s: %+v %v (won by %s)", race, r, err, winner)
				}
				a, e := answered[race], entries[race]
				if a.ID == 0 || a.ID != e.ID || a.Seq != e.Seq || a.Hash != e.Hash {
					t.Errorf("%s: answered entry %+v, stored %+v", race, a, e)
				}
			}
			batches, ops := st.GroupStats()
			t.Logf("%d transactions of several ops, %d ops in them", batches, ops)
			if gc == store.GroupCommitOn && batches == 0 {
				t.Error("no transaction held more than one op")
			}
		})
	}
}

// backendOf waits for the connection of app whose query starts with
// prefix to wait (wait_event_type waitType) and returns its pid.
func backendOf(t *testing.T, admin *pgx.Conn, app, prefix, waitType string) int {
	t.Helper()
	var pid int
	waitFor(t, "the batch's connection to wait", func() bool {
		err := admin.QueryRow(t.Context(), `SELECT pid FROM pg_stat_activity
WHERE application_name = $1 AND state = 'active' AND wait_event_type = $2 AND query ILIKE $3 || '%'`, app, waitType, prefix).Scan(&pid)
		return err == nil
	})
	return pid
}

// connect opens a connection of the test's own to dsn.
func connect(t *testing.T, dsn string) *pgx.Conn {
	c, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// hold inserts id (executor "ext") in a transaction of its own, left
// open: a claim of id waits for it. end commits or rolls it back.
func hold(t *testing.T, dsn, id string) (end func(commit bool)) {
	c := connect(t, dsn)
	tx, err := c.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(t.Context(), `INSERT INTO journal (scope, run_id, tool_call_id, fingerprint, state, owner, executor, lease_until, created_at, updated_at, expires_at)
VALUES ('gc', 'run', $1, 'fp-ext', 'started', 'owner', 'ext', 0, 0, 0, 0)`, id); err != nil {
		t.Fatal(err)
	}
	return func(commit bool) {
		var err error
		if commit {
			err = tx.Commit(t.Context())
		} else {
			err = tx.Rollback(t.Context())
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestPipelinedClaimCommittedMeanwhile: a claim of a batch whose key
// another transaction inserts and commits while the batch waits for it
// inserts nothing and sees no row in its statement's snapshot; it is read
// again after the batch (which commits its neighbours) and answered with
// the other executor's record, never claimed.
func TestPipelinedClaimCommittedMeanwhile(t *testing.T) {
	b := backends()[2]
	dsn, app := b.where(t), appName(t)
	st := openPG(t, dsn, app, store.GroupCommitOn, nil)
	admin := connect(t, dsn)
	endLeader, endHeld := hold(t, dsn, "leader"), hold(t, dsn, "held")
	leader := make(chan outcome, 1)
	go func() {
		claimed, stored, err := st.Claim(context.Background(), rec("leader", "owner-of-leader"))
		leader <- outcome{"leader", claimed, stored, err}
	}()
	waitFor(t, "the leader's claim to run", func() bool { in, _ := st.GroupQueue(); return in == 1 })
	out := make(chan outcome, 3)
	for _, id := range []string{"c1", "held", "c2"} {
		go func() {
			claimed, stored, err := st.Claim(context.Background(), rec(id, "owner-of-"+id))
			out <- outcome{id, claimed, stored, err}
		}()
	}
	waitFor(t, "3 ops queued", func() bool { _, q := st.GroupQueue(); return q == 3 })
	endLeader(false)
	backendOf(t, admin, app, "WITH ins AS", "Lock") // the batch waits on held
	endHeld(true)
	if o := <-leader; o.err != nil || !o.claimed {
		t.Fatalf("leader: %+v", o)
	}
	got := collect(t, ch(out), 3)
	for _, id := range []string{"c1", "c2"} {
		if o := got[id]; o.err != nil || !o.claimed {
			t.Errorf("%s: %+v", id, o)
		}
	}
	if o := got["held"]; o.err != nil || o.claimed || o.stored.Executor != "ext" || o.stored.Fingerprint != "fp-ext" {
		t.Errorf("held: %+v, want the other executor's record", o)
	}
	if batches, ops := st.GroupStats(); batches != 1 || ops != 3 {
		t.Errorf("%d batches of %d ops, want the one of 3 committed", batches, ops)
	}
}

// TestPipelinedBatchTerminated: the batch's connection is terminated
// (pg_terminate_backend) while it runs.
//   - During a statement before COMMIT: the server never ran the COMMIT,
//     so nothing of the batch is committed and each op runs again alone.
//     Every answer agrees with the rows read back: a claim answered
//     claimed is the caller's, once; the completion's entry is written
//     once; the chain verifies.
//   - During COMMIT (a deferred trigger sleeps in it): the batch may or
//     may not have committed, so every op of it gets the error, and none
//     is reported done; here the COMMIT did not happen, and none of the
//     batch's rows are in the store. The store works on afterwards.
func TestPipelinedBatchTerminated(t *testing.T) {
	b := backends()[2]
	t.Run("statement", func(t *testing.T) {
		dsn, app := b.where(t), appName(t)
		st := openPG(t, dsn, app, store.GroupCommitOn, nil)
		admin := connect(t, dsn)
		ctx := t.Context()
		if claimed, _, err := st.Claim(ctx, rec("pre", "owner-of-pre")); err != nil || !claimed {
			t.Fatalf("claim pre: %v %v", claimed, err)
		}
		endLeader, endHeld := hold(t, dsn, "leader"), hold(t, dsn, "held")
		// The leader's claim waits on the first open insert; the ops
		// queued meanwhile form the next batch.
		leader := make(chan outcome, 1)
		go func() {
			claimed, stored, err := st.Claim(context.Background(), rec("leader", "owner-of-leader"))
			leader <- outcome{"leader", claimed, stored, err}
		}()
		waitFor(t, "the leader's claim to run", func() bool { in, _ := st.GroupQueue(); return in == 1 })
		out := make(chan outcome, 5)
		for _, id := range []string{"c1", "c2", "held", "c3"} {
			go func() {
				claimed, stored, err := st.Claim(context.Background(), rec(id, "owner-of-"+id))
				out <- outcome{id, claimed, stored, err}
			}()
		}
		linked := make(chan store.AuditEntry, 1)
		go func() {
			e, err := completeAudited(context.Background(), st, "pre", "owner-of-pre")
			linked <- e
			out <- outcome{id: "complete pre", err: err}
		}()
		waitFor(t, "5 ops queued", func() bool { _, q := st.GroupQueue(); return q == 5 })
		endLeader(false)
		// The batch runs c1 and c2, then waits on held.
		pid := backendOf(t, admin, app, "WITH ins AS", "Lock")
		var ok bool
		if err := admin.QueryRow(ctx, `SELECT pg_terminate_backend($1)`, pid).Scan(&ok); err != nil || !ok {
			t.Fatalf("pg_terminate_backend(%d): %v %v", pid, ok, err)
		}
		endHeld(true) // held is the other executor's
		if o := <-leader; o.err != nil || !o.claimed {
			t.Fatalf("leader: %+v", o)
		}
		got := collect(t, ch(out), 5)
		for _, id := range []string{"c1", "c2", "c3"} {
			o := got[id]
			r, err := st.GetRecord(ctx, key(id))
			if o.err != nil || !o.claimed || err != nil || r.Executor != "owner-of-"+id || r.State != store.StateStarted {
				t.Errorf("%s: answered %+v; stored %+v %v", id, o, r, err)
			}
		}
		if o := got["held"]; o.err != nil || o.claimed || o.stored.Executor != "ext" {
			t.Errorf("held: %+v, want the other executor's record", o)
		}
		o := got["complete pre"]
		e := <-linked
		r, err := st.GetRecord(ctx, key("pre"))
		if o.err != nil || err != nil || r.State != store.StateSucceeded {
			t.Errorf("complete pre: %v; stored %+v %v", o.err, r, err)
		}
		entries := verifyChain(t, st)
		if w, ok := entries["pre"]; !ok || len(entries) != 1 || w.ID != e.ID || w.Hash != e.Hash {
			t.Errorf("entries %+v, answered %+v", entries, e)
		}
	})

	t.Run("commit", func(t *testing.T) {
		dsn, app := b.where(t), appName(t)
		st := openPG(t, dsn, app, store.GroupCommitOn, nil)
		exec(t, st, []string{
			`CREATE FUNCTION gc_slow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN IF NEW.tool_call_id LIKE 'slow%' THEN PERFORM pg_sleep(120); END IF; RETURN NULL; END $$`,
			`CREATE CONSTRAINT TRIGGER gc_slow AFTER INSERT ON journal DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION gc_slow()`,
		})
		admin := connect(t, dsn)
		ctx := t.Context()
		if claimed, _, err := st.Claim(ctx, rec("pre", "owner-of-pre")); err != nil || !claimed {
			t.Fatalf("claim pre: %v %v", claimed, err)
		}
		endLeader := hold(t, dsn, "leader")
		leader := make(chan outcome, 1)
		go func() {
			claimed, stored, err := st.Claim(context.Background(), rec("leader", "owner-of-leader"))
			leader <- outcome{"leader", claimed, stored, err}
		}()
		waitFor(t, "the leader's claim to run", func() bool { in, _ := st.GroupQueue(); return in == 1 })
		out := make(chan outcome, 4)
		for _, id := range []string{"c1", "slow-1", "c2"} {
			go func() {
				claimed, stored, err := st.Claim(context.Background(), rec(id, "owner-of-"+id))
				out <- outcome{id, claimed, stored, err}
			}()
		}
		go func() {
			_, err := completeAudited(context.Background(), st, "pre", "owner-of-pre")
			out <- outcome{id: "complete pre", err: err}
		}()
		waitFor(t, "4 ops queued", func() bool { _, q := st.GroupQueue(); return q == 4 })
		endLeader(false)
		pid := backendOf(t, admin, app, "COMMIT", "Timeout")
		var ok bool
		if err := admin.QueryRow(ctx, `SELECT pg_terminate_backend($1)`, pid).Scan(&ok); err != nil || !ok {
			t.Fatalf("pg_terminate_backend(%d): %v %v", pid, ok, err)
		}
		if o := <-leader; o.err != nil || !o.claimed {
			t.Fatalf("leader: %+v", o)
		}
		got := collect(t, ch(out), 4)
		for id, o := range got {
			if o.err == nil || o.claimed || !strings.Contains(o.err.Error(), "group commit of 4 calls failed") {
				t.Errorf("%s: claimed %v, err %v; want the batch's error", id, o.claimed, o.err)
			}
		}
		other := b.open(t, dsn, &store.Options{GroupCommit: store.GroupCommitOff})
		for _, id := range []string{"c1", "slow-1", "c2"} {
			if r, err := other.GetRecord(ctx, key(id)); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s is in the store after its batch's COMMIT was cut: %+v %v", id, r, err)
			}
		}
		if r, err := other.GetRecord(ctx, key("pre")); err != nil || r.State != store.StateStarted {
			t.Errorf("pre: %+v %v; its completion was not committed", r, err)
		}
		if es := verifyChain(t, other); len(es) != 0 {
			t.Errorf("entries of a batch not committed: %+v", es)
		}
		// The store works on: the pool replaced the lost connection.
		if claimed, _, err := st.Claim(ctx, rec("c1", "x")); err != nil || !claimed {
			t.Errorf("claim c1 again: %v %v", claimed, err)
		}
		if _, err := completeAudited(ctx, st, "pre", "owner-of-pre"); err != nil {
			t.Errorf("complete pre again: %v", err)
		}
	})
}

// TestPipelinedAuditedRefusal: in one batch, an audited completion whose
// lease is lost, one whose key was never claimed, a good audited
// completion and a claim. The refused ones are answered ErrLeaseLost and
// ErrNotFound and write no entry; their neighbours are done; the chain
// holds exactly the good completion's entry and verifies.
func TestPipelinedAuditedRefusal(t *testing.T) {
	b := backends()[2]
	st := openPG(t, b.where(t), appName(t), store.GroupCommitOn, nil)
	ctx := t.Context()
	for _, id := range []string{"good", "stolen"} {
		if claimed, _, err := st.Claim(ctx, rec(id, "owner-of-"+id)); err != nil || !claimed {
			t.Fatalf("claim %s: %v %v", id, claimed, err)
		}
	}
	release, first := block(t, b, st, "first", true)
	out := make(chan outcome, 4)
	for _, c := range []struct{ id, executor string }{{"good", "owner-of-good"}, {"stolen", "intruder"}, {"ghost", "x"}} {
		go func() {
			_, err := completeAudited(context.Background(), st, c.id, c.executor)
			out <- outcome{id: "complete " + c.id, err: err}
		}()
	}
	go func() {
		claimed, stored, err := st.Claim(context.Background(), rec("c1", "owner-of-c1"))
		out <- outcome{"c1", claimed, stored, err}
	}()
	waitFor(t, "4 ops queued", func() bool { _, q := st.GroupQueue(); return q == 4 })
	release()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	got := collect(t, ch(out), 4)
	if o := got["complete good"]; o.err != nil {
		t.Errorf("complete good: %v", o.err)
	}
	if o := got["complete stolen"]; !errors.Is(o.err, store.ErrLeaseLost) {
		t.Errorf("complete stolen by another executor: %v, want lease lost", o.err)
	}
	if o := got["complete ghost"]; !errors.Is(o.err, store.ErrNotFound) {
		t.Errorf("complete ghost: %v, want not found", o.err)
	}
	if o := got["c1"]; o.err != nil || !o.claimed {
		t.Errorf("c1: %+v", o)
	}
	if r, err := st.GetRecord(ctx, key("stolen")); err != nil || r.State != store.StateStarted || r.Executor != "owner-of-stolen" {
		t.Errorf("stolen: %+v %v", r, err)
	}
	if r, err := st.GetRecord(ctx, key("good")); err != nil || r.State != store.StateSucceeded {
		t.Errorf("good: %+v %v", r, err)
	}
	if es := verifyChain(t, st); len(es) != 1 || es["good"].Seq != 1 {
		t.Errorf("entries %+v, want the good completion's alone", es)
	}
}
