package relist

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// Spread runs run(i) for each of n servers once about every interval
// until ctx ends, spread over the interval: the servers are taken one
// after the other, a jittered every/n apart (Jitter; processes started
// together drift apart), so a fleet costs one re-listing at a time rather
// than a burst that would compete with calls. A server for which due(i)
// is false is skipped this time. At most limit run at once, so a slow
// server holds up nobody. Spread returns when ctx ended and every run it
// started returned.
func Spread(ctx context.Context, every time.Duration, n, limit int, due func(int) bool, run func(context.Context, int)) {
	if n <= 0 || every <= 0 {
		<-ctx.Done()
		return
	}
	sem := make(chan struct{}, max(1, limit))
	var wg sync.WaitGroup
	defer wg.Wait()
	gap := every / time.Duration(n)
	timer := time.NewTimer(Jitter(gap))
	defer timer.Stop()
	for {
		for i := range n {
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
			timer.Reset(Jitter(gap))
			if !due(i) {
				continue
			}
			if !start(ctx, sem, &wg, func() { run(ctx, i) }) {
				return
			}
		}
	}
}

// All runs run(i) now for each of n servers for which due(i) holds, at
// most limit at once, and returns when they have returned (or, once ctx
// ended, without starting more).
func All(ctx context.Context, n, limit int, due func(int) bool, run func(context.Context, int)) {
	sem := make(chan struct{}, max(1, limit))
	var wg sync.WaitGroup
	defer wg.Wait()
	for i := range n {
		if due(i) && !start(ctx, sem, &wg, func() { run(ctx, i) }) {
			return
		}
	}
}

// start runs fn in a goroutine of wg once sem has room; false when ctx
// ended first.
func start(ctx context.Context, sem chan struct{}, wg *sync.WaitGroup, fn func()) bool {
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	wg.Go(func() {
		defer func() { <-sem }()
		fn()
	})
	return true
}

// Jitter returns d moved by a random amount of at most d/10 either way.
func Jitter(d time.Duration) time.Duration {
	span := int64(d / 5)
	if span <= 0 {
		return d
	}
	return d - d/10 + time.Duration(rand.Int64N(span+1))
}
