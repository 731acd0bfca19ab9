package toolset

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"
)

// recheckConcurrency bounds how many servers are re-listed at once by the
// recheck (a slow server does not hold up the others; a fleet does not
// burst).
const recheckConcurrency = 2

// startRecheck starts the background re-listing (Options.Recheck), once.
func (t *Toolset) startRecheck() {
	if t.opts.Recheck <= 0 {
		return
	}
	t.recheckOnce.Do(func() {
		t.background(func() { t.recheckLoop(t.life, t.opts.Recheck) })
	})
}

// recheckLoop re-lists every server once about every interval until ctx
// ends, spread over the interval: the servers are taken one after the
// other, a jittered interval/N apart (replicas started together drift
// apart), so a fleet of servers costs one listing at a time rather than a
// burst that would compete with calls. A server whose listing is slow
// holds up nobody: up to recheckConcurrency run at once.
func (t *Toolset) recheckLoop(ctx context.Context, every time.Duration) {
	sem := make(chan struct{}, recheckConcurrency)
	var wg sync.WaitGroup
	defer wg.Wait()
	gap := every / time.Duration(max(1, len(t.conns)))
	timer := time.NewTimer(jitter(gap))
	defer timer.Stop()
	for {
		for _, c := range t.conns {
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
			timer.Reset(jitter(gap))
			if !c.due() {
				continue
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			wg.Go(func() {
				defer func() { <-sem }()
				t.recheck(ctx, c)
			})
		}
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

// recheckRound re-lists every connected server now, at most
// recheckConcurrency at a time (RecheckNow).
func (t *Toolset) recheckRound(ctx context.Context) {
	sem := make(chan struct{}, recheckConcurrency)
	var wg sync.WaitGroup
	for _, c := range t.conns {
		if !c.due() {
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
			t.recheck(ctx, c)
		})
	}
	wg.Wait()
}

// due reports whether a recheck would list the server: it runs, it is
// connected (one never connected, or whose session is gone, is left to its
// next call), and no re-listing is already queued by its list_changed
// announcement (the recheck is coalesced with it).
func (c *conn) due() bool {
	return !c.skip && !c.asleep && !c.relist.Queued() && c.connected()
}

// recheck re-lists one server and judges the listing (reconcile): a
// listing identical to the last one stops there; one that drifted is
// recorded, quarantined and announced (OnChange). When the listing fails
// on its session (the server restarted, the session expired), the session
// is re-established once and listed through the same checks, as a call
// would do: a server that came back with other tools is judged before
// anyone calls it. A server that still fails keeps its tools and its
// diagnostic says why.
func (t *Toolset) recheck(ctx context.Context, c *conn) {
	old := c.liveSession()
	err := c.reconcile(ctx, false)
	var te *Error
	if err != nil && errors.As(err, &te) && te.Code == CodeConnectionFailed && old != nil && ctx.Err() == nil {
		_, err = c.reconnect(ctx, old)
	}
	if err != nil && ctx.Err() == nil {
		t.log.Debug("toolset: recheck", "server", c.name, "err", err)
	}
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

// connected reports whether the server has a session.
func (c *conn) connected() bool { return c.liveSession() != nil }

