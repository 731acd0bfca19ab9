package toolset

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/diag"
	"github.com/gatehouse-dev/gatehouse/pin"
	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/memory"
	"github.com/gatehouse-dev/gatehouse/toolset/internal/judge"
	"github.com/gatehouse-dev/gatehouse/toolset/internal/published"
	"github.com/gatehouse-dev/gatehouse/toolset/internal/stored"
)

// Store is what a Toolset persists through: server rows (the last published
// catalogue, for waking), trust baselines and drift observations (for
// drift). store.Store, and so every store implementation, satisfies it.
type Store interface {
	PutServer(ctx context.Context, s store.Server) error
	GetServer(ctx context.Context, id string) (store.Server, error)
	SaveBaseline(ctx context.Context, serverID string, entries store.Baseline) (added int, err error)
	GetBaseline(ctx context.Context, serverID string) (store.Baseline, error)
	ReplaceBaseline(ctx context.Context, serverID string, entries store.Baseline) (cleared int64, err error)
	BaselineVersion(ctx context.Context, serverID string) (int64, error)
	ObserveListing(ctx context.Context, o store.Observation) (store.Observation, bool, error)
	OpenObservations(ctx context.Context, serverID string, entries bool) ([]store.Observation, error)
	DriftHeads(ctx context.Context) ([]store.DriftHead, error)
}

// Every store, and the keeper of a Toolset without one, is a Store.
var (
	_ Store = store.Store(nil)
	_ Store = (*memory.Store)(nil)
)

// ServerID returns the store row ID of a server: "<plugin name>/<server
// name>" for a plugin's server and "config:<server name>" for a server
// configured without a plugin (in a gateway config or in code). It is a pure
// function of the configuration. Server.ID overrides it, and two servers of
// one Toolset with the same ID both get "#" and 8 hex digits of the SHA-256
// of their identity (URL, or resolved command and args) appended.
func ServerID(cfg plugin.ServerConfig) string { return stored.RowID(cfg) }

// events turns a verdict's drift into the toolset's typed events.
func (c *conn) events(v *judge.Verdict) []DriftEvent {
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

// record applies a fresh listing: it reads the server's row and baseline,
// records the baseline on first sight (or derives it from a row's stored
// catalogue when the row predates baselines), stores the catalogue when it
// changed, judges the listing against the stored baseline and applies the
// fleet's record of drift (observe). A store failure fails the listing: a
// server that cannot be checked is not exposed.
func (c *conn) record(ctx context.Context, p published.Listing, fp judge.Prints) listing {
	st := c.ts.store
	failStore := func(err error) listing {
		return c.skipped(diag.New(diag.ConnectionFailure, "7.2.2", c.name,
			"server %q is skipped: its tools cannot be checked against their trusted baseline: %v", c.name, err))
	}
	for _, err := range p.Errs {
		c.ts.log.Warn("toolset: listing failed; the kind is not judged by this listing", "server", c.name, "err", err)
	}
	catalogue, err := stored.EncodeCatalogue(p.Tools, fp.Tools)
	if err != nil {
		return failStore(fmt.Errorf("encoding the catalogue: %w", err))
	}
	row := stored.Row(c.id, c.name, c.srv.Config, c.srv.Transport != nil, catalogue)

	old, err := st.GetServer(ctx, c.id)
	found := err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return failStore(err)
	}
	version, baseline, err := c.readBaseline(ctx, found)
	if err != nil {
		return failStore(err)
	}
	var seed store.Baseline
	if len(baseline) == 0 {
		// No baseline: first sight (a row with a catalogue predates
		// baselines: judge.FirstSight).
		var catalogue []byte
		if found {
			catalogue = old.Catalogue
		}
		seed = judge.FirstSight(c.name, fp, catalogue)
		if !found { // the baseline's row must exist first
			if err := st.PutServer(ctx, row); err != nil {
				return failStore(err)
			}
		}
	} else {
		// A baseline from before the instructions, prompts or resource
		// templates were pinned: pin them now (first sight for them).
		seed = judge.Seed(fp, baseline)
	}
	if len(seed) > 0 {
		if _, err := st.SaveBaseline(ctx, c.id, seed); err != nil {
			return failStore(err)
		}
		// Re-read: another process may have recorded first (saving is
		// insert-only, so what is stored is what counts).
		if version, baseline, err = c.readBaseline(ctx, true); err != nil {
			return failStore(err)
		}
	}
	if found && (!bytes.Equal(old.Catalogue, row.Catalogue) || old.Name != row.Name || old.Type != row.Type || old.URL != row.URL) {
		if err := st.PutServer(ctx, row); err != nil {
			return failStore(err)
		}
	}
	tb, err := stored.ParseBaseline(baseline)
	if err != nil {
		return failStore(err)
	}
	l := listing{ok: true, tools: p.Tools, fp: fp, version: version, print: judge.ListingFingerprint(fp)}
	l.v = judge.Judge(c.name, fp, tb, len(baseline) > 0)
	if err := c.observe(ctx, &l, baseline); err != nil {
		return failStore(err)
	}
	if found && old.Type != "" && (old.Type != row.Type || old.URL != row.URL) {
		c.ts.log.Info("toolset: server row updated to the configured transport", "server", c.name, "id", c.id)
	}
	return l
}

