package toolset

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/diag"
	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/trust"
)

// wake projects one server from its stored row: no connection, no launch,
// no request. It reads the store and nothing else, and writes nothing.
func (c *conn) wake(ctx context.Context) listing {
	j, dropped, err := c.ts.ledger.Wake(ctx, c.trusted())
	if err != nil {
		c.asleep = true
		return c.skipped(diag.New(diag.ConnectionFailure, "7.2.2", c.name, "server %q is skipped: %v", c.name, err))
	}
	l := c.judgedListing(j)
	l.pending = true
	if dropped != nil {
		// The catalogue is a cache: drop it. The reconcile lists the
		// server and judges the listing against the baseline.
		d := diag.New(diag.ConnectionFailure, "7.2.2", c.name,
			"the stored tool catalogue of server %q is dropped (%v); its tools appear once the server is reconciled", c.name, dropped)
		c.ts.log.Warn("toolset: stored catalogue dropped", "server", c.name, "reason", d.Message)
		l.diag = &d
		l.drift = nil
	}
	return l
}

// update replaces a server's listing and rebuilds the tool map. The
// caller calls t.changed once it holds no lock of the server.
func (t *Toolset) update(c *conn, l listing) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || t.cat == nil {
		return
	}
	t.listings[c.idx] = l
	c.judged.Add(1)
	t.cat = t.build(t.listings, t.cat)
}

// observedUpTo records that a server's drift observations were read up to
// id, leaving its listing as it is.
func (t *Toolset) observedUpTo(c *conn, id int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := &t.listings[c.idx]
	l.observed = max(l.observed, id)
}

// changed calls Options.OnChange. Callers hold no lock, so OnChange may
// call any method of the Toolset.
func (t *Toolset) changed() {
	if t.opts.OnChange != nil && !t.isClosed() {
		t.opts.OnChange()
	}
}

// listingOf returns a server's current listing.
func (t *Toolset) listingOf(c *conn) listing {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.listings[c.idx]
}

// pending reports whether a server's tools come from the store and have not
// been reconciled yet.
func (t *Toolset) pending(c *conn) bool {
	return t.listingOf(c).pending
}

// startReconcile reconciles every woken server in the background, once.
func (t *Toolset) startReconcile() {
	t.reconcileOnce.Do(func() {
		started := t.background(func() {
			defer close(t.reconciled)
			_ = t.reconcileAll(t.life, true)
		})
		if !started {
			close(t.reconciled)
		}
	})
}

// background runs fn in a goroutine Close waits for, unless the toolset
// is closed: then fn does not run and background reports false.
func (t *Toolset) background(fn func()) bool {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return false
	}
	t.bg.Add(1)
	t.mu.Unlock()
	go func() {
		defer t.bg.Done()
		fn()
	}()
	return true
}

// Reconcile connects every server, lists its tools, judges them against
// their trusted baselines and corrects the tool map in place: calls made
// from an earlier Tools snapshot are routed by the corrected map (a tool
// gone is tool_withdrawn, a changed one quarantined). A server that fails
// keeps what it had (a woken server keeps its stored tools, and its calls
// try again) and gets a diagnostic. A woken server without a usable row is
// never connected. The error is non-nil only if ctx ended or the toolset
// is closed.
func (t *Toolset) Reconcile(ctx context.Context) error {
	if _, err := t.ensure(ctx); err != nil {
		return err
	}
	return t.reconcileAll(ctx, false)
}

func (t *Toolset) reconcileAll(ctx context.Context, onlyPending bool) error {
	var wg sync.WaitGroup
	for _, c := range t.conns {
		if c.skip || c.asleep {
			continue
		}
		wg.Go(func() { _ = c.reconcile(ctx, onlyPending) })
	}
	wg.Wait()
	if t.isClosed() {
		return &Error{Code: CodeClosed}
	}
	return ctx.Err()
}

