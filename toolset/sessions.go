package toolset

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/pin"
	"github.com/gatehouse-dev/gatehouse/toolset/internal/relist"
	"github.com/gatehouse-dev/gatehouse/trust"
)

// A server has one shared session, whose listings are the server's
// listings (record, update). It may have others: a relay's session for one
// caller (Upstream.Connect), a gateway's session for one subject with that
// subject's token (Upstream.Judge). A stdio server runs a process per
// session, and a process started after its package changed on disk serves
// the new contracts while the shared process still lists the old ones: so
// each of those sessions is judged too, by the same judge, before anything
// goes through it and again when it announces a changed list.

// sessionsSeenBy is appended to Options.Instance to name, in the drift
// observations (store.Observation.SeenBy), what this instance saw on a
// server's sessions other than its shared one. Kept apart from the shared
// session's own observations, such drift is closed by nothing but a trust
// (the shared session's listing, still the trusted one, does not close
// it), and it is enforced on this instance as on every other
// (judge.Enforce applies what others saw).
const sessionsSeenBy = "/sessions"

// Judge lists sess, a session to the server other than its shared one (a
// relay's for one caller, a subject's own with its own token), and judges
// the listing before anything else goes through it.
//
// A listing that is the shared session's last judged one passes at once:
// its decisions already hold for every caller (no store access). Any other
// is judged against the server's trusted baseline, and its drift (a tool,
// prompt or resource template changed, added or removed) is recorded in
// the store as an observation (seen by Options.Instance + sessionsSeenBy)
// and enforced at once, here and on every instance sharing the store: a
// changed tool is quarantined for every caller (Options.OnChange follows),
// an added one is withheld as everywhere. A session that publishes a
// trusted name with another contract is refused: Judge closes it and
// returns an *Error with CodeQuarantined (a quarantined refusal; its Err
// is a JSON-RPC invalid params error), so nothing goes through a process
// that serves a changed contract. One that only adds or removes items is
// used (what it adds is withheld, what it removed fails there), and so is
// one whose instructions alone changed (they never reach a model). A
// listing that fails, or a store that cannot be read, refuses the session
// (CodeConnectionFailed, CodeStoreFailed): one that cannot be checked
// carries nothing.
func (u *Upstream) Judge(ctx context.Context, sess *mcp.ClientSession) error {
	if err := u.c.judgeSession(ctx, sess); err != nil {
		_ = sess.Close()
		return err
	}
	return nil
}

// Changed tells that sess, a session Judge accepted, announced a changed
// list (notifications/*/list_changed): it is listed and judged again in
// the background, paced as the shared session's announcements are (a
// storm costs one or two listings), and closed when it is refused, so its
// next request fails as on a lost session and the session made in its
// place is judged before anything goes through it. Connect's sessions are
// told by the toolset itself.
func (u *Upstream) Changed(sess *mcp.ClientSession) { u.c.sessionChanged(sess) }

// listChanged reports the notifications that announce a changed list.
func listChanged(method string) bool {
	switch method {
	case "notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed":
		return true
	}
	return false
}

// judgeSession lists and judges one of the server's sessions other than
// the shared one (see Judge); it closes nothing.
func (c *conn) judgeSession(ctx context.Context, sess *mcp.ClientSession) error {
	p, err := trust.List(ctx, sess)
	if err != nil {
		return &Error{Code: CodeConnectionFailed, Server: c.name, Err: fmt.Errorf("listing the session before it is used: %w", err)}
	}
	for _, err := range p.Errs {
		c.ts.log.Warn("toolset: listing failed; the kind is not judged by this listing", "server", c.name, "err", err)
	}
	// The shared session's listing (the usual case): judged, and its
	// decisions hold for every session. Told without fingerprinting it when
	// it is equal as decoded, by its prints otherwise.
	cur := c.ts.listingOf(c)
	shared := cur.ok && !cur.pending
	if shared && cur.fp.Lists(p) {
		return nil
	}
	fp := trust.Fingerprint(c.name, p)
	if shared && cur.print == fp.Print() {
		return nil
	}
	quarantines, head, err := c.observeSession(ctx, fp)
	if err != nil {
		return &Error{Code: CodeStoreFailed, Server: c.name, Err: fmt.Errorf("judging the session's listing: %w", err)}
	}
	if head > 0 {
		// Enforced here at once (WatchTrust would within its interval):
		// the drift this session shows is quarantined for every caller.
		if err := c.checkTrust(ctx, head); err != nil {
			c.ts.log.Warn("toolset: applying a session's drift", "server", c.name, "err", err)
		}
	}
	if quarantines {
		s := pin.SanitizeName(c.name)
		return &Error{Code: CodeQuarantined, Server: c.name, Err: &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("a new upstream session of server %s publishes tools under trusted names with other contracts, so nothing goes through it and the changed tools are quarantined until %s", s, pin.TrustRemedy(s, ""))}}
	}
	return nil
}

// observeSession judges a session's listing against the stored baseline
// and records its drift (an observation seen by this instance's
// sessions). quarantines: the listing publishes a trusted name with
// another contract; head: the observation's ID (0 when nothing was
// recorded).
func (c *conn) observeSession(ctx context.Context, fp trust.Prints) (quarantines bool, head int64, err error) {
	c.relistMu.Lock()
	defer c.relistMu.Unlock()
	return c.ts.ledger.ObserveSession(ctx, c.trusted(), fp, c.ts.instance+sessionsSeenBy)
}

// sessionChanged has one of the server's other sessions judged again in
// the background (Changed), paced per session; the pacer is forgotten once
// nothing is queued.
func (c *conn) sessionChanged(sess *mcp.ClientSession) {
	t := c.ts
	v, _ := c.others.LoadOrStore(sess, new(relist.Pacer))
	p := v.(*relist.Pacer)
	if !p.Announce() {
		return
	}
	forget := func() {
		if !p.Queued() {
			c.others.CompareAndDelete(sess, p)
		}
	}
	started := t.background(func() {
		defer forget()
		if !p.Settle(t.life) {
			p.Clear()
			return
		}
		p.Clear()
		ctx, cancel := c.connectContext(t.life)
		defer cancel()
		if err := c.judgeSession(ctx, sess); err != nil {
			if !errors.Is(err, ErrQuarantined) && errors.Is(err, mcp.ErrConnectionClosed) {
				return // its owner closed it
			}
			t.log.Warn("toolset: a session's changed list is refused; closing it", "server", c.name, "err", err)
			_ = sess.Close()
		}
	})
	if !started {
		p.Clear()
		forget()
	}
}
