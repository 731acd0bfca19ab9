package relist

import (
	"context"
	"time"
)

// First is Retry's first wait: a server that could not be reached is
// tried again about a second later, then after twice each wait before.
const First = time.Second

// Retry calls try until it reports true or ctx ends, waiting between
// tries (First, doubling up to most, jittered): the first try comes after
// the first wait, not at once. A try runs only while it holds a slot of
// sem, which every Retry of one fleet shares: at most cap(sem) tries run
// at once however many servers are down. Retry returns when try reported
// true or ctx ended; it never outlives ctx by more than the try running
// then.
func Retry(ctx context.Context, sem chan struct{}, most time.Duration, try func(context.Context) bool) {
	wait := min(First, max(most, time.Millisecond))
	timer := time.NewTimer(Jitter(wait))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		done := try(ctx)
		<-sem
		if done {
			return
		}
		wait = min(2*wait, max(most, wait))
		timer.Reset(Jitter(wait))
	}
}
