package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/sqlstore"
)

// cached returns how many statements s keeps prepared on its writer's
// connection, or with pool set on its pool.
func cached(s *Store, pool bool) int {
	c := s.DB().(*sqlDB).wstmts
	if pool {
		c = s.DB().(*sqlDB).stmts
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.stmts)
}

// TestStatementsPreparedOnce: a journal claim and completion prepare their
// statements once, on the writer's connection, and reuse them; migrations'
// DDL is not kept; the pool's cache is bounded, and a statement past the
// bound still runs.
func TestStatementsPreparedOnce(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "g.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Open prepares the three statements the commit queue runs only
	// inside transactions (a transaction never prepares one: see
	// TestTransactionNeverWaitsForASecondConnection): the audit trail's
	// block insert, its head, and the completion.
	if n := cached(s, false); n != 3 {
		t.Fatalf("%d statements cached after Open, want the commit queue's 3 (DDL kept?)", n)
	}
	for i := range 50 {
		key := store.RecordKey{Scope: "s", RunID: "r", ToolCallID: fmt.Sprint(i)}
		if ok, _, err := s.Claim(ctx, store.Record{RecordKey: key, Fingerprint: "f", Executor: "e", LeaseUntil: time.Now().Add(time.Minute)}); err != nil || !ok {
			t.Fatalf("claim %d: %v %v", i, ok, err)
		}
		if err := s.Complete(ctx, key, "e", store.StateSucceeded, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	if n := cached(s, false); n < 3+1 || n > 3+3 {
		t.Errorf("%d statements cached after 50 claims and completions, want the two (or so) they use", n)
	}
	db := s.DB()
	for i := range maxCachedStmts + 10 {
		var v int
		if err := db.QueryRow(ctx, fmt.Sprintf("SELECT %d", i)).Scan(&v); err != nil || v != i {
			t.Fatalf("SELECT %d = %d, %v", i, v, err)
		}
	}
	if n := cached(s, true); n != maxCachedStmts {
		t.Errorf("%d statements cached, want the bound %d", n, maxCachedStmts)
	}
}

// TestTransactionNeverWaitsForASecondConnection: a transaction running a
// statement never prepared before must not prepare it (on the writer's
// one connection, it would wait for the connection it holds), with a pool
// of one connection too.
func TestTransactionNeverWaitsForASecondConnection(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "g.db"), &store.Options{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.DB().InTx(ctx, func(tx sqlstore.Querier) error {
		var v int
		if err := tx.QueryRow(ctx, "SELECT 41 + 1").Scan(&v); err != nil {
			return err
		}
		if v != 42 {
			return fmt.Errorf("got %d", v)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("a transaction on a one-connection pool: %v", err)
	}
	// Prepared by a write outside a transaction, and used by a
	// transaction on the same connection.
	const upd = `UPDATE journal SET owner = owner WHERE tool_call_id = 'none'`
	if _, err := s.DB().Exec(ctx, upd); err != nil {
		t.Fatal(err)
	}
	if s.DB().(*sqlDB).wstmts.peek(upd) == nil {
		t.Fatal("a write outside a transaction did not prepare its statement on the writer's connection")
	}
	if err := s.DB().InTx(ctx, func(tx sqlstore.Querier) error { _, err := tx.Exec(ctx, upd); return err }); err != nil {
		t.Fatalf("a cached statement in a transaction: %v", err)
	}
}

// TestPreparingNeverBlocksATransaction: a call preparing a new statement
// waits for a connection; it must not hold the cache meanwhile, or a
// transaction holding that connection blocks on the cache and neither
// ends (the approvals race of durable found it). Both caches: a read
// preparing on the pool of one connection while a read holds it, and a
// write preparing on the writer's connection while a transaction holds it.
func TestPreparingNeverBlocksATransaction(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "g.db"), &store.Options{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	db := s.DB()
	const cachedUpd = `UPDATE journal SET owner = owner WHERE tool_call_id = 'a'`
	if _, err := db.Exec(ctx, cachedUpd); err != nil { // cached on the writer's connection
		t.Fatal(err)
	}
	outside := make(chan error, 2)
	err = db.InTx(ctx, func(tx sqlstore.Querier) error {
		go func() { // never prepared, on the writer's connection: waits for the tx's
			db.(sqlstore.Preparer).Prepare(ctx, `UPDATE journal SET owner = owner WHERE tool_call_id = 'b'`)
			outside <- nil
		}()
		go func() { // a write waits for its turn, not on the cache
			_, err := db.Exec(ctx, `UPDATE journal SET owner = owner WHERE tool_call_id = 'c'`)
			outside <- err
		}()
		time.Sleep(100 * time.Millisecond) // let them reach their waits
		_, err := tx.Exec(ctx, cachedUpd)
		return err
	})
	if err != nil {
		t.Fatalf("the transaction: %v", err)
	}
	for range 2 {
		if err := <-outside; err != nil {
			t.Fatalf("the statement outside: %v", err)
		}
	}
	if db.(*sqlDB).wstmts.peek(`UPDATE journal SET owner = owner WHERE tool_call_id = 'b'`) == nil {
		t.Error("Prepare did not prepare its statement")
	}
}
