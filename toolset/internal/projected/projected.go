// Package projected projects one server's judged listing, pure: the
// tools a model may see by their drift decisions (trusted and new ones as
// published, quarantined ones as the toolset's stand-in, withheld ones
// not at all), kept by the server's filter, with sanitized texts and
// schemas, and the server's disclosure tier within the budget. A toolset
// registers the names and routes the calls.
package projected

import (
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/diag"
	"github.com/gatehouse-dev/gatehouse/internal/metatool"
	"github.com/gatehouse-dev/gatehouse/internal/pin"
	"github.com/gatehouse-dev/gatehouse/internal/projection"
)

// Server is what projecting a server's tools needs of it.
type Server struct {
	// Name is the configured name, Prefix its projected names' prefix.
	Name, Prefix string
	// Filter keeps or drops its tools.
	Filter projection.Filter
	// AlwaysLoad discloses its schemas inline whatever the budget.
	AlwaysLoad bool
}

// Tool is one tool projected.
type Tool struct {
	// Name is the projected name, Remote the name on the server.
	Name, Remote string
	// Title, Description and Annotations are sanitized (empty, the
	// toolset's quarantine text and nil for a quarantined tool).
	Title, Description string
	Annotations        *mcp.ToolAnnotations
	// Full is the full sanitized input schema ({"type":"object"} for a
	// quarantined tool), Output the sanitized output schema (nil for one).
	Full, Output map[string]any
	// ContractHash is ContractHash of the tool as published.
	ContractHash string
	// Contract is the pin.ToolFingerprint of the tool's trusted contract:
	// the published one of a callable tool (trusted or new, so the same),
	// the baseline's of a quarantined one.
	Contract string
	// Quarantined says the tool's contract changed after it was trusted:
	// it is listed with the stand-in and its calls are refused.
	Quarantined bool
}

// Listing projects the tools of a server's listing by their decisions
// (a tool without one is not fingerprintable: withheld). A name listed
// twice counts once (the first). A tool with a binding string that hides
// characters is withheld unless quarantined anyway, with a diagnostic.
// It returns the tools, the server's disclosure tier within budget
// (Inline for AlwaysLoad), the tools as a system prompt shows them, and
// the diagnostics.
func Listing(s Server, tools []*mcp.Tool, decisions map[string]pin.Decision, budget int) ([]Tool, projection.Tier, []projection.Tool, []diag.Diagnostic) {
	var out []Tool
	var prompt []projection.Tool
	var ds []diag.Diagnostic
	seen := map[string]bool{}
	for _, tool := range tools {
		if tool == nil || seen[tool.Name] {
			continue // a server listing a name twice: the first one counts
		}
		seen[tool.Name] = true
		d, judged := decisions[tool.Name]
		if !judged || !(d.Callable() || d.Action == pin.Quarantined) {
			continue // withheld (or not fingerprintable)
		}
		name := projection.Name(s.Prefix, tool.Name)
		if !s.Filter.Keep(tool.Name, name) {
			continue
		}
		if hd, hidden := projection.HiddenDiagnostic(s.Name, tool.Name, tool.InputSchema, tool.OutputSchema, pin.SanitizeName); hidden && d.Callable() {
			ds = append(ds, hd)
			continue // a binding string hides characters: shown neither sanitized nor as sent
		}
		p := Tool{Name: name, Remote: tool.Name, Title: projection.Sanitize(tool.Title), Description: projection.Sanitize(tool.Description),
			Annotations: sanitizeAnnotations(tool.Annotations), ContractHash: ContractHash(tool), Contract: d.Fingerprint,
			Full: projection.InputSchema(tool.InputSchema), Output: projection.SanitizeSchema(projection.SchemaMap(tool.OutputSchema))}
		if d.Action == pin.Quarantined {
			// Nothing the server wrote about this tool reaches the
			// model: our description, an empty schema, no title, no
			// annotations.
			p.Full, p.Output = map[string]any{"type": "object"}, nil
			p.Title, p.Annotations = "", nil
			p.Description = pin.QuarantineDescription(s.Name, tool.Name)
			p.Quarantined = true
			p.Contract = d.BaselineFingerprint
		}
		out = append(out, p)
		prompt = append(prompt, projection.Tool{Name: name, Server: s.Name, RemoteName: tool.Name,
			Description: p.Description, InputSchema: p.Full})
	}
	tier := projection.Inline
	if !s.AlwaysLoad {
		var pd []diag.Diagnostic
		tier, pd = projection.Plan(s.Name, prompt, budget)
		ds = append(ds, pd...)
	}
	return out, tier, prompt, ds
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

// Named is a projected tool as name registration sees it.
type Named struct{ Name, Remote, Server string }

// Register decides which projected tools get their names: two tools with
// one projected name (possible only with explicit prefixes) are both
// withheld, nobody shadows anybody; the names of the toolset's own tools
// (reserved) are withheld too. keep[i] says whether tools[i] is
// registered; each withheld tool has a diagnostic.
func Register(tools []Named, reserved ...string) (keep []bool, ds []diag.Diagnostic) {
	count := map[string]int{}
	for _, t := range tools {
		count[t.Name]++
	}
	keep = make([]bool, len(tools))
	for i, t := range tools {
		switch {
		case count[t.Name] > 1:
			ds = append(ds, diag.New(diag.ServerNameCollision, "", t.Server,
				"tool %q of server %q projects to %q like another server's tool; both are withheld: give the servers distinct prefixes",
				t.Remote, t.Server, t.Name))
		case slices.Contains(reserved, t.Name):
			ds = append(ds, diag.New(diag.ServerNameCollision, "", t.Server,
				"tool %q of server %q projects to the reserved name %q; it is withheld: give the server another prefix",
				t.Remote, t.Server, t.Name))
		default:
			keep[i] = true
		}
	}
	return keep, ds
}

// Own returns the toolset's own tools: mcp__describe_tool when a server's
// schemas are deferred, and the search tool named search unless it is "".
func Own(deferred bool, search string) []projection.Tool {
	var own []projection.Tool
	if deferred {
		own = append(own, projection.DescribeTool())
	}
	if search != "" {
		d := metatool.SearchDefinition(search, metatool.DefaultLimit)
		own = append(own, projection.Tool{Name: d.Name, RemoteName: d.Name, Description: d.Description, InputSchema: d.InputSchema.(map[string]any)})
	}
	return own
}
