package relist

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// limited counts runs and the most that ran at once.
type limited struct {
	mu        sync.Mutex
	now, most int
	runs      []int
}

func (l *limited) run(_ context.Context, i int) {
	l.mu.Lock()
	l.now++
	l.most = max(l.most, l.now)
	l.runs = append(l.runs, i)
	l.mu.Unlock()
	time.Sleep(5 * time.Millisecond)
	l.mu.Lock()
	l.now--
	l.mu.Unlock()
}

// TestAll runs every due server once, never more than the limit at once,
// and returns only when they have returned.
func TestAll(t *testing.T) {
	var l limited
	All(context.Background(), 10, 2, func(i int) bool { return i != 3 }, l.run)
	if len(l.runs) != 9 || l.most > 2 || l.most < 1 || l.now != 0 {
		t.Fatalf("runs %v, at most %d at once, %d still running", l.runs, l.most, l.now)
	}
	for _, i := range l.runs {
		if i == 3 {
			t.Fatal("ran a server that was not due")
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var none limited
	All(ctx, 10, 1, func(int) bool { return true }, none.run)
	if len(none.runs) > 1 {
		t.Fatalf("ran %d after the context ended", len(none.runs))
	}
}

// TestSpread visits the servers in turn, about every/n apart, skipping
// those not due, and returns once its context ends and its runs returned.
func TestSpread(t *testing.T) {
	var l limited
	ctx, cancel := context.WithCancel(context.Background())
	var seen atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		Spread(ctx, 40*time.Millisecond, 4, 1, func(i int) bool { seen.Add(1); return i%2 == 0 }, l.run)
	}()
	for seen.Load() < 12 { // three rounds of four
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.now != 0 || l.most != 1 {
		t.Fatalf("%d still running, %d at once", l.now, l.most)
	}
	evens := 0
	for _, i := range l.runs {
		if i%2 != 0 {
			t.Fatalf("ran server %d, which was not due", i)
		}
		evens++
	}
	if evens < 5 {
		t.Fatalf("ran %v in three rounds", l.runs)
	}
	// No servers, or no interval: it only waits for its context.
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	Spread(ctx, time.Second, 0, 1, nil, nil)
	Spread(ctx, 0, 3, 1, nil, nil)
}

func TestJitter(t *testing.T) {
	for range 1000 {
		if j := Jitter(time.Second); j < 900*time.Millisecond || j > 1100*time.Millisecond {
			t.Fatalf("Jitter(1s) = %v", j)
		}
	}
	if Jitter(1) != 1 || Jitter(0) != 0 {
		t.Fatal("Jitter of a tiny duration must be itself")
	}
}
