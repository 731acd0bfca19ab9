package server

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/postgres"
	"github.com/gatehouse-dev/gatehouse/store/sqlite"
)

// countedStore is a real store whose IncrBy calls are counted (every one
// is a write, a transaction on SQLite, a round trip on PostgreSQL). With
// lose set, IncrBy commits and then reports an error, as when the answer
// of a committed write is lost.
type countedStore struct {
	store.Store
	writes atomic.Int64
	lose   atomic.Bool
}

func (c *countedStore) IncrBy(ctx context.Context, key string, delta int64, expiresAt time.Time) (int64, error) {
	c.writes.Add(1)
	n, err := c.Store.IncrBy(ctx, key, delta, expiresAt)
	if err == nil && c.lose.Load() {
		return 0, errors.New("the answer was lost")
	}
	return n, err
}

// sharedStores are the stores a shared rate limit is tested on: each
// opens a new handle on one database per test (as two processes would).
var sharedStores = []struct {
	name string
	db   func(t *testing.T) func(t *testing.T) store.Store
}{
	{"sqlite", func(t *testing.T) func(t *testing.T) store.Store {
		path := filepath.Join(t.TempDir(), "rl.db")
		return func(t *testing.T) store.Store {
			st, err := sqlite.Open(context.Background(), path, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}
	}},
	{"postgres", func(t *testing.T) func(t *testing.T) store.Store {
		dsn := pgSchema(t)
		return func(t *testing.T) store.Store {
			st, err := postgres.Open(context.Background(), dsn, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}
	}},
}

// sharedServer is a server whose rate limit of maxCalls per hour is kept in
// c, on the clock now.
func sharedServer(t *testing.T, eff *effects, c Counters, maxCalls int, now func() time.Time) *Server {
	t.Helper()
	s, err := New(Options{
		Tools:     testTools(eff, nil),
		Identify:  identify,
		AllowTool: testAllow,
		RateLimit: &RateLimit{MaxCalls: maxCalls, Window: time.Hour, Counters: c},
		Clock:     now,
		Logger:    quietLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func fixedClock() time.Time { return childNow }

// spend asks s for permits of subject until it refuses one and returns how
// many it allowed.
func spend(t *testing.T, s *Server, subject Subject) int {
	t.Helper()
	n := 0
	for {
		ok, wait, err := s.RateLimit(context.Background(), subject, "t")
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			if want := 30 * time.Minute; wait != want {
				t.Fatalf("refused with retry after %v, want %v (the window's end)", wait, want)
			}
			return n
		}
		n++
	}
}

func counterOf(t *testing.T, st store.Store, subject Subject) int64 {
	t.Helper()
	n, err := st.GetCounter(context.Background(), sharedKey(subject, windowStart(childNow, time.Hour)), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSharedRateLimitBlocksExact: 64 goroutines of one subject spend a
// shared quota of 1000 in one process. Exactly 1000 calls are allowed (no
// permit spent twice, none lost), the counter reads 1000, and the store
// is written a handful of times, not once per call: the goroutines share
// each block and never fetch two at once.
func TestSharedRateLimitBlocksExact(t *testing.T) {
	for _, sc := range sharedStores {
		t.Run(sc.name, func(t *testing.T) {
			open := sc.db(t)
			st := &countedStore{Store: open(t)}
			s := sharedServer(t, &effects{}, st, 1000, fixedClock)
			var allowed atomic.Int64
			var wg sync.WaitGroup
			for range 64 {
				wg.Go(func() {
					for {
						ok, _, err := s.RateLimit(context.Background(), "alice", "t")
						if err != nil {
							t.Error(err)
							return
						}
						if !ok {
							return
						}
						allowed.Add(1)
					}
				})
			}
			wg.Wait()
			if n := allowed.Load(); n != 1000 {
				t.Fatalf("allowed %d calls of a quota of 1000", n)
			}
			if n := counterOf(t, open(t), "alice"); n != 1000 {
				t.Fatalf("the counter reads %d, want 1000", n)
			}
			// Blocks of 1, 2, 4 ... 128, then 250 (a quarter), the last
			// partial with its overshoot given back, and one refused probe
			// given back: about 16. One per call would be 1000 and more.
			if w := st.writes.Load(); w > 20 {
				t.Fatalf("%d store writes for 1000 calls", w)
			}
			t.Logf("%d store writes for 1000 calls", st.writes.Load())
		})
	}
}

// TestSharedRateLimitIdleReturn: replica A takes a block and goes idle; it
// gives back what it did not spend (the counter read back from the store
// falls to what A spent), and replica B then gets every remaining permit:
// the two together spend the whole quota, no more.
func TestSharedRateLimitIdleReturn(t *testing.T) {
	for _, sc := range sharedStores {
		t.Run(sc.name, func(t *testing.T) {
			open := sc.db(t)
			a := sharedServer(t, &effects{}, open(t), 40, fixedClock)
			b := sharedServer(t, &effects{}, open(t), 40, fixedClock)
			reader := open(t)
			// Blocks of 1, 2 and 4: 4 spent, 3 held by A.
			for range 4 {
				if ok, _, err := a.RateLimit(context.Background(), "alice", "t"); !ok || err != nil {
					t.Fatalf("A refused: %v", err)
				}
			}
			if n := counterOf(t, reader, "alice"); n != 7 {
				t.Fatalf("after 4 calls on A the counter reads %d, want 7 (4 spent, 3 held)", n)
			}
			deadline := time.Now().Add(30 * time.Second)
			for counterOf(t, reader, "alice") != 4 {
				if time.Now().After(deadline) {
					t.Fatalf("A never gave back its unspent permits: the counter reads %d", counterOf(t, reader, "alice"))
				}
				time.Sleep(20 * time.Millisecond)
			}
			if n := spend(t, b, "alice"); n != 36 {
				t.Fatalf("B allowed %d calls after A spent 4 of 40, want 36", n)
			}
			if n := counterOf(t, reader, "alice"); n != 40 {
				t.Fatalf("the counter reads %d, want 40", n)
			}
			if ok, _, _ := a.RateLimit(context.Background(), "alice", "t"); ok {
				t.Fatal("A allowed a call past the quota")
			}
		})
	}
}

// TestSharedRateLimitCloseGivesBack: a closed server gives back the permits
// it holds at once, so another replica can spend them.
func TestSharedRateLimitCloseGivesBack(t *testing.T) {
	open := sharedStores[0].db(t)
	a := sharedServer(t, &effects{}, open(t), 40, fixedClock)
	b := sharedServer(t, &effects{}, open(t), 40, fixedClock)
	for range 4 {
		a.RateLimit(context.Background(), "alice", "t")
	}
	a.Close()
	if n := counterOf(t, open(t), "alice"); n != 4 {
		t.Fatalf("after Close the counter reads %d, want 4 (what A spent)", n)
	}
	if n := spend(t, b, "alice"); n != 36 {
		t.Fatalf("B allowed %d, want 36", n)
	}
	// A closed server still counts, one permit at a time.
	if ok, _, _ := a.RateLimit(context.Background(), "alice", "t"); ok {
		t.Fatal("a closed server allowed a call past the quota")
	}
}

// TestSharedRateLimitStoreError: a store that fails never allows a call
// beyond the permits already held (they were counted before it failed):
// over HTTP the call is refused and its effect does not run. A write whose
// answer is lost counts its permits and allows nothing.
func TestSharedRateLimitStoreError(t *testing.T) {
	open := sharedStores[0].db(t)
	st := &countedStore{Store: open(t)}
	var eff effects
	s := sharedServer(t, &eff, st, 1000, fixedClock)
	cs := connect(t, serveHTTP(t, s, nil), "tok-alice") // initialize: a block of 1
	call := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "charge", Arguments: chargeIn{Account: "a"}})
		if err == nil && r.IsError {
			t.Fatalf("refused as %+v", r.Content)
		}
		return err
	}
	if err := call(); err != nil { // a block of 2: one spent, one held
		t.Fatal(err)
	}
	st.lose.Store(true)
	if err := call(); err != nil { // the held permit
		t.Fatalf("the held permit: %v", err)
	}
	for range 3 {
		if err := call(); err == nil {
			t.Fatal("a call was allowed on a store write that reported an error")
		}
	}
	if n := eff.total(); n != 2 {
		t.Fatalf("%d effects ran, want 2", n)
	}
	// The lost writes counted their permits (a block of 4, then 1 each
	// after a failure): fewer calls remain, never more.
	if n := counterOf(t, open(t), "alice"); n != 1+2+4+1+1 {
		t.Fatalf("the counter reads %d, want 9", n)
	}
	st.lose.Store(false)
	st.Store.Close() // a real failure: the store is gone
	if err := call(); err == nil {
		t.Fatal("a call was allowed with the store closed")
	}
	if n := eff.total(); n != 2 {
		t.Fatalf("%d effects ran, want 2", n)
	}
}

// TestSharedRateLimitWindowTurns: when the window turns the blocks of the
// last one are dropped and the new window has the whole quota; a refusal
// says how long until the window ends.
func TestSharedRateLimitWindowTurns(t *testing.T) {
	open := sharedStores[0].db(t)
	var mu sync.Mutex
	now := childNow
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s := sharedServer(t, &effects{}, open(t), 10, clock)
	if n := spend(t, s, "alice"); n != 10 {
		t.Fatalf("allowed %d of 10", n)
	}
	mu.Lock()
	now = now.Add(time.Hour)
	mu.Unlock()
	ok, _, err := s.RateLimit(context.Background(), "alice", "t")
	if !ok || err != nil {
		t.Fatalf("the next window refused: %v", err)
	}
	for range 9 {
		s.RateLimit(context.Background(), "alice", "t")
	}
	ok, wait, _ := s.RateLimit(context.Background(), "alice", "t")
	if ok || wait != 30*time.Minute {
		t.Fatalf("11th call of the window: ok %v, retry after %v", ok, wait)
	}
}