// AwaitReconcile waits until the background reconcile that a wake starts
// has ended (at once when there is none: no Wake, DeferReconcile, or not
// yet woken). It returns ctx.Err() if ctx ends first.
func (t *Toolset) AwaitReconcile(ctx context.Context) error {
	if !t.opts.Wake || t.opts.DeferReconcile {
		return nil
	}
	t.mu.Lock()
	started := t.cat != nil
	t.mu.Unlock()
	if !started {
		return nil
	}
	select {
	case <-t.reconciled:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// reconcile lists one server and applies the listing. With onlyPending it
// does nothing for a server already reconciled (a Call got there first).
func (c *conn) reconcile(ctx context.Context, onlyPending bool) error {
	return c.reconcileWith(ctx, onlyPending, false)
}

// reconcileQueued is the re-listing relistSoon queued: it clears the
// queued bit once it holds the listing lock.
func (c *conn) reconcileQueued(ctx context.Context) error {
	return c.reconcileWith(ctx, false, true)
}

func (c *conn) reconcileWith(ctx context.Context, onlyPending, queued bool) error {
	err := c.reconcileLocked(ctx, onlyPending, queued)
	var te *Error
	if err == nil || errors.As(err, &te) && te.Code == CodeConnectionFailed {
		c.ts.changed()
	}
	if errors.Is(err, errNothingToDo) {
		return nil
	}
	return err
}

// errNothingToDo: the server was already reconciled.
var errNothingToDo = errors.New("toolset: already reconciled")

func (c *conn) reconcileLocked(ctx context.Context, onlyPending, queued bool) error {
	c.relistMu.Lock()
	defer c.relistMu.Unlock()
	if queued {
		// A change announced from now on queues another re-listing.
		c.relist.Clear()
	}
	if onlyPending && !c.ts.pending(c) {
		return errNothingToDo
	}
	lctx, cancel := c.connectContext(ctx)
	defer cancel()
	if err := c.refreshToken(lctx); err != nil {
		return c.reconcileFailed(fmt.Errorf("auth: %w", err))
	}
	p, sess, err := c.list(lctx)
	if err != nil {
		var pe *plugin.Error
		if errors.As(err, &pe) {
			return c.reconcileFailed(errors.New(pe.Diagnostic().Message))
		}
		return c.reconcileFailed(err)
	}
	fp := trust.Fingerprint(c.name, p)
	if cur := c.ts.listingOf(c); cur.ok && !cur.pending && cur.diag == nil && cur.print == fp.Print() {
		// The same listing as the last one: nothing to judge, record or
		// announce (a recheck of a quiet server costs one listing).
		c.judgedNow(sess)
		return errNothingToDo
	}
	l := c.record(lctx, p, fp)
	if !l.ok {
		return c.reconcileFailed(errors.New(l.diag.Message))
	}
	c.judgedNow(sess)
	c.logDrift(&l)
	c.ts.update(c, l)
	return nil
}

// reconcileFailed keeps the server's tools (a woken server stays pending,
// so its calls try again) and records why.
func (c *conn) reconcileFailed(err error) error {
	d := diag.New(diag.ConnectionFailure, "7.2.2", c.name, "server %q could not be reconciled: %v", c.name, err)
	c.ts.log.Warn("toolset: reconcile failed", "server", c.name, "reason", d.Message)
	l := c.ts.listingOf(c)
	l.diag = &d
	c.ts.update(c, l)
	return &Error{Code: CodeConnectionFailed, Server: c.name, Err: err}
}

// WatchTrust polls the store every interval (0 means one second) for what
// other processes decided about this toolset's servers: a re-trust
// (`gatehouse trust`, another replica's Retrust) and drift another
// instance observed (store.DriftStore). It re-applies the baseline and
// the fleet's record to each changed server's last listing: quarantined
// tools become active again after a trust, and a tool another replica saw
// change is quarantined here too, whether or not this process's own
// connection has seen the change. One tick is one store query
// (DriftHeads) when nothing changed. It blocks until ctx ends or the
// toolset is closed, and returns ctx.Err() or ErrClosed; run it in its
// own goroutine. A store error is logged and retried at the next tick.
//
// It is trust.Ledger.Watch with ApplyTrust: a process with other parts
// under trust (a gateway's skills) runs one Watch for all of them instead.
func (t *Toolset) WatchTrust(ctx context.Context, every time.Duration) error {
	if _, err := t.ensure(ctx); err != nil {
		return err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(t.life, cancel)()
	err := t.ledger.Watch(wctx, every, t.ApplyTrust)
	if ctx.Err() == nil && t.life.Err() != nil {
		return &Error{Code: CodeClosed}
	}
	return err
}

// ApplyTrust re-judges every server whose baseline version or drift
// observations moved in heads (as trust.Ledger.Heads reads them) since its
// listing was judged: one tick of WatchTrust, for a process that polls the
// trust state once for all its parts (trust.Ledger.Watch). Before the
// toolset's first use, and after Close, it does nothing.
func (t *Toolset) ApplyTrust(ctx context.Context, heads map[string]store.DriftHead) error {
	t.mu.Lock()
	loaded := t.cat != nil && !t.closed
	t.mu.Unlock()
	if !loaded {
		return nil
	}
	var errs []error
	for _, c := range t.conns {
		if c.skip || c.asleep {
			continue
		}
		h, ok := heads[c.id]
		cur := t.listingOf(c)
		if !ok || !cur.ok || h.BaselineVersion == cur.version && h.LastObservation <= cur.observed {
			continue
		}
		if err := c.checkTrust(ctx, h.LastObservation); err != nil {
			errs = append(errs, fmt.Errorf("toolset: server %s: %w", c.name, err))
		}
	}
	return errors.Join(errs...)
}

// checkTrust re-judges the server's last listing against the stored
// baseline and the fleet's record. head is the server's highest
// observation ID as polled before (DriftHeads): every observation up to it
// is open (and so read here) or closed, so the next poll need not come
// back for it.
func (c *conn) checkTrust(ctx context.Context, head int64) error {
	changed, err := c.checkTrustLocked(ctx, head)
	if changed {
		c.ts.changed()
		c.ts.announceItems(c)
	}
	return err
}

func (c *conn) checkTrustLocked(ctx context.Context, head int64) (bool, error) {
	c.relistMu.Lock()
	defer c.relistMu.Unlock()
	cur := c.ts.listingOf(c)
	if !cur.ok {
		return false, nil
	}
	j, changed, err := c.ts.ledger.Rejudge(ctx, c.trusted(), cur.judgment(), head)
	if err != nil {
		return false, err
	}
	if !changed {
		// Nothing decided differently: no rebuild, no OnChange; remember
		// how far the record was read.
		c.ts.observedUpTo(c, j.Observed)
		return false, nil
	}
	l := c.judgedListing(j)
	l.diag, l.pending = cur.diag, cur.pending
	c.ts.update(c, l)
	return true, nil
}
