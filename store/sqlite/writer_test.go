package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/audit"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/sqlstore"
)

// insertStarted writes a started journal row with tool_call_id id on tx.
func insertStarted(ctx context.Context, tx sqlstore.Querier, id string) error {
	_, err := tx.Exec(ctx, `INSERT INTO journal (scope, run_id, tool_call_id, fingerprint, state, owner, executor, lease_until, created_at, updated_at, expires_at)
VALUES ('s', 'r', $1, 'f', 'started', '', 'e', 0, 0, 0, 0)`, id)
	return err
}

// holdWriter starts a transaction of s that holds the write lock (and the
// writer's turn) until release is called; release returns its error.
func holdWriter(t *testing.T, s *Store) (release func() error) {
	t.Helper()
	holding, free := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.DB().InTx(t.Context(), func(tx sqlstore.Querier) error {
			close(holding)
			<-free
			return nil
		})
	}()
	<-holding
	var (
		once sync.Once
		err  error
	)
	return func() error {
		once.Do(func() {
			close(free)
			err = <-done
		})
		return err
	}
}

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
	insert := insertStarted
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
	release := holdWriter(t, s)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	err = s.DB().InTx(ctx, func(tx sqlstore.Querier) error { return insert(ctx, tx, "late") })
	if rerr := release(); rerr != nil {
		t.Fatal(rerr)
	}
	if err == nil || ctx.Err() == nil {
		t.Fatalf("a writer whose context ended while it waited: %v", err)
	}
	if _, err := s.GetRecord(t.Context(), store.RecordKey{Scope: "s", RunID: "r", ToolCallID: "late"}); err == nil {
		t.Error("the writer that gave up wrote its row")
	}
}

// TestWritesNotHeldByReads: reads holding every connection of the pool
// (rows left open, as a long export does) do not hold up the journal's
// writes, which have their own connection: a Claim, an audited Complete
// and a single-statement write all commit while the reads are open, and
// read back once they close. On a shared pool the Claim waited for a
// connection until its context ended.
func TestWritesNotHeldByReads(t *testing.T) {
	for _, gc := range []store.GroupCommit{store.GroupCommitOn, store.GroupCommitOff} {
		t.Run(string(gc), func(t *testing.T) {
			s, err := Open(t.Context(), filepath.Join(t.TempDir(), "r.db"), &store.Options{MaxConns: 2, GroupCommit: gc})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			now := time.Now()
			rec := func(id string) store.Record {
				return store.Record{RecordKey: store.RecordKey{Scope: "s", RunID: "r", ToolCallID: id}, Fingerprint: "f",
					State: store.StateStarted, Owner: "o", Executor: "e", LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour)}
			}
			for _, id := range []string{"a", "b", "c"} {
				if _, _, err := s.Claim(t.Context(), rec(id)); err != nil {
					t.Fatal(err)
				}
			}
			// Two open row sets: the pool's two connections.
			release := holdReads(t, s, 2)
			// The writes run while the reads are open. On a regression they
			// wait for a pool connection, and their contexts do not end that
			// wait: after 10 s the reads are closed, which frees them, and
			// the test fails.
			done := make(chan error, 1)
			go func() {
				ctx := t.Context()
				if claimed, _, err := s.Claim(ctx, rec("d")); err != nil || !claimed {
					done <- fmt.Errorf("claim while the pool is held: claimed=%v err=%v", claimed, err)
					return
				}
				entry := store.AuditEntry{Chain: "c1", At: now, Kind: "tool_call", Subject: "o", Server: "srv", Tool: "t", Outcome: "ok"}
				if _, err := s.CompleteAudited(ctx, store.RecordKey{Scope: "s", RunID: "r", ToolCallID: "d"}, "e", store.StateSucceeded, []byte(`{"ok":true}`),
					entry, audit.Link); err != nil {
					done <- fmt.Errorf("audited complete while the pool is held: %w", err)
					return
				}
				if n, err := s.DB().Exec(ctx, `DELETE FROM journal WHERE tool_call_id = 'c'`); err != nil || n != 1 {
					done <- fmt.Errorf("single-statement write while the pool is held: n=%d err=%v", n, err)
					return
				}
				done <- nil
			}()
			var werr error
			waited := false
			select {
			case werr = <-done:
			case <-time.After(10 * time.Second):
				werr, waited = errors.New("the writes waited for the pool's connections (10 s)"), true
			}
			release()
			if werr != nil {
				if waited {
					<-done // freed by the closed reads
				}
				t.Fatal(werr)
			}
			got, err := s.GetRecord(t.Context(), store.RecordKey{Scope: "s", RunID: "r", ToolCallID: "d"})
			if err != nil || got.State != store.StateSucceeded || string(got.Outcome) != `{"ok":true}` {
				t.Fatalf("read back: %+v, %v", got, err)
			}
			if _, err := s.GetRecord(t.Context(), store.RecordKey{Scope: "s", RunID: "r", ToolCallID: "c"}); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("deleted record: %v (want ErrNotFound)", err)
			}
			es, err := s.ListAudit(t.Context(), store.AuditFilter{Chain: "c1"})
			if err != nil || len(es) != 1 || es[0].Tool != "t" {
				t.Fatalf("audit read back: %+v, %v", es, err)
			}
		})
	}
}

