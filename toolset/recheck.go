package toolset

import (
	"context"
	"errors"

	"github.com/gatehouse-dev/gatehouse/toolset/internal/relist"
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
		// Every server about every interval, spread over it (one at a
		// time rather than a burst that would compete with calls).
		t.background(func() { relist.Spread(t.life, t.opts.Recheck, len(t.conns), recheckConcurrency, t.due, t.recheck) })
	})
}

// recheckRound re-lists every connected server now, at most
// recheckConcurrency at a time (RecheckNow).
func (t *Toolset) recheckRound(ctx context.Context) {
	relist.All(ctx, len(t.conns), recheckConcurrency, t.due, t.recheck)
}

// due reports whether a recheck would list server i: it runs, it is
// connected or was listed by a session since lost (one never connected is
// left to its first call, or to its tries), and no re-listing is already
// queued by its list_changed announcement (the recheck is coalesced with
// it). A served server whose session was lost, a reconnect having failed
// while it restarted, is listed again from a new session: otherwise the
// tools it came back with would not be judged until someone called one.
func (t *Toolset) due(i int) bool {
	c := t.conns[i]
	if c.skip || c.asleep || c.relist.Queued() {
		return false
	}
	if c.liveSession() != nil {
		return true
	}
	l := t.listingOf(c)
	return l.ok && !l.pending
}

// recheck re-lists one server and judges the listing (reconcile): a
// listing identical to the last one stops there; one that drifted is
// recorded, quarantined and announced (OnChange). When the listing fails
// on its session (the server restarted, the session expired), the session
// is re-established once and listed through the same checks, as a call
// would do: a server that came back with other tools is judged before
// anyone calls it. A server that still fails keeps its tools and its
// diagnostic says why.
func (t *Toolset) recheck(ctx context.Context, i int) {
	c := t.conns[i]
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
