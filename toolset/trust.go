package toolset

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/diag"
	"github.com/gatehouse-dev/gatehouse/trust"
)

// events turns a verdict's drift into the toolset's typed events.
func (c *conn) events(v *trust.Verdict) []DriftEvent {
	out := make([]DriftEvent, 0, len(v.Events))
	for _, ev := range v.Events {
		d := newDrift(c.name, DriftKind(ev.Kind), ev.Decision, "%s", ev.Message)
		d.ServerID = c.id
		out = append(out, d)
	}
	return out
}

// logDrift writes the drift diagnostics of a fresh listing at warn level.
// They carry names (sanitized), never descriptions or schemas.
func (c *conn) logDrift(l *listing) {
	for _, ev := range l.drift {
		c.ts.log.Warn("toolset: tool drift", "server", c.name, "message", ev.Diagnostic.Message)
	}
}

// record applies a fresh listing through the ledger (trust.Ledger.Record:
// first sight, the catalogue stored, the listing judged against the
// baseline, this instance's observation recorded and the fleet's record
// enforced). A store failure fails the listing: a server that cannot be
// checked is not exposed.
func (c *conn) record(ctx context.Context, p trust.Listing, fp trust.Prints) listing {
	for _, err := range p.Errs {
		c.ts.log.Warn("toolset: listing failed; the kind is not judged by this listing", "server", c.name, "err", err)
	}
	j, err := c.ts.ledger.Record(ctx, c.trusted(), p, fp)
	if err != nil {
		return c.skipped(diag.New(diag.ConnectionFailure, "7.2.2", c.name,
			"server %q is skipped: its tools cannot be checked against their trusted baseline: %v", c.name, err))
	}
	return c.judgedListing(j)
}

// trusted names the server to the ledger.
func (c *conn) trusted() trust.Server {
	return trust.Server{ID: c.id, Name: c.name, Config: c.srv.Config, InCode: c.srv.Transport != nil}
}

// judgedListing is the listing of a judged one, its drift typed.
func (c *conn) judgedListing(j trust.Judged) listing {
	return listing{ok: true, tools: j.Tools, fp: j.Prints, print: j.Print, v: j.Verdict,
		version: j.Version, observed: j.Observed, drift: c.events(&j.Verdict)}
}

// judgment is the listing as the ledger judged it.
func (l *listing) judgment() trust.Judged {
	return trust.Judged{Tools: l.tools, Prints: l.fp, Print: l.print, Verdict: l.v, Version: l.version, Observed: l.observed}
}

// lookupConn finds a configured server by name or row ID. A name shared by
// several servers must be given as a row ID.
func (t *Toolset) lookupConn(server string) (*conn, error) {
	var byName []*conn
	for _, c := range t.conns {
		if c.id == server {
			return c, nil
		}
		if c.name == server {
			byName = append(byName, c)
		}
	}
	switch len(byName) {
	case 1:
		return byName[0], nil
	case 0:
		return nil, &Error{Code: CodeUnknownServer, Server: server, Err: errors.New("no configured server has this name or row ID")}
	}
	ids := make([]string, len(byName))
	for i, c := range byName {
		ids[i] = c.id
	}
	sort.Strings(ids)
	return nil, &Error{Code: CodeUnknownServer, Server: server,
		Err: fmt.Errorf("several servers are named %q; name one by its row ID: %s", server, strings.Join(ids, ", "))}
}

// Retrust re-trusts a server's current tool contracts, and its prompts and
// resource templates: it connects to the
// server (or uses its live session; no other server is connected), lists
// its tools, prompts and resource templates, stores the catalogue,
// clears the server's baseline and records the listing as the new
// baseline, then re-applies it (quarantined tools become active again,
// withheld ones visible). server is the configured name, or the row ID when
// several servers share a name. This is the only way a baseline is
// replaced.
//
// Other processes sharing the store notice the re-trust through
// WatchTrust.
func (t *Toolset) Retrust(ctx context.Context, server string) (trust.TrustRecord, error) {
	if t.isClosed() {
		return trust.TrustRecord{}, &Error{Code: CodeClosed}
	}
	c, err := t.lookupConn(server)
	if err != nil {
		return trust.TrustRecord{}, err
	}
	if c.skip {
		return trust.TrustRecord{}, &Error{Code: CodeConnectionFailed, Server: c.name, Err: errors.New("the server is not run by this configuration (see its diagnostic)")}
	}
	c.relistMu.Lock()
	defer c.relistMu.Unlock()
	lctx, cancel := c.connectContext(ctx)
	defer cancel()
	p, sess, err := c.list(lctx)
	if err != nil {
		return trust.TrustRecord{}, &Error{Code: CodeConnectionFailed, Server: c.name, Err: err}
	}
	fp := trust.Fingerprint(c.name, p)
	rec, err := t.ledger.Retrust(ctx, c.trusted(), p, fp)
	if err != nil {
		return trust.TrustRecord{}, &Error{Code: CodeStoreFailed, Server: c.name, Err: err}
	}
	c.ts.log.Info("toolset: server re-trusted", "server", c.name, "id", c.id, "tools", len(rec.Tools), "changes", len(rec.Changes))
	l := c.record(ctx, p, fp)
	if l.ok {
		c.judgedNow(sess)
		t.update(c, l)
		defer t.announceItems(c)
		defer t.changed() // after relistMu is released
	}
	return rec, nil
}

// list connects (or reuses the live session) and lists the server's
// tools, returning the session it listed (judgedNow, once its listing was
// judged).
func (c *conn) list(ctx context.Context) (trust.Listing, *mcp.ClientSession, error) {
	sess, err := c.connect(ctx)
	if err != nil {
		return trust.Listing{}, nil, err
	}
	p, err := trust.List(ctx, sess)
	return p, sess, err
}

// Pinned reports a tool's trusted and current contract fingerprints
// (pin.ToolFingerprint), so a *Toolset can serve as policy.Contracts.
// server is the configured server name (or row ID) and tool the tool's name
// on that server. pinned is "" when the baseline has no such tool; current
// is "" when the server's last listing does not publish it.
func (t *Toolset) Pinned(ctx context.Context, server, tool string) (pinned, current string, err error) {
	if _, err := t.ensure(ctx); err != nil {
		return "", "", err
	}
	c, err := t.lookupConn(server)
	if err != nil {
		return "", "", err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.listings[c.idx]
	for _, p := range l.fp.Tools {
		if p.Name == tool {
			current = p.Fingerprint
			break
		}
	}
	return l.v.Base[tool].Fingerprint, current, nil
}
