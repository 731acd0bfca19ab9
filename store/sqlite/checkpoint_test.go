package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/audit"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/sqlstore"
)

// insertRow writes one journal row with a blob of size bytes in its own
// transaction.
func insertRow(ctx context.Context, s *Store, id string, size int) error {
	blob := make([]byte, size)
	return s.DB().InTx(ctx, func(tx sqlstore.Querier) error {
		_, err := tx.Exec(ctx, `INSERT INTO journal (scope, run_id, tool_call_id, fingerprint, state, outcome, owner, executor, lease_until, created_at, updated_at, expires_at)
VALUES ('s', 'r', $1, 'f', 'started', $2, '', 'e', 0, 0, 0, 0)`, id, blob)
		return err
	})
}

// restartCheckpoints replaces s's checkpointer by one with o.
func restartCheckpoints(s *Store, o checkpointOptions) *checkpointer {
	d := s.DB().(*sqlDB)
	d.cp.close()
	d.cp = newCheckpointer(d.db, d.reads, d.lockWriter, d.unlockWriter, o)
	return d.cp
}

// waitFor polls cond until it holds or 20 s pass (a bound, not a timing
// assertion).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20 s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestCheckpointsOffTheWriters: no connection of a store checkpoints the
// WAL inside a commit (wal_autocheckpoint=0 on every one of them: SQLite's
// default of 1,000 runs the copy and two fsyncs while the committing
// writer holds the write lock, and every writer of the process waits); the
// store's checkpointer does, and the rows it copied are in the database
// file itself and read back after a reopen.
func TestCheckpointsOffTheWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	s, err := Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()

	// Every connection of the pool, held at once so that they differ.
	conns := make([]interface{ Close() error }, 0, 4)
	for i := range 4 {
		c, err := s.SQLDB().Conn(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		var n int
		if err := c.QueryRowContext(t.Context(), "PRAGMA wal_autocheckpoint").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("connection %d: wal_autocheckpoint = %d, want 0 (the store checkpoints, not its writers)", i, n)
		}
	}
	for _, c := range conns {
		_ = c.Close()
	}

	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	cp := s.DB().(*sqlDB).cp
	const rows = 3 * checkpointEvery
	for i := range rows {
		if err := insertRow(t.Context(), s, fmt.Sprint(i), 2000); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "two checkpoints", func() bool { return cp.passes.Load() >= 2 })
	// The rows' pages are copied into the database file by the
	// checkpointer: at least the 2,000-byte blobs of two thirds of them.
	// A pass may cover fewer rows than checkpointEvery (one the idle timer
	// starts while a slow writer pauses), so the copy is waited for, not
	// counted in passes; without a checkpointer the file never grows.
	var grown int64
	waitFor(t, "the rows copied into the database file", func() bool {
		after, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		grown = after.Size() - before.Size()
		return grown >= 2*checkpointEvery*2000
	})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s2, err := Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	var n int
	if err := s2.SQLDB().QueryRow(`SELECT COUNT(*) FROM journal`).Scan(&n); err != nil || n != rows {
		t.Fatalf("rows after reopening: %d, %v (want %d)", n, err, rows)
	}
}

// TestWALBoundedUnderSteadyWrites: writers that never pause leave a
// PASSIVE checkpoint no moment at which every frame is copied, and SQLite
// restarts the WAL only at such a moment: without the checkpointer's
// second pass (holding the writer queue) the WAL grows with every commit.
// Four writers commit 32 MB of rows without a pause; the WAL file stays
// well below that.
func TestWALBoundedUnderSteadyWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.db")
	s, err := Open(t.Context(), path, &store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const limit = 64 // frames: 256 KiB
	cp := restartCheckpoints(s, checkpointOptions{every: 8, idle: 10 * time.Millisecond, limit: limit})

	const writers, each, size = 4, 1000, 8000 // 32 MB
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if err := insertRow(t.Context(), s, fmt.Sprintf("%d-%d", w, i), size); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	wal, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	// The WAL file keeps the largest size it reached. Without the restart
	// pass it passes 100 MB (tables and indexes: more than the 32 MB of
	// blobs); with it, it holds what the writers commit while a pass runs,
	// which a busy machine makes longer (20 MB once beside the PostgreSQL
	// tests, 53 MB once at a load average of 15): the bound is twice the
	// blobs, two thirds of the WAL without the pass.
	if max := int64(2 * writers * each * size); wal.Size() > max {
		t.Errorf("the WAL reached %d bytes for %d bytes written (restarts %d, passes %d, failures %d); want at most %d",
			wal.Size(), writers*each*size, cp.restarts.Load(), cp.passes.Load(), cp.failures.Load(), max)
	}
	if cp.restarts.Load() == 0 {
		t.Errorf("no restart pass in %d checkpoints", cp.passes.Load())
	}
	var n int
	if err := s.SQLDB().QueryRow(`SELECT COUNT(*) FROM journal`).Scan(&n); err != nil || n != writers*each {
		t.Fatalf("rows: %d, %v (want %d)", n, err, writers*each)
	}
}

