package toolset

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/diag"
	"github.com/gatehouse-dev/gatehouse/pin"
	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/toolset/internal/ephemeral"
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
	_ Store = (*ephemeral.Store)(nil)
)

// ServerID returns the store row ID of a server: "<plugin name>/<server
// name>" for a plugin's server and "config:<server name>" for a server
// configured without a plugin (in a gateway config or in code). It is a pure
// function of the configuration. Server.ID overrides it, and two servers of
// one Toolset with the same ID both get "#" and 8 hex digits of the SHA-256
// of their identity (URL, or resolved command and args) appended.
func ServerID(cfg plugin.ServerConfig) string { return stored.RowID(cfg) }

// printsOf fingerprints a listing of tools (stored.ToolPrints). A tool
// that cannot be fingerprinted, or whose name has a space, is left out and
// reported.
func printsOf(server string, tools []*mcp.Tool) ([]pin.ToolPrint, []DriftEvent) {
	prints, rs := stored.ToolPrints(tools)
	return prints, withheld(server, DriftTool, "tool", rs)
}

// cachedPrints returns the pins of tools from a catalogue's cache,
// fingerprinting the tools it lacks (or holds damaged).
func cachedPrints(server string, tools []*mcp.Tool, cached map[string]string) ([]pin.ToolPrint, []DriftEvent) {
	prints, rs := stored.CachedToolPrints(tools, cached)
	return prints, withheld(server, DriftTool, "tool", rs)
}

// withheld reports the items of a listing that have no print: they cannot
// be trusted, so they are withheld. noun names their kind.
func withheld(server string, kind DriftKind, noun string, rs []stored.Rejected) []DriftEvent {
	var ds []DriftEvent
	for _, r := range rs {
		why := "cannot be fingerprinted"
		if r.Reason == stored.SpaceInName {
			// A name with a space is no MCP tool name, and its baseline
			// key would be in the namespace of prompts and resource
			// templates.
			why = "has a space in its name, which MCP tool names cannot have"
		}
		ds = append(ds, newDrift(server, kind, pin.Decision{Tool: r.Name, Action: pin.Withheld},
			"%s %s of server %s %s, so it cannot be trusted; it is withheld", noun, pin.SanitizeName(r.Name), pin.SanitizeName(server), why))
	}
	return ds
}

// fingerprinted is a listing's tools with their prints.
type fingerprinted struct {
	prints []pin.ToolPrint
	drift  []DriftEvent // tools that could not be fingerprinted
	items  [stored.NumKinds]itemPrints
}

// judge compares a listing with a baseline and fills the listing's
// decisions and drift diagnostics, and does the same for the listing's
// prompts and resource templates against their pins (judgeItems). exists
// says whether a baseline was recorded at all (even one with no tools: then
// every tool is new to it).
func (c *conn) judge(l *listing, fp fingerprinted, tb stored.Baseline, exists bool) {
	base := tb.Tools
	prints := fp.prints
	l.fp = fp
	l.drift = append(l.drift, fp.drift...)
	l.decisions = map[string]pin.Decision{}
	l.prints = map[string]string{}
	for _, p := range prints {
		l.prints[p.Name] = p.Fingerprint
	}
	l.baseline = base
	sname := pin.SanitizeName(c.name)
	for _, d := range pin.Compare(base, prints) {
		if d.Action == pin.New && exists {
			d.Action = pin.Withheld
		}
		l.decisions[d.Tool] = d
		tname := pin.SanitizeName(d.Tool)
		var msg string
		switch d.Action {
		case pin.Quarantined:
			if d.Conflict {
				msg = fmt.Sprintf("server %s publishes tool %s more than once with different contracts; it is quarantined until the server is re-trusted", sname, tname)
			} else {
				msg = fmt.Sprintf("the contract of tool %s on server %s changed after it was trusted; it is quarantined (our description, an empty schema, calls refused) until an operator re-trusts the server: gatehouse trust %s", tname, sname, sname)
			}
		case pin.Withheld:
			switch {
			case d.RenamedFrom != "":
				msg = fmt.Sprintf("tool %s of server %s was renamed to %s (same contract); the new name is withheld until an operator re-trusts the server: gatehouse trust %s", pin.SanitizeName(d.RenamedFrom), sname, tname, sname)
			case d.Conflict:
				msg = fmt.Sprintf("server %s publishes tool %s more than once with different contracts; it is withheld", sname, tname)
			default:
				msg = fmt.Sprintf("server %s published a new tool %s after it was trusted; it is withheld until an operator re-trusts the server: gatehouse trust %s", sname, tname, sname)
			}
		case pin.Removed:
			l.removed = append(l.removed, d.Tool)
			if d.RenamedTo != "" {
				continue // reported with the new name
			}
			msg = fmt.Sprintf("server %s no longer publishes its trusted tool %s; it is dropped", sname, tname)
		default:
			continue
		}
		l.drift = append(l.drift, newDrift(c.name, DriftTool, d, "%s", msg))
	}
	for k := stored.Kind(0); k < stored.NumKinds; k++ {
		l.items[k] = itemState{Items: tb.Items[k]}
		c.judgeItems(l, k, fp.items[k])
	}
	for i := range l.drift {
		l.drift[i].ServerID = c.id
	}
}

