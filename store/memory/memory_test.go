package memory_test

import (
	"testing"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/storetest"
	"github.com/gatehouse-dev/gatehouse/store/internal/storetest/audittest"
	"github.com/gatehouse-dev/gatehouse/store/internal/storetest/conntest"
	"github.com/gatehouse-dev/gatehouse/store/internal/storetest/sesstest"
	"github.com/gatehouse-dev/gatehouse/store/memory"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := memory.New(nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func TestClosed(t *testing.T) {
	s, err := memory.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := s.ListServers(t.Context()); err != store.ErrClosed {
		t.Fatalf("after Close: %v, want ErrClosed", err)
	}
}

func TestAuditJournalConformance(t *testing.T) {
	audittest.RunJournal(t, func(t *testing.T) store.AuditStore {
		s, err := memory.New(nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func TestAuditConformance(t *testing.T) {
	audittest.Run(t, func(t *testing.T) store.AuditStore {
		s, err := memory.New(nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func TestConnectionConformance(t *testing.T) {
	conntest.Run(t, func(t *testing.T) (store.Store, store.Store) {
		s, err := memory.New(nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s, s
	})
}

func TestSessionConformance(t *testing.T) {
	sesstest.Run(t, func(t *testing.T) (store.Store, store.Store) {
		s, err := memory.New(nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s, s
	})
}

// TestConcurrent: every operation the toolset and gateway use, from many
// goroutines at once (the memory store has no pool; its lock must not be
// held across another of its own operations).
func TestConcurrent(t *testing.T) {
	s, err := memory.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	storetest.Concurrent(t, s)
}
