package toolset

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"slices"
	"strings"

	"github.com/gatehouse-dev/gatehouse/diag"
	"github.com/gatehouse-dev/gatehouse/internal/metatool"
	"github.com/gatehouse-dev/gatehouse/internal/projection"
	"github.com/gatehouse-dev/gatehouse/pin"
	"github.com/gatehouse-dev/gatehouse/toolset/internal/stored"
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

// quarantineSchema is the input schema of a quarantined tool.
func quarantineSchema() map[string]any { return map[string]any{"type": "object"} }

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
		var entries []*entry
		var ptools []projection.Tool
		seen := map[string]bool{}
		for _, tool := range r.tools {
			if tool == nil || seen[tool.Name] {
				continue // a server listing a name twice: the first one counts
			}
			seen[tool.Name] = true
			d, judged := r.v.Decisions[tool.Name]
			if !judged || !(d.Callable() || d.Action == pin.Quarantined) {
				continue // withheld (or not fingerprintable)
			}
			name := projection.Name(c.prefix, tool.Name)
			if !c.srv.Filter.Keep(tool.Name, name) {
				continue
			}
			if hd, hidden := projection.HiddenDiagnostic(c.name, tool.Name, tool.InputSchema, tool.OutputSchema, pin.SanitizeName); hidden && d.Callable() {
				cat.diags = append(cat.diags, hd)
				continue // a binding string hides characters: shown neither sanitized nor as sent
			}
			e := &entry{
				conn: c, full: projection.InputSchema(tool.InputSchema), output: projection.SanitizeSchema(projection.SchemaMap(tool.OutputSchema)),
				info: ToolInfo{
					Name:         name,
					Server:       c.name,
					Plugin:       c.srv.Config.PluginName,
					RemoteName:   tool.Name,
					Title:        projection.Sanitize(tool.Title),
					Description:  projection.Sanitize(tool.Description),
					State:        Active,
					Annotations:  sanitizeAnnotations(tool.Annotations),
					ContractHash: ContractHash(tool),
					ServerID:     c.id,
				},
			}
			if d.Action == pin.Quarantined {
				// Nothing the server wrote about this tool reaches the
				// model: our description, an empty schema, no title, no
				// annotations.
				e.full, e.output = quarantineSchema(), nil
				e.info.Title, e.info.Annotations = "", nil
				e.info.Description = pin.QuarantineDescription(c.name, tool.Name)
				e.info.State = Quarantined
			}
			entries = append(entries, e)
			ptools = append(ptools, projection.Tool{Name: name, Server: c.name, RemoteName: tool.Name,
				Description: e.info.Description, InputSchema: e.full})
		}
		tier := projection.Inline
		if !c.srv.AlwaysLoad {
			var pd []diag.Diagnostic
			tier, pd = projection.Plan(c.name, ptools, t.opts.Budget)
			cat.diags = append(cat.diags, pd...)
		}
		if tier != projection.Inline && len(entries) > 0 {
			deferred = true
		}
		for _, e := range entries {
			e.info.Disclosure = tier
			e.info.InputSchema = projection.ReduceSchema(e.full, tier)
		}
		if len(ptools) > 0 {
			cat.prompt = append(cat.prompt, projection.ServerTools{Server: c.name, Tier: tier, Tools: ptools})
		}
		all = append(all, entries...)
	}

	// Register names. Two tools with one projected name (possible only with
	// explicit prefixes) are both withheld: nobody shadows anybody. The
	// names of the toolset's own tools are reserved.
	count := map[string]int{}
	for _, e := range all {
		count[e.info.Name]++
	}
	for _, e := range all {
		switch {
		case count[e.info.Name] > 1:
			cat.diags = append(cat.diags, diag.New(diag.ServerNameCollision, "", e.conn.name,
				"tool %q of server %q projects to %q like another server's tool; both are withheld: give the servers distinct prefixes",
				e.info.RemoteName, e.conn.name, e.info.Name))
			continue
		case e.info.Name == projection.DescribeToolName || e.info.Name == SearchToolName:
			cat.diags = append(cat.diags, diag.New(diag.ServerNameCollision, "", e.conn.name,
				"tool %q of server %q projects to the reserved name %q; it is withheld: give the server another prefix",
				e.info.RemoteName, e.conn.name, e.info.Name))
			continue
		}
		cat.byName[e.info.Name] = e
		cat.tools = append(cat.tools, e.info)
	}
	var own []projection.Tool
	if deferred {
		own = append(own, projection.DescribeTool())
	}
	if t.opts.SearchTool {
		d := metatool.SearchDefinition(SearchToolName, metatool.DefaultLimit)
		own = append(own, projection.Tool{Name: d.Name, RemoteName: d.Name, Description: d.Description, InputSchema: d.InputSchema.(map[string]any)})
	}
	for _, d := range own {
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

// sanitizeAnnotations returns a copy of a with its title sanitized
// (annotations are information only; the title may reach a person).
func sanitizeAnnotations(a *mcp.ToolAnnotations) *mcp.ToolAnnotations {
	if a == nil {
		return nil
	}
	c := *a
	c.Title = projection.Sanitize(c.Title)
	return &c
}

// ContractHash returns the SHA-256 (hex) of a canonical JSON encoding of the
// tool's name, title, description, input schema, output schema and
// annotations, exactly as the server sent them (as decoded by the go-sdk
// client). Object keys are sorted at every depth. The pin package will
// replace this with its canonical fingerprint.
func ContractHash(tool *mcp.Tool) string { return stored.ContractHash(tool) }