// observe records this instance's observation of a judged listing in the
// store when it drifted (or when this instance's last open observation
// drifted and this one does not: a return to the baseline), and applies
// the drift other instances recorded (judge.Enforce). It fills l.drift
// and l.observed.
func (c *conn) observe(ctx context.Context, l *listing, baseline store.Baseline) error {
	st, self := c.ts.store, c.ts.instance
	obs, err := st.OpenObservations(ctx, c.id, false)
	if err != nil {
		return fmt.Errorf("reading the recorded drift: %w", err)
	}
	var mine *store.Observation
	for i := range obs {
		l.observed = max(l.observed, obs[i].ID)
		if obs[i].SeenBy == self && obs[i].BaselineVersion == l.version {
			mine = &obs[i]
		}
	}
	drifted := l.v.Drifted()
	if (drifted || mine != nil && mine.Drifted) && (mine == nil || mine.Listing != l.print) {
		changes, err := json.Marshal(judge.Changes(l.fp, baseline, l.v))
		if err != nil {
			return fmt.Errorf("encoding the drift: %w", err)
		}
		o, _, err := st.ObserveListing(ctx, store.Observation{ServerID: c.id, Listing: l.print, BaselineVersion: l.version,
			SeenBy: self, Entries: judge.Entries(l.fp), Changes: changes, Drifted: drifted})
		if err != nil {
			return fmt.Errorf("recording the drift: %w", err)
		}
		l.observed = max(l.observed, o.ID)
	}
	if _, err := judge.Enforce(c.name, self, &l.v, obs); err != nil {
		// The others still apply; a damaged record is no reason to serve
		// less safely, nor to stop serving.
		c.ts.log.Warn("toolset: recorded drift", "server", c.name, "err", err)
	}
	l.drift = c.events(&l.v)
	return nil
}

// readBaseline reads the baseline version, then the baseline: a re-trust
// made between the two reads shows as a newer version on the next poll.
func (c *conn) readBaseline(ctx context.Context, found bool) (int64, store.Baseline, error) {
	if !found {
		return 0, nil, nil
	}
	v, err := c.ts.store.BaselineVersion(ctx, c.id)
	if err != nil {
		return 0, nil, err
	}
	m, err := c.ts.store.GetBaseline(ctx, c.id)
	if err != nil {
		return 0, nil, err
	}
	return v, m, nil
}

// TrustRecord is what Retrust recorded for one server: its row ID and
// name, the baseline entries cleared, the trusted tools, prompts and
// resource templates with their fingerprints, the instructions' and the
// listing's fingerprints, and the changes the re-trust accepted.
type TrustRecord = stored.TrustRecord

// TrustedTool is one recorded tool contract (or prompt, or resource
// template): its name on its server and its pin fingerprint.
type TrustedTool = stored.TrustedTool

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
func (t *Toolset) Retrust(ctx context.Context, server string) (TrustRecord, error) {
	if t.isClosed() {
		return TrustRecord{}, &Error{Code: CodeClosed}
	}
	c, err := t.lookupConn(server)
	if err != nil {
		return TrustRecord{}, err
	}
	if c.skip {
		return TrustRecord{}, &Error{Code: CodeConnectionFailed, Server: c.name, Err: errors.New("the server is not run by this configuration (see its diagnostic)")}
	}
	c.relistMu.Lock()
	defer c.relistMu.Unlock()
	lctx, cancel := c.connectContext(ctx)
	defer cancel()
	p, sess, err := c.list(lctx)
	if err != nil {
		return TrustRecord{}, &Error{Code: CodeConnectionFailed, Server: c.name, Err: err}
	}
	fp := judge.Fingerprint(c.name, p)
	catalogue, err := stored.EncodeCatalogue(p.Tools, fp.Tools)
	if err != nil {
		return TrustRecord{}, &Error{Code: CodeStoreFailed, Server: c.name, Err: err}
	}
	st := t.store
	row := stored.Row(c.id, c.name, c.srv.Config, c.srv.Transport != nil, catalogue)
	if err := st.PutServer(ctx, row); err != nil {
		return TrustRecord{}, &Error{Code: CodeStoreFailed, Server: c.name, Err: err}
	}
	// What the re-trust accepts: this listing against the baseline it
	// replaces (none when that baseline is empty or damaged).
	_, old, err := c.readBaseline(ctx, true)
	if err != nil {
		return TrustRecord{}, &Error{Code: CodeStoreFailed, Server: c.name, Err: err}
	}
	changes := []pin.Change{}
	if tb, err := stored.ParseBaseline(old); err == nil && len(old) > 0 {
		changes = judge.Changes(fp, old, judge.Judge(c.name, fp, tb, true))
	}
	cleared, err := st.ReplaceBaseline(ctx, c.id, judge.Entries(fp))
	if err != nil {
		return TrustRecord{}, &Error{Code: CodeStoreFailed, Server: c.name, Err: err}
	}
	rec := judge.Record(c.id, c.name, cleared, p.Instructions, fp, changes)
	c.ts.log.Info("toolset: server re-trusted", "server", c.name, "id", c.id, "tools", len(rec.Tools), "changes", len(changes))
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
func (c *conn) list(ctx context.Context) (published.Listing, *mcp.ClientSession, error) {
	sess, err := c.connect(ctx)
	if err != nil {
		return published.Listing{}, nil, err
	}
	p, err := published.List(ctx, sess)
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
