package toolset

import (
	"slices"
	"strings"

	"github.com/gatehouse-dev/gatehouse/diag"
	"github.com/gatehouse-dev/gatehouse/internal/projection"
	"github.com/gatehouse-dev/gatehouse/toolset/internal/projected"
)

// catalog is the tool map built from one round of listings.
type catalog struct {
	tools     []ToolInfo
	byName    map[string]*entry
	prompt    []projection.ServerTools
	diags     []diag.Diagnostic
	drift     []DriftEvent          // the tool-drift part of diags, typed
	withdrawn map[string]withdrawal // projected names no longer published
	seq       uint64                // counts the catalogs before this one (the search index's generation)
}

// withdrawal remembers a tool its server stopped publishing.
type withdrawal struct {
	server, remote string
}

// entry is one registered tool: what the model sees and where calls go.
type entry struct {
	info   ToolInfo
	conn   *conn          // nil for the toolset's own tools
	full   map[string]any // full sanitized input schema
	output map[string]any // sanitized output schema
	meta   string         // the toolset's own tool (DescribeToolName, SearchToolName), or ""
}

func (e *entry) summary() Summary {
	return Summary{
		Name:         e.info.Name,
		Server:       e.info.Server,
		RemoteName:   e.info.RemoteName,
		Description:  e.info.Description,
		InputSchema:  projection.ReduceSchema(e.full, projection.Inline),
		OutputSchema: projection.ReduceSchema(e.output, projection.Inline),
		Annotations:  e.info.Annotations,
		ContractHash: e.info.ContractHash,
		State:        e.info.State,
	}
}

// build projects every listed tool by its drift decision (trusted and new
// tools as published, quarantined ones with our text, withheld ones not at
// all), then filters, sanitizes, plans disclosure and registers names. prev
// is the catalog it replaces, if any: names it had that are gone are
// remembered as withdrawn.
func (t *Toolset) build(results []listing, prev *catalog) *catalog {
	cat := &catalog{byName: map[string]*entry{}, withdrawn: map[string]withdrawal{}}
	if prev != nil {
		cat.seq = prev.seq + 1
	}
	var all []*entry
	deferred := false
	for i, c := range t.conns {
		r := results[i]
		if r.diag != nil {
			cat.diags = append(cat.diags, *r.diag)
		}
		for _, ev := range r.drift {
			cat.diags = append(cat.diags, ev.Diagnostic)
		}
		cat.drift = append(cat.drift, r.drift...)
		if !r.ok {
			continue
		}
		for _, remote := range r.v.Removed {
			cat.withdrawn[projection.Name(c.prefix, remote)] = withdrawal{server: c.name, remote: remote}
		}
		ps, tier, ptools, ds := projected.Listing(projected.Server{Name: c.name, Prefix: c.prefix, Filter: c.srv.Filter, AlwaysLoad: c.srv.AlwaysLoad},
			r.tools, r.v.Decisions, t.opts.Budget)
		cat.diags = append(cat.diags, ds...)
		if tier != projection.Inline && len(ps) > 0 {
			deferred = true
		}
		for _, p := range ps {
			state := Active
			if p.Quarantined {
				state = Quarantined
			}
			all = append(all, &entry{conn: c, full: p.Full, output: p.Output, info: ToolInfo{
				Name: p.Name, Server: c.name, Plugin: c.srv.Config.PluginName, RemoteName: p.Remote, Title: p.Title,
				Description: p.Description, InputSchema: projection.ReduceSchema(p.Full, tier), Disclosure: tier,
				State: state, Annotations: p.Annotations, ContractHash: p.ContractHash, Contract: p.Contract, ServerID: c.id,
			}})
		}
		if len(ptools) > 0 {
			cat.prompt = append(cat.prompt, projection.ServerTools{Server: c.name, Tier: tier, Tools: ptools})
		}
	}

	// Register names (the toolset's own are reserved).
	names := make([]projected.Named, len(all))
	for i, e := range all {
		names[i] = projected.Named{Name: e.info.Name, Remote: e.info.RemoteName, Server: e.conn.name}
	}
	keep, ds := projected.Register(names, projection.DescribeToolName, SearchToolName)
	cat.diags = append(cat.diags, ds...)
	for i, e := range all {
		if keep[i] {
			cat.byName[e.info.Name] = e
			cat.tools = append(cat.tools, e.info)
		}
	}
	search := ""
	if t.opts.SearchTool {
		search = SearchToolName
	}
	for _, d := range projected.Own(deferred, search) {
		e := &entry{meta: d.Name, full: d.InputSchema, info: ToolInfo{
			Name: d.Name, RemoteName: d.RemoteName, Description: d.Description,
			InputSchema: projection.ReduceSchema(d.InputSchema, projection.Inline),
			Disclosure:  projection.Inline, State: Active,
		}}
		cat.byName[d.Name] = e
		cat.tools = append(cat.tools, e.info)
	}
	slices.SortFunc(cat.tools, func(a, b ToolInfo) int { return strings.Compare(a.Name, b.Name) })
	if prev != nil {
		for name, w := range prev.withdrawn {
			cat.withdrawn[name] = w
		}
		for name, e := range prev.byName {
			if e.conn != nil {
				cat.withdrawn[name] = withdrawal{server: e.conn.name, remote: e.info.RemoteName}
			}
		}
	}
	for name := range cat.byName {
		delete(cat.withdrawn, name)
	}
	return cat
}
