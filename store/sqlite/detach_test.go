package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/sqlstore"
)

// TestCancellableContextCostsNothing: a statement run with a cancellable
// context allocates what it does with context.Background() plus the one
// context detached from it (no goroutine watching the context per
// statement, in modernc.org/sqlite nor in database/sql): a read (one
// statement), a write that finds nothing (an UPDATE and a read), and a
// transaction (BEGIN and an UPDATE).
func TestCancellableContextCostsNothing(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "g.db"), &store.Options{GroupCommit: store.GroupCommitOff})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	key := store.RecordKey{Scope: "s", RunID: "r", ToolCallID: "c"}
	if ok, _, err := s.Claim(t.Context(), store.Record{RecordKey: key, Fingerprint: "f", Executor: "e", LeaseUntil: time.Now().Add(time.Minute)}); err != nil || !ok {
		t.Fatalf("claim: %v %v", ok, err)
	}
	missing := store.RecordKey{Scope: "s", RunID: "r", ToolCallID: "missing"}
	statements := map[string]float64{"read": 1, "write": 2, "transaction": 2}
	ops := map[string]func(ctx context.Context) error{
		"read": func(ctx context.Context) error {
			_, err := s.GetRecord(ctx, key)
			return err
		},
		"write": func(ctx context.Context) error {
			if err := s.Complete(ctx, missing, "e", store.StateSucceeded, []byte(`{}`)); !errors.Is(err, store.ErrNotFound) {
				return err
			}
			return nil
		},
		"transaction": func(ctx context.Context) error {
			return s.DB().InTx(ctx, func(tx sqlstore.Querier) error {
				_, err := tx.Exec(ctx, `UPDATE journal SET updated_at = updated_at WHERE scope = $1 AND run_id = $2 AND tool_call_id = $3`, "s", "r", "missing")
				return err
			})
		},
	}
	cctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for name, op := range ops {
		for _, ctx := range []context.Context{context.Background(), cctx} { // warm the statement cache
			if err := op(ctx); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		allocs := func(ctx context.Context) float64 {
			return testing.AllocsPerRun(50, func() {
				if err := op(ctx); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
			})
		}
		// The fewest of three measures each: a pool's miss after a GC
		// (database/sql's, the statement cache's) adds an allocation now
		// and then under -race on a loaded machine. A watched context
		// costs 8 to 14 per statement (goroutine, channel, timer), a
		// detached one 1; the slack of 2 stays far below the former.
		least := func(ctx context.Context) float64 {
			return min(allocs(ctx), allocs(ctx), allocs(ctx))
		}
		bg, cancellable := least(context.Background()), least(cctx)
		if cancellable > bg+statements[name]+2 {
			t.Errorf("%s: %.0f allocations with a cancellable context, %.0f without (%.0f statements): the context is watched", name, cancellable, bg, statements[name])
		}
	}
}

// TestDoneContextRunsNothing: a statement whose context is done is not
// run, and a transaction whose context ends before its commit is rolled
// back: nothing of it is in the file.
func TestDoneContextRunsNothing(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "g.db"), &store.Options{GroupCommit: store.GroupCommitOff})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec := func(id string) store.Record {
		return store.Record{RecordKey: store.RecordKey{Scope: "s", RunID: "r", ToolCallID: id}, Fingerprint: "f", Executor: "e", LeaseUntil: time.Now().Add(time.Minute)}
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := s.Claim(done, rec("done")); !errors.Is(err, context.Canceled) {
		t.Errorf("claim with a done context: %v, want context.Canceled", err)
	}
	if _, err := s.GetRecord(done, rec("done").RecordKey); !errors.Is(err, context.Canceled) {
		t.Errorf("read with a done context: %v, want context.Canceled", err)
	}
	insert := func(ctx context.Context, tx sqlstore.Querier, id string) error {
		_, err := tx.Exec(ctx, `INSERT INTO journal (scope, run_id, tool_call_id, fingerprint, state, owner, executor, lease_until, created_at, updated_at, expires_at)
VALUES ('s', 'r', $1, 'f', 'started', '', 'e', 0, 0, 0, 0)`, id)
		return err
	}
	// Ended between two statements: the second is not run, the first is
	// rolled back.
	ctx, cancel := context.WithCancel(context.Background())
	err = s.DB().InTx(ctx, func(tx sqlstore.Querier) error {
		if err := insert(ctx, tx, "between-1"); err != nil {
			return err
		}
		cancel()
		return insert(ctx, tx, "between-2")
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("transaction cancelled between statements: %v, want context.Canceled", err)
	}
	// Ended after its last statement: not committed.
	ctx, cancel = context.WithCancel(context.Background())
	err = s.DB().InTx(ctx, func(tx sqlstore.Querier) error {
		err := insert(ctx, tx, "before-commit")
		cancel()
		return err
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("transaction cancelled before its commit: %v, want context.Canceled", err)
	}
	for _, id := range []string{"done", "between-1", "between-2", "before-commit"} {
		if _, err := s.GetRecord(t.Context(), rec(id).RecordKey); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: %v, want ErrNotFound (nothing written)", id, err)
		}
	}
}