// TestCheckpointerEndsWithClose: Close stops the checkpointer's goroutine
// (goleak checks the package) even while writes keep it busy, and a
// commit counted after Close does not block.
func TestCheckpointerEndsWithClose(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "e.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	cp := restartCheckpoints(s, checkpointOptions{every: 1, idle: time.Millisecond, limit: 1})
	for i := range 20 {
		if err := insertRow(t.Context(), s, fmt.Sprint(i), 100); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-cp.done:
	default:
		t.Fatal("the checkpointer still runs after Close")
	}
	for range 3 {
		cp.committed() // never blocks, even with nobody reading the kick
	}
}

// TestLazyCommitsWaitLonger: the audit trail's batches alone (the store's
// AppendAuditLinked) commit lazily: they do not bring a checkpoint within
// the idle wait, only within the lazy one; a journal write after them
// does. The WAL is copied into the database file each time a check is due:
// the trail's pages are never left behind for good.
func TestLazyCommitsWaitLonger(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "c.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	appendTrail := func(chain string, n int) {
		t.Helper()
		es := make([]store.AuditEntry, n)
		for i := range es {
			es[i] = store.AuditEntry{Chain: chain, At: time.Unix(1700000000, 0), Kind: audit.KindCall, Subject: "s", Outcome: "ok"}
		}
		if _, err := s.AppendAuditLinked(ctx, es, audit.Link); err != nil {
			t.Fatal(err)
		}
	}

	cp := restartCheckpoints(s, checkpointOptions{every: 1 << 20, idle: 5 * time.Millisecond, lazyIdle: time.Hour, limit: 1 << 40})
	for range 3 {
		appendTrail("gw/a", 64)
	}
	if n, e := cp.commits.Load(), cp.eager.Load(); n != 3 || e != 0 {
		t.Fatalf("after three batches of the trail: %d commits, %d not lazy; want 3 and 0", n, e)
	}
	time.Sleep(300 * time.Millisecond) // 60 idle waits: none is due
	if p := cp.passes.Load(); p != 0 {
		t.Fatalf("%d checkpoints after the trail's batches alone, want none before the lazy wait", p)
	}
	// A journal write: the check is due an idle wait after it, and the
	// checkpoint covers the trail's commits before it too.
	if err := insertRow(ctx, s, "r1", 100); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a checkpoint after a journal write", func() bool { return cp.passes.Load() == 1 })
	if n, e := cp.commits.Load(), cp.eager.Load(); n != 0 || e != 0 {
		t.Fatalf("after the checkpoint: %d commits, %d not lazy still counted", n, e)
	}

	// A keyed call's claim and its completion with its entry are journal
	// writes, never lazy, though the completion appends to the trail.
	now := time.Now()
	key := store.RecordKey{Scope: "s", RunID: "r", ToolCallID: "c1"}
	if ok, _, err := s.Claim(ctx, store.Record{RecordKey: key, Fingerprint: "f", Owner: "o", Executor: "e",
		LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour)}); err != nil || !ok {
		t.Fatalf("claim: %v %v", ok, err)
	}
	if n, e := cp.commits.Load(), cp.eager.Load(); n != 1 || e != 1 {
		t.Fatalf("after a claim: %d commits, %d not lazy; want 1 and 1", n, e)
	}
	waitFor(t, "a checkpoint after the claim", func() bool { return cp.passes.Load() == 2 })
	if _, err := s.CompleteAudited(ctx, key, "e", store.StateSucceeded, []byte(`{"ok":true}`),
		store.AuditEntry{Chain: "gw/a", At: now, Kind: audit.KindCall, Subject: "s", Outcome: "ok"}, audit.Link); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a checkpoint after the audited completion", func() bool { return cp.passes.Load() == 3 })

	// The lazy wait ends too: the trail alone is checkpointed after it.
	cp = restartCheckpoints(s, checkpointOptions{every: 1 << 20, idle: time.Hour, lazyIdle: 5 * time.Millisecond, limit: 1 << 40})
	appendTrail("gw/a", 64)
	waitFor(t, "a checkpoint after the lazy wait", func() bool { return cp.passes.Load() == 1 })
	var busy, frames, copied int64
	if err := s.SQLDB().QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied); err != nil || frames != copied {
		t.Fatalf("the WAL after the lazy checkpoint: %d frames, %d copied (%v)", frames, copied, err)
	}
}
