package toolset

import (
	"context"

	"github.com/gatehouse-dev/gatehouse/diag"
	"github.com/gatehouse-dev/gatehouse/toolset/internal/relist"
)

// skipped is the listing of a server that is not served. Logged once by
// startRetries at the first load, or by its tries (relist.Skipped) while
// retried, or here (a served server's re-listing failed its checks).
func (c *conn) skipped(d diag.Diagnostic) listing {
	c.ts.mu.Lock()
	loaded := c.ts.cat != nil
	c.ts.mu.Unlock()
	if loaded && !c.quiet.Load() {
		c.ts.log.Warn("toolset: server skipped", "server", c.name, "rule", string(d.Rule), "reason", d.Message)
	}
	return listing{diag: &d}
}

// startRetries logs the skips of the first load (results: its listings)
// and starts the tries of every server it could not reach.
func (t *Toolset) startRetries(results []listing) {
	most := relist.Longest(t.opts.Recheck)
	for i, c := range t.conns {
		d := results[i].diag
		for j := 0; c.skip && d == nil && j < len(t.static); j++ { // Open's diagnostic
			if s := t.static[j]; s.Origin == c.name && s.Rule != diag.ServerNameCollision {
				d = &s
			}
		}
		if results[i].ok || d == nil {
			continue
		}
		why := relist.WhyOf(c.skip, c.asleep, d.Rule == diag.ConnectionFailure)
		if tries := relist.Skipped(t.log, c.name, string(d.Rule), d.Message, why, most); tries != nil {
			c.quiet.Store(true) // its listing failures are its tries'
			try := func(ctx context.Context) bool { return c.rejoin(ctx, tries) }
			t.background(func() { relist.Retry(t.life, t.retrySem, most, try) })
		}
	}
}

// rejoin tries a skipped server once. It reports true when it needs no more
// tries: it is listed (by this try, a Retrust, a Reconcile) or refused.
func (c *conn) rejoin(ctx context.Context, tries *relist.Tries) bool {
	l, listed := c.rejoinLocked(ctx, tries)
	if l.ok {
		c.quiet.Store(false)
		tries.Joined()
		if listed {
			c.ts.changed()
			c.ts.announceItems(c)
		}
		return true
	}
	return ctx.Err() != nil || tries.Failed(string(l.diag.Rule), l.diag.Message, l.diag.Rule == diag.ConnectionFailure)
}

// rejoinLocked makes one try under the listing lock (unless the server was
// listed meanwhile) and applies its listing; listed: this try listed it.
func (c *conn) rejoinLocked(ctx context.Context, tries *relist.Tries) (_ listing, listed bool) {
	c.relistMu.Lock()
	defer c.relistMu.Unlock()
	if l := c.ts.listingOf(c); l.ok {
		return l, false
	}
	tries.Try()
	if c.srv.OAuth != nil && c.httpClient != nil {
		// A fresh handler per try: a factory's handler may remember what
		// it found, and a server never served has no state worth keeping.
		h, err := c.srv.OAuth(c.httpClient)
		if err != nil {
			return c.skipped(diag.New(diag.ConnectionFailure, "7.2.2", c.name, "server %q is skipped: its OAuth handler: %v", c.name, err)), false
		}
		c.mu.Lock()
		if c.session == nil { // none made it served meanwhile (HTTP reads oauth unlocked)
			c.oauth = h
		}
		c.mu.Unlock()
	}
	l := c.connectAndList(ctx)
	if !l.ok {
		c.dropSession() // the next try connects afresh
		if cur := c.ts.listingOf(c); ctx.Err() == nil && (cur.diag == nil || cur.diag.Message != l.diag.Message) {
			c.ts.update(c, l) // Diagnostics says why now
		}
		return l, false
	}
	c.ts.update(c, l)
	return l, true
}

// dropSession closes and forgets the shared session, if any. Outside
// c.mu: closing waits for handlers, which take c.mu (connOf).
func (c *conn) dropSession() {
	c.mu.Lock()
	sess := c.session
	c.session = nil
	c.mu.Unlock()
	if sess != nil {
		if err := sess.Close(); err != nil {
			c.ts.log.Debug("toolset: closing session", "server", c.name, "err", err)
		}
	}
}