// judgeInstructions reports a change of the server's instructions.
func (c *conn) judgeInstructions(l *listing, trusted, now string) {
	if trusted == "" || now == "" || trusted == now {
		return
	}
	sname := pin.SanitizeName(c.name)
	ev := newDrift(c.name, DriftInstructions, pin.Decision{Action: pin.Quarantined, Fingerprint: now, BaselineFingerprint: trusted},
		"the instructions of server %s changed after they were trusted (instructions never reach the model); re-trust the server to record them: gatehouse trust %s", sname, sname)
	ev.ServerID = c.id
	l.drift = append(l.drift, ev)
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
// catalogue when the row predates baselines), stores the catalogue, and
// judges the listing against the stored baseline. A store failure fails
// the listing: a server that cannot be checked is not exposed.
func (c *conn) record(ctx context.Context, p published.Listing) listing {
	st := c.ts.store
	failStore := func(err error) listing {
		d := diag.New(diag.ConnectionFailure, "7.2.2", c.name,
			"server %q is skipped: its tools cannot be checked against their trusted baseline: %v", c.name, err)
		c.ts.log.Warn("toolset: server skipped", "server", c.name, "reason", d.Message)
		return listing{diag: &d}
	}
	var fp fingerprinted
	fp.prints, fp.drift = printsOf(c.name, p.Tools)
	fingerprintItems(c.name, p, &fp)
	for _, err := range p.Errs {
		c.ts.log.Warn("toolset: listing failed; the kind is not judged by this listing", "server", c.name, "err", err)
	}
	catalogue, err := stored.EncodeCatalogue(p.Tools, fp.prints)
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
	if len(baseline) == 0 {
		// No baseline. A row with a catalogue predates baselines: its
		// baseline is what it stored, not what the server says now.
		// Otherwise this is first sight.
		seedPrints := fp.prints
		if found && old.Catalogue != nil {
			if prev, cached, err := stored.DecodeCatalogueCached(old.Catalogue); err == nil {
				seedPrints, _ = cachedPrints(c.name, prev, cached)
			}
		}
		seed := stored.BaselineStrings(pin.BaselineOf(seedPrints))
		seed[store.InstructionsKey] = p.Instructions
		seedItems(seed, &fp, nil)
		if !found { // the baseline's row must exist first
			if err := st.PutServer(ctx, row); err != nil {
				return failStore(err)
			}
		}
		if _, err := st.SaveBaseline(ctx, c.id, seed); err != nil {
			return failStore(err)
		}
		// Re-read: another process may have recorded first (saving is
		// insert-only, so what is stored is what counts).
		if version, baseline, err = c.readBaseline(ctx, true); err != nil {
			return failStore(err)
		}
	} else {
		// A baseline from before the instructions, prompts or resource
		// templates were pinned: pin them now (first sight for them).
		more := map[string]string{}
		if _, ok := baseline[store.InstructionsKey]; !ok && p.Instructions != "" {
			more[store.InstructionsKey] = p.Instructions
		}
		seedItems(more, &fp, baseline)
		if len(more) > 0 {
			if _, err := st.SaveBaseline(ctx, c.id, more); err != nil {
				return failStore(err)
			}
			if version, baseline, err = c.readBaseline(ctx, true); err != nil {
				return failStore(err)
			}
		}
	}
	if err := st.PutServer(ctx, row); err != nil {
		return failStore(err)
	}
	tb, err := stored.ParseBaseline(baseline)
	if err != nil {
		return failStore(err)
	}
	l := listing{ok: true, tools: p.Tools, version: version, instructions: p.Instructions}
	c.judge(&l, fp, tb, len(baseline) > 0)
	c.judgeInstructions(&l, tb.Instructions, p.Instructions)
	if found && old.Type != "" && (old.Type != row.Type || old.URL != row.URL) {
		c.ts.log.Info("toolset: server row updated to the configured transport", "server", c.name, "id", c.id)
	}
	return l
}

// readBaseline reads the baseline version, then the baseline: a re-trust
// made between the two reads shows as a newer version on the next poll.
func (c *conn) readBaseline(ctx context.Context, found bool) (int64, map[string]string, error) {
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

// TrustRecord is what Retrust recorded for one server.
type TrustRecord struct {
	// ServerID is the server's row ID.
	ServerID string `json:"serverId"`
	// Server is the configured server name.
	Server string `json:"server"`
	// Cleared is how many baseline entries the re-trust removed.
	Cleared int64 `json:"cleared"`
	// Tools are the trusted tools, sorted by name.
	Tools []TrustedTool `json:"tools"`
	// Instructions is the fingerprint of the server's instructions.
	Instructions string `json:"instructions"`
	// Prompts are the trusted prompts (Fingerprint is
	// pin.PromptFingerprint), sorted by name.
	Prompts []TrustedTool `json:"prompts"`
	// ResourceTemplates are the trusted resource templates (Name is the
	// URI template, Fingerprint pin.TemplateFingerprint), sorted.
	ResourceTemplates []TrustedTool `json:"resourceTemplates"`
	// Listing is the fingerprint of the trusted listing (what `gatehouse
	// drift list` shows as "listing").
	Listing string `json:"listing"`
	// Changes are what the re-trust accepted: the differences between the
	// baseline it replaced and the listing it recorded (empty when they
	// were the same).
	Changes []pin.Change `json:"changes"`
}

// TrustedTool is one recorded tool contract (or prompt, or resource
// template).
type TrustedTool struct {
	// Name is the tool's name on its server.
	Name string `json:"name"`
	// Fingerprint is pin.ToolFingerprint of its contract.
	Fingerprint string `json:"fingerprint"`
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
	p, err := c.list(lctx)
	if err != nil {
		return TrustRecord{}, &Error{Code: CodeConnectionFailed, Server: c.name, Err: err}
	}
	prints, _ := printsOf(c.name, p.Tools)
	base := pin.BaselineOf(prints)
	seed := stored.BaselineStrings(base)
	seed[store.InstructionsKey] = p.Instructions
	var fp fingerprinted
	fingerprintItems(c.name, p, &fp)
	seedItems(seed, &fp, nil)
	catalogue, err := stored.EncodeCatalogue(p.Tools, prints)
	if err != nil {
		return TrustRecord{}, &Error{Code: CodeStoreFailed, Server: c.name, Err: err}
	}
	st := t.store
	row := stored.Row(c.id, c.name, c.srv.Config, c.srv.Transport != nil, catalogue)
	// Catalogue first: a process that sees the cleared baseline derives
	// its baseline from the stored catalogue, which is then this listing.
	if err := st.PutServer(ctx, row); err != nil {
		return TrustRecord{}, &Error{Code: CodeStoreFailed, Server: c.name, Err: err}
	}
	cleared, err := st.ClearBaseline(ctx, c.id)
	if err != nil {
		return TrustRecord{}, &Error{Code: CodeStoreFailed, Server: c.name, Err: err}
	}
	if _, err := st.SaveBaseline(ctx, c.id, seed); err != nil {
		return TrustRecord{}, &Error{Code: CodeStoreFailed, Server: c.name, Err: err}
	}
	c.ts.log.Info("toolset: server re-trusted", "server", c.name, "id", c.id, "tools", len(base))
	l := c.record(ctx, p)
	if l.ok {
		t.update(c, l)
		defer t.announceItems(c)
		defer t.changed() // after relistMu is released
	}
	rec := TrustRecord{ServerID: c.id, Server: c.name, Cleared: cleared, Instructions: p.Instructions, Tools: []TrustedTool{},
		Prompts: trustedItems(&fp, stored.Prompt), ResourceTemplates: trustedItems(&fp, stored.Template)}
	for name, pn := range base {
		rec.Tools = append(rec.Tools, TrustedTool{Name: name, Fingerprint: pn.Fingerprint})
	}
	sort.Slice(rec.Tools, func(i, j int) bool { return rec.Tools[i].Name < rec.Tools[j].Name })
	return rec, nil
}

// list connects (or reuses the live session) and lists the server's tools.
func (c *conn) list(ctx context.Context) (published.Listing, error) {
	sess, err := c.connect(ctx)
	if err != nil {
		return published.Listing{}, err
	}
	return published.List(ctx, sess)
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
	return l.baseline[tool].Fingerprint, l.prints[tool], nil
}
