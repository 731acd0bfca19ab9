package toolset

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// recheckConcurrency bounds how many servers one recheck round lists at
// once: a round over many servers is spread out instead of bursting.
const recheckConcurrency = 4

// startRecheck starts the background re-listing (Options.Recheck), once.
func (t *Toolset) startRecheck() {
	if t.opts.Recheck <= 0 {
		return
	}
	t.recheckOnce.Do(func() {
		t.background(func() { t.recheckLoop(t.life, t.opts.Recheck) })
	})
}

// recheckLoop runs a recheck round about every interval, jittered by up
// to a tenth either way (replicas started together drift apart), until
// ctx ends.
func (t *Toolset) recheckLoop(ctx context.Context, every time.Duration) {
	timer := time.NewTimer(jitter(every))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		t.recheckRound(ctx)
		timer.Reset(jitter(every))
	}
}

// jitter returns d moved by a random amount of at most d/10 either way.
func jitter(d time.Duration) time.Duration {
	span := int64(d / 5)
	if span <= 0 {
		return d
	}
	return d - d/10 + time.Duration(rand.Int64N(span+1))
}

// recheckRound re-lists every connected server, at most
// recheckConcurrency at a time, and judges each listing (reconcile): a
// listing identical to the last one stops there; one that drifted is
// recorded, quarantined and announced (OnChange). A server with a
// re-listing already queued by its list_changed announcement is left to
// it, one never connected (or whose session is gone) to its next call,
// and a server that fails keeps its tools and its diagnostic says why.
func (t *Toolset) recheckRound(ctx context.Context) {
	sem := make(chan struct{}, recheckConcurrency)
	var wg sync.WaitGroup
	for _, c := range t.conns {
		if c.skip || c.asleep || c.relist.Queued() || !c.connected() {
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return
		}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := c.reconcile(ctx, false); err != nil && ctx.Err() == nil {
				t.log.Debug("toolset: recheck", "server", c.name, "err", err)
			}
		})
	}
	wg.Wait()
}

// RecheckNow runs one recheck round now (what Options.Recheck runs on its
// schedule) and returns when it ended: every connected server re-listed
// and judged. It is for tests, benchmarks and operators' tools; the error
// is non-nil only if ctx ended or the toolset is closed.
func (t *Toolset) RecheckNow(ctx context.Context) error {
	if _, err := t.ensure(ctx); err != nil {
		return err
	}
	t.recheckRound(ctx)
	if t.isClosed() {
		return &Error{Code: CodeClosed}
	}
	return ctx.Err()
}

// connected reports whether the server has a live session.
func (c *conn) connected() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session != nil
}