// TestTransactionEndsWhateverFnDoes: a transaction whose function fails,
// panics, or outlives its context is rolled back (its row is not there)
// and leaves the writer's connection ready for the next one, which
// commits. A panic that left the transaction open would hold the
// writer's one connection for good: every later write would wait for it.
func TestTransactionEndsWhateverFnDoes(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "t.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	insert := insertStarted
	exists := func(id string) bool {
		_, err := s.GetRecord(t.Context(), store.RecordKey{Scope: "s", RunID: "r", ToolCallID: id})
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	failing := errors.New("fn failed")
	cases := []struct {
		name string
		run  func(id string) error
		want error
	}{
		{"fails", func(id string) error {
			return s.DB().InTx(t.Context(), func(tx sqlstore.Querier) error {
				if err := insert(t.Context(), tx, id); err != nil {
					return err
				}
				return failing
			})
		}, failing},
		{"panics", func(id string) (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("recovered: %v", r)
				}
			}()
			return s.DB().InTx(t.Context(), func(tx sqlstore.Querier) error {
				if err := insert(t.Context(), tx, id); err != nil {
					return err
				}
				panic("fn panicked")
			})
		}, nil},
		{"context ends", func(id string) error {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			return s.DB().InTx(ctx, func(tx sqlstore.Querier) error {
				if err := insert(ctx, tx, id); err != nil {
					return err
				}
				cancel()
				return nil
			})
		}, context.Canceled},
	}
	for _, c := range cases {
		id := "rolled-back-" + c.name
		err := c.run(id)
		switch {
		case c.want != nil && !errors.Is(err, c.want):
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		case c.want == nil && (err == nil || err.Error() != "recovered: fn panicked"):
			t.Errorf("%s: %v, want the panic", c.name, err)
		}
		if exists(id) {
			t.Errorf("%s: its row was committed", c.name)
		}
		// The next transaction and a single-statement write commit, within
		// a bound: on a connection left in a transaction they would wait.
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		next := "after-" + c.name
		done := make(chan error, 1)
		go func() {
			if err := s.DB().InTx(ctx, func(tx sqlstore.Querier) error { return insert(ctx, tx, next) }); err != nil {
				done <- err
				return
			}
			_, err := s.DB().Exec(ctx, `UPDATE journal SET state = 'succeeded' WHERE tool_call_id = $1`, next)
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("after %s: %v", c.name, err)
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("after %s: the next write still waits after 15 s", c.name)
		}
		cancel()
		got, err := s.GetRecord(t.Context(), store.RecordKey{Scope: "s", RunID: "r", ToolCallID: next})
		if err != nil || got.State != store.StateSucceeded {
			t.Fatalf("after %s: %+v, %v", c.name, got, err)
		}
	}
}
