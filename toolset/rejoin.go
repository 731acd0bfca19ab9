package toolset

import (
	"context"
	"log/slog"
	"time"

	"github.com/gatehouse-dev/gatehouse/diag"
	"github.com/gatehouse-dev/gatehouse/toolset/internal/relist"
)

// A server its first listing could not reach (rule connection-failure) is
// tried again while the Toolset is open, through the checks of a first
// listing; skips the configuration decides never are (see Options.Recheck).

// maxRetryWait is the longest wait between two tries of a server.
const maxRetryWait = time.Minute

// skipped is the listing of a server that is not served, logged: at Warn,
// or at Debug while it is being retried (one Warn, no flood).
func (c *conn) skipped(d diag.Diagnostic) listing {
	level := slog.LevelWarn
	if c.quiet.Load() {
		level = slog.LevelDebug
	}
	c.ts.log.Log(context.Background(), level, "toolset: server skipped", "server", c.name, "reason", d.Message)
	return listing{diag: &d}
}

// retryable reports whether a server whose listing is l is tried again.
func (c *conn) retryable(l listing) bool {
	return !l.ok && !c.skip && !c.asleep && l.diag != nil && l.diag.Rule == diag.ConnectionFailure
}

// startRetries starts the tries of every server a load could not reach.
func (t *Toolset) startRetries(results []listing) {
	most := maxRetryWait
	if t.opts.Recheck > 0 {
		most = min(most, t.opts.Recheck)
	}
	for i, c := range t.conns {
		if c.retryable(results[i]) {
			c.quiet.Store(true)
			t.background(func() { relist.Retry(t.life, t.retrySem, most, c.rejoin) })
		}
	}
}

// rejoin tries a skipped server once. It reports true when the server
// needs no more tries: it was listed (by this try, a recheck, a
// list_changed or a Retrust), or it failed for a reason retried no more.
func (c *conn) rejoin(ctx context.Context) bool {
	done, joined := c.rejoinLocked(ctx)
	if joined {
		c.quiet.Store(false)
		c.ts.log.Info("toolset: server connected; its tools are served", "server", c.name)
		c.ts.changed()
		c.ts.announceItems(c)
	}
	return done
}

func (c *conn) rejoinLocked(ctx context.Context) (done, joined bool) {
	c.relistMu.Lock()
	defer c.relistMu.Unlock()
	if c.ts.listingOf(c).ok {
		return true, false
	}
	if c.srv.OAuth != nil && c.httpClient != nil {
		// A fresh handler per try: a Server.OAuth factory's handler may
		// remember what it found (identity/upstream's no longer
		// remembers an empty store, but other factories may), and a
		// server never served has no state worth keeping.
		h, err := c.srv.OAuth(c.httpClient)
		if err != nil {
			return false, false
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
		return !c.retryable(l), false
	}
	c.ts.update(c, l)
	return true, true
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
