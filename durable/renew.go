package durable

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

// renew renews the lease every Lease/3 until the returned stop is called;
// stop waits for a renewal under way to end. No goroutine waits meanwhile:
// one timer is armed, and only its firing (after Lease/3, so only for a
// long effect) runs a renewal, which arms it again.
func (j *Journal) renew(ctx context.Context, key store.RecordKey, ikey string) (stop func()) {
	r := &renewal{j: j, ctx: ctx, key: key, ikey: ikey, every: max(j.o.Lease/3, time.Millisecond)}
	r.mu.Lock()
	r.t = time.AfterFunc(r.every, r.fire)
	r.mu.Unlock()
	return r.stop
}

// renewal renews one held lease (see renew).
type renewal struct {
	j     *Journal
	ctx   context.Context
	key   store.RecordKey
	ikey  string
	every time.Duration

	mu      sync.Mutex
	t       *time.Timer
	stopped bool
	running sync.WaitGroup // a renewal under way
}

// fire renews the lease once and arms the timer again, unless the renewal
// was stopped, the call's context ended, or the lease is gone.
func (r *renewal) fire() {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return
	}
	r.running.Add(1)
	r.mu.Unlock()
	defer r.running.Done()
	if r.ctx.Err() != nil {
		return
	}
	rctx, cancel := context.WithTimeout(r.ctx, r.every)
	now := r.j.o.Clock()
	err := r.j.s.RenewLease(rctx, r.key, r.j.o.Executor, now.Add(r.j.o.Lease))
	if err == nil && r.j.own != nil {
		// An effect longer than half the executor's window (the TTL)
		// keeps it alive too; otherwise a clock comparison.
		if aerr := r.j.own.Alive(rctx, now); aerr != nil {
			r.j.log.Warn("durable: extending the journal's executor failed", "key", r.ikey, "err", aerr)
		}
	}
	cancel()
	if err != nil {
		r.j.log.Warn("durable: lease renewal failed", "key", r.ikey, "err", err)
		if errors.Is(err, store.ErrLeaseLost) || errors.Is(err, store.ErrNotStarted) || errors.Is(err, store.ErrNotFound) {
			return
		}
	}
	r.mu.Lock()
	if !r.stopped {
		r.t.Reset(r.every)
	}
	r.mu.Unlock()
}

// stop ends the renewals: the timer is stopped and a renewal under way is
// waited for. It may be called more than once.
func (r *renewal) stop() {
	r.mu.Lock()
	r.stopped = true
	r.t.Stop()
	r.mu.Unlock()
	r.running.Wait()
}
