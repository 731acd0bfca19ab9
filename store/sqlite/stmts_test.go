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

func cached(s *Store) int {
	c := s.DB().(*sqlDB).stmts
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.stmts)
}

// TestStatementsPreparedOnce: a journal claim and completion prepare their
// statements once and reuse them; migrations' DDL is not kept; the cache is
// bounded, and a statement past the bound still runs.
func TestStatementsPreparedOnce(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "g.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Open prepares the five statements the commit queue runs only inside
	// transactions (a transaction never prepares one: see
	// TestTransactionNeverWaitsForASecondConnection): the audit trail's
	// inserts of 1, 8 and 64 rows, its head, and the completion.
	if n := cached(s); n != 5 {
		t.Fatalf("%d statements cached after Open, want the commit queue's 5 (DDL kept?)", n)
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
	if n := cached(s); n < 5+1 || n > 5+3 {
		t.Errorf("%d statements cached after 50 claims and completions, want the two (or so) they use", n)
	}
	db := s.DB()
	for i := range maxCachedStmts + 10 {
		var v int
		if err := db.QueryRow(ctx, fmt.Sprintf("SELECT %d", i)).Scan(&v); err != nil || v != i {
			t.Fatalf("SELECT %d = %d, %v", i, v, err)
		}
	}
	if n := cached(s); n != maxCachedStmts {
		t.Errorf("%d statements cached, want the bound %d", n, maxCachedStmts)
	}
}

// TestTransactionNeverWaitsForASecondConnection: with a pool of one
// connection, a transaction running a statement never prepared before must
// not prepare it on the pool (it would wait for the connection it holds).
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
	// Prepared on the pool now, and used by a transaction on the same
	// connection.
	var v int
	if err := s.DB().QueryRow(ctx, "SELECT 41 + 1").Scan(&v); err != nil || v != 42 {
		t.Fatal(v, err)
	}
	if err := s.DB().InTx(ctx, func(tx sqlstore.Querier) error { return tx.QueryRow(ctx, "SELECT 41 + 1").Scan(&v) }); err != nil || v != 42 {
		t.Fatalf("a cached statement in a transaction: %d %v", v, err)
	}
}

// TestPreparingNeverBlocksATransaction: a call preparing a new statement
// waits for a connection of the pool; it must not hold the cache meanwhile,
// or a transaction holding that connection blocks on the cache and neither
// ends (the approvals race of durable found it).
func TestPreparingNeverBlocksATransaction(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "g.db"), &store.Options{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	db := s.DB()
	var v int
	if err := db.QueryRow(ctx, "SELECT 1").Scan(&v); err != nil { // cached
		t.Fatal(err)
	}
	outside := make(chan error, 1)
	err = db.InTx(ctx, func(tx sqlstore.Querier) error {
		go func() { // a statement never prepared, on the pool: waits for the tx's connection
			var w int
			outside <- db.QueryRow(ctx, "SELECT 2").Scan(&w)
		}()
		time.Sleep(100 * time.Millisecond) // let it reach the pool's wait
		return tx.QueryRow(ctx, "SELECT 1").Scan(&v)
	})
	if err != nil {
		t.Fatalf("the transaction: %v", err)
	}
	if err := <-outside; err != nil {
		t.Fatalf("the statement outside: %v", err)
	}
}
