package relist

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestRetry: tries go on until one reports true, never more at once than
// the shared semaphore allows, and Retry returns when its context ends.
func TestRetry(t *testing.T) {
	sem := make(chan struct{}, 2)
	var running, peak, tries atomic.Int32
	try := func(context.Context) bool {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(5 * time.Millisecond) // overlap with the other servers' tries
		return tries.Add(1) >= 12
	}
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() { Retry(context.Background(), sem, 10*time.Millisecond, try) })
	}
	wg.Wait()
	if p := peak.Load(); p > 2 {
		t.Errorf("%d tries ran at once; the semaphore allows 2", p)
	}
	if n := tries.Load(); n < 12 {
		t.Errorf("%d tries; Retry returned before a try reported true", n)
	}

	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		Retry(ctx, sem, time.Hour, func(context.Context) bool { return false })
	}()
	cancel()
	<-ended
}
