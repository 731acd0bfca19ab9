package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/sqlstore"
)

// TestWritersQueueInProcess: a transaction of this process that holds
// the write lock longer than the busy timeout makes the next writer of
// the same process wait its turn, not fail with SQLITE_BUSY (SQLite's
// busy handler sleeps and polls, and is not fair among writers of one
// process: under load one waited past the 10 s timeout in CI). Both rows
// are read back.
func TestWritersQueueInProcess(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "w.db"), &store.Options{BusyTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	insert := func(ctx context.Context, tx sqlstore.Querier, id string) error {
		_, err := tx.Exec(ctx, `INSERT INTO journal (scope, run_id, tool_call_id, fingerprint, state, owner, executor, lease_until, created_at, updated_at, expires_at)
VALUES ('s', 'r', $1, 'f', 'started', '', 'e', 0, 0, 0, 0)`, id)
		return err
	}
	holding := make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- s.DB().InTx(t.Context(), func(tx sqlstore.Querier) error {
			if err := insert(t.Context(), tx, "first"); err != nil {
				return err
			}
			close(holding)
			time.Sleep(400 * time.Millisecond) // four busy timeouts
			return nil
		})
	}()
	<-holding
	if err := s.DB().InTx(t.Context(), func(tx sqlstore.Querier) error { return insert(t.Context(), tx, "second") }); err != nil {
		t.Fatalf("the second writer: %v (want it to wait for the first)", err)
	}
	if err := <-first; err != nil {
		t.Fatalf("the first writer: %v", err)
	}
	for _, id := range []string{"first", "second"} {
		if _, err := s.GetRecord(t.Context(), store.RecordKey{Scope: "s", RunID: "r", ToolCallID: id}); err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}

	// A writer waiting its turn gives up with its context.
	holding2 := make(chan struct{})
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.DB().InTx(t.Context(), func(tx sqlstore.Querier) error {
			close(holding2)
			<-release
			return nil
		})
	}()
	<-holding2
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	err = s.DB().InTx(ctx, func(tx sqlstore.Querier) error { return insert(ctx, tx, "late") })
	close(release)
	if err == nil || ctx.Err() == nil {
		t.Fatalf("a writer whose context ended while it waited: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetRecord(t.Context(), store.RecordKey{Scope: "s", RunID: "r", ToolCallID: "late"}); err == nil {
		t.Error("the writer that gave up wrote its row")
	}
}
