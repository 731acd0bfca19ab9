// Package stablelist is the gateway's stable tools/list (tool search,
// docs/reference/wire.md): whether a caller gets it, and what it holds. A caller
// who gets it sees gatehouse__search_tools and the disclosure.alwaysLoad
// tools it may see, sorted by name: the same list for every caller who may
// see the same tools, whatever other tools come and go behind it. Every
// tool stays callable by name; what to list is all this package decides.
//
//	p := stablelist.New(&cfg.Search, &cfg.Disclosure)
//	sizes := p.Sizes(tools, prevTools, prevSizes) // at every refresh of the served map
//	list, stable := p.List(tools, sizes, visible) // at every tools/list of a caller
//
// With search.enabled true every caller gets it; absent, a caller whose
// visible tools take more than disclosure.budget in tools/list (4
// characters a token: the name, title, description and input schema as
// listed); false, none (Policy.On is false: the gateway serves no search
// tool).
package stablelist

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/config"
	"github.com/gatehouse-dev/gatehouse/internal/metatool"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// Name is the gateway's search tool.
const Name = metatool.GatewaySearchName

// Policy is what the served map needs of search's config.
type Policy struct {
	// On: the search tool is served (search.enabled is not false).
	On bool
	// Always: every caller gets the stable list (search.enabled: true).
	Always bool
	// Limit is search.limit: the hits of a call that gives none.
	Limit int
	// Def is the search tool, as every stable list shows it.
	Def *mcp.Tool

	budget     int             // disclosure.budget in bytes
	alwaysLoad map[string]bool // disclosure.alwaysLoad: server and plugin names
}

// New returns the policy of search and disclosure (as config.Parse
// resolved them; a zero limit or budget means the default).
func New(search *config.Search, disclosure *config.Disclosure) *Policy {
	p := &Policy{On: !search.Off(), Always: search.Always(), Limit: search.Limit, budget: disclosure.Budget,
		alwaysLoad: map[string]bool{}}
	if p.Limit <= 0 {
		p.Limit = config.DefaultSearchLimit
	}
	if p.budget <= 0 {
		p.budget = config.DefaultBudgetTokens
	}
	p.budget *= 4
	for _, n := range disclosure.AlwaysLoad {
		p.alwaysLoad[n] = true
	}
	p.Def = metatool.SearchDefinition(Name, p.Limit)
	return p
}

// Def is a served tool as tools/list shows it.
func Def(t toolset.ToolInfo) *mcp.Tool {
	schema := map[string]any{"type": "object"}
	if t.InputSchema != nil && t.InputSchema["type"] == "object" {
		schema = t.InputSchema
	}
	return &mcp.Tool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: schema, Annotations: t.Annotations}
}

// Reserved reports whether a served tool must give way to the gateway's
// search tool (its name is the search tool's, and search is on).
func (p *Policy) Reserved(t toolset.ToolInfo) bool { return p.On && t.Name == Name }

// Sizes returns each tool's size in tools/list in bytes, when the stable
// list depends on it (search.enabled absent; else nil). A tool unchanged
// since prev (same contract, state and description) keeps its size in
// prevSizes.
func (p *Policy) Sizes(list []toolset.ToolInfo, prev map[string]toolset.ToolInfo, prevSizes map[string]int) map[string]int {
	if !p.On || p.Always {
		return nil
	}
	out := make(map[string]int, len(list))
	for _, t := range list {
		if old, ok := prev[t.Name]; ok && old.ContractHash == t.ContractHash && old.State == t.State && old.Description == t.Description {
			if n, ok := prevSizes[t.Name]; ok {
				out[t.Name] = n
				continue
			}
		}
		def := Def(t)
		schema, _ := json.Marshal(def.InputSchema)
		out[t.Name] = len(def.Name) + len(def.Title) + len(def.Description) + len(schema)
	}
	return out
}

// List returns the stable list of a caller who may see the tools visible
// accepts, and whether the caller gets it (search.enabled true, or the
// visible tools' sizes over the budget).
func (p *Policy) List(tools map[string]toolset.ToolInfo, sizes map[string]int, visible func(name string) bool) ([]*mcp.Tool, bool) {
	if !p.On {
		return nil, false
	}
	if !p.Always {
		size := 0
		for name := range tools {
			if size > p.budget {
				break
			}
			if visible(name) {
				size += sizes[name]
			}
		}
		if size <= p.budget {
			return nil, false
		}
	}
	var load []*mcp.Tool
	for name, t := range tools {
		if (p.alwaysLoad[t.Server] || (t.Plugin != "" && p.alwaysLoad[t.Plugin])) && visible(name) {
			load = append(load, Def(t))
		}
	}
	slices.SortFunc(load, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	return append([]*mcp.Tool{p.Def}, load...), true
}
