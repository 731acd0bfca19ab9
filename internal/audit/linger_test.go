package audit_test

import (
	"context"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/audit"
	"github.com/gatehouse-dev/gatehouse/store"
)

// TestLingerSleepsThroughEntries: the writer gathers entries for Linger
// without committing them, and a Flush, a full batch waiting or Close ends
// the wait at once (a linger of an hour would otherwise time each out).
func TestLingerSleepsThroughEntries(t *testing.T) {
	ctx := context.Background()
	e := store.AuditEntry{Kind: audit.KindCall, Subject: "alice", Server: "echo", Tool: "echo", Outcome: "ok"}
	count := func(st store.AuditStore) int64 {
		h, err := st.AuditHead(ctx, "c")
		if err != nil {
			t.Fatal(err)
		}
		return h.Last
	}

	t.Run("flush", func(t *testing.T) {
		st := newStore(t)
		w, err := audit.NewWriter(ctx, st, &audit.WriterOptions{Chain: "c", Instance: "i", Linger: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		for range 3 {
			if err := w.Append(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(50 * time.Millisecond)
		if n := count(st); n != 0 {
			t.Fatalf("%d entries committed during the linger, want 0", n)
		}
		fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := w.Flush(fctx); err != nil {
			t.Fatalf("Flush during the linger: %v", err)
		}
		if n := count(st); n != 3 {
			t.Fatalf("%d entries after Flush, want 3", n)
		}
	})

	t.Run("full batch", func(t *testing.T) {
		st := newStore(t)
		w, err := audit.NewWriter(ctx, st, &audit.WriterOptions{Chain: "c", Instance: "i", Linger: time.Hour, Batch: 4})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		for range 5 {
			if err := w.Append(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		deadline := time.Now().Add(10 * time.Second)
		for count(st) < 4 {
			if time.Now().After(deadline) {
				t.Fatalf("a full batch waited for the linger: %d committed", count(st))
			}
			time.Sleep(5 * time.Millisecond)
		}
	})

	t.Run("close", func(t *testing.T) {
		st := newStore(t)
		w, err := audit.NewWriter(ctx, st, &audit.WriterOptions{Chain: "c", Instance: "i", Linger: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
		done := make(chan error, 1)
		go func() { done <- w.Close() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Close waited for the linger")
		}
		if n := count(st); n != 1 {
			t.Fatalf("%d entries after Close, want 1", n)
		}
	})
}
