package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/sqlstore"
)

// holdReads opens n row sets through the store (as long exports do) and
// returns a func closing them.
func holdReads(t *testing.T, s *Store, n int) func() {
	t.Helper()
	var open []sqlstore.Rows
	for range n {
		rows, err := s.DB().Query(t.Context(), `SELECT tool_call_id FROM journal`)
		if err != nil {
			t.Fatal(err)
		}
		if !rows.Next() {
			t.Fatal("no row to hold the read open")
		}
		open = append(open, rows)
	}
	return func() {
		for _, r := range open {
			r.Close()
		}
	}
}

// within runs f and returns its error, or fails the test when f has not
// returned within 10 s (the bound of a wait that ignores its context),
// after running unblock (which frees such a wait) and waiting for f.
func within(t *testing.T, what string, f func() error, unblock func()) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		unblock()
		<-done
		t.Fatalf("%s: still waiting after 10 s, past its context", what)
		return nil
	}
}

// TestReadsWaitWithTheirContext: a read that finds every connection of
// the pool taken (two row sets left open on a pool of two) gives up when
// its context ends, with the context's error; once the row sets close,
// the same read runs. Every read gives its turn back: many more reads
// than connections run one after another. Before, a single-row read waited
// for a connection detached from its context, for as long as the row sets
// stayed open.
func TestReadsWaitWithTheirContext(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "r.db"), &store.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now()
	key := store.RecordKey{Scope: "s", RunID: "r", ToolCallID: "a"}
	if _, _, err := s.Claim(t.Context(), store.Record{RecordKey: key, Fingerprint: "f", State: store.StateStarted,
		Owner: "o", Executor: "e", LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}

	release := holdReads(t, s, 2)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	err = within(t, "GetRecord with the pool held", func() error {
		_, err := s.GetRecord(ctx, key)
		return err
	}, release)
	if !errors.Is(err, context.DeadlineExceeded) {
		release()
		t.Fatalf("GetRecord with the pool held: %v, want its context's deadline", err)
	}
	qctx, qcancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer qcancel()
	err = within(t, "Query with the pool held", func() error {
		rows, err := s.DB().Query(qctx, `SELECT tool_call_id FROM journal`)
		if err == nil {
			rows.Close()
		}
		return err
	}, release)
	release()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Query with the pool held: %v, want its context's deadline", err)
	}

	// The pool is free again, and every read gives its turn back.
	for i := range 10 {
		got, err := s.GetRecord(t.Context(), key)
		if err != nil || got.Owner != "o" {
			t.Fatalf("read %d after the row sets closed: %+v, %v", i, got, err)
		}
		rows, err := s.DB().Query(t.Context(), `SELECT tool_call_id FROM journal`)
		if err != nil {
			t.Fatalf("query %d: %v", i, err)
		}
		n := 0
		for rows.Next() {
			n++
		}
		rows.Close()
		if n != 1 {
			t.Fatalf("query %d read %d rows, want 1", i, n)
		}
	}
	// A row whose statement failed gives its turn back too.
	for i := range 3 {
		var x int
		if err := s.DB().QueryRow(t.Context(), `SELECT no_such_column FROM journal`).Scan(&x); err == nil {
			t.Fatalf("bad read %d: no error", i)
		}
	}
	var n int
	if err := s.DB().QueryRow(t.Context(), `SELECT COUNT(*) FROM journal`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("count after failed reads: %d, %v", n, err)
	}
}

// TestWritesReturningUseTheWriter: a write that returns rows (DELETE ...
// RETURNING, as TakeConnectFlow runs) waits for the writer's queue like
// every other write, and so gives up with its context while another
// transaction of the process holds the write lock, taking nothing; then
// it runs, and takes the flow exactly once. Before, it ran on a pool
// connection and waited in SQLite's busy handler, past its context, for
// up to the busy timeout (30 s here).
func TestWritesReturningUseTheWriter(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "w.db"), &store.Options{BusyTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now()
	if err := s.PutConnectFlow(t.Context(), store.ConnectFlow{ID: "flow-1", Server: "srv", Subject: "alice",
		Sealed: []byte("sealed"), ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}

	release := holdWriter(t, s)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	err = within(t, "TakeConnectFlow while the writer is held", func() error {
		f, ok, err := s.TakeConnectFlow(ctx, "flow-1", now)
		if err == nil {
			return fmt.Errorf("took %+v (ok=%v) while another transaction held the write lock", f, ok)
		}
		return err
	}, func() { _ = release() })
	if rerr := release(); rerr != nil {
		t.Fatal(rerr)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("TakeConnectFlow while the writer is held: %v, want its context's deadline", err)
	}

	f, ok, err := s.TakeConnectFlow(t.Context(), "flow-1", now)
	if err != nil || !ok || f.Subject != "alice" || string(f.Sealed) != "sealed" {
		t.Fatalf("take after the writer was released: %+v, %v, %v", f, ok, err)
	}
	if _, ok, err := s.TakeConnectFlow(t.Context(), "flow-1", now); err != nil || ok {
		t.Fatalf("second take: ok=%v, %v (want the flow gone)", ok, err)
	}
}

// TestRowsReadToTheirEndGiveBackTheSlot: on a pool of one, rows read to
// their end hold no read slot, though not yet closed (a method's deferred
// Close runs after whatever it does next), so the next read runs; rows
// still being read hold it, and a second read waits for its context. The
// gateway's start-up hung on the first case: every server's
// OpenObservations read its empty rows, then asked for the server's
// baseline version before its deferred Close, holding every slot.
func TestRowsReadToTheirEndGiveBackTheSlot(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "g.db"), &store.Options{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.PutServer(t.Context(), store.Server{ID: "p/s", Name: "s", Type: "stdio"}); err != nil {
		t.Fatal(err)
	}
	rows, err := s.DB().Query(t.Context(), `SELECT id FROM servers`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if !rows.Next() {
		t.Fatal("no row")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	_, err = s.BaselineVersion(ctx, "p/s")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a read while rows are being read on a pool of one: %v, want it to wait for its context", err)
	}
	for rows.Next() {
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if v, err := s.BaselineVersion(ctx, "p/s"); err != nil || v != 0 {
		t.Fatalf("a read after the rows were read to their end, before their Close: %d, %v", v, err)
	}
}
