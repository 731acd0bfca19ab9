package gateway

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/skillserve"
	"github.com/gatehouse-dev/gatehouse/server"
	"github.com/gatehouse-dev/gatehouse/skills"
)

// The plugins' skills reach MCP clients as resources (skill://PLUGIN/NAME/
// SKILL.md and skill://PLUGIN/NAME/PATH) and prompts (PLUGIN__NAME),
// served by package skillserve to the callers whose skill scopes allow
// them (docs/skills.md).

// newSkills builds the skill server of the loaded plugins' skills (their
// catalog's diagnostics logged): package skillserve, on every go-sdk
// server, outside the relay's middleware.
func (g *Gateway) newSkills(served *servedMap) *skillserve.Server {
	cat, ds := skills.New(g.loaded, nil)
	for _, d := range ds {
		g.log.Warn("gateway: skill diagnostic", "rule", string(d.Rule), "origin", d.Origin, "message", d.Message)
	}
	return skillserve.New(cat, skillserve.Options{Logger: g.log, Visibility: g.skillVisibility, Limit: g.skillLimit,
		Servers: served.mcpServers})
}

// SetSkills serves cat's skills from now on (nil: none), for every caller
// at once: the seam of trust, which hands the gateway a catalog without
// the skills it withholds (skills.Catalog.Without). A change of what may
// be listed is announced to every session (resources and prompts
// list_changed).
func (g *Gateway) SetSkills(cat *skills.Catalog) { g.skills.Set(cat) }

// Skills returns the catalog the gateway serves now (nil: none).
func (g *Gateway) Skills() *skills.Catalog { return g.skills.Catalog() }

// skillVisibility returns which skills (by prompt name) the caller of req
// may see: those its scopes (skill:NAME, skill:*) allow; none for a caller
// that cannot be identified.
func (g *Gateway) skillVisibility(ctx context.Context, req mcp.Request, local bool) func(prompt string) bool {
	subject, ok := g.relaySubject(ctx, req, local)
	if !ok {
		return func(string) bool { return false }
	}
	info := server.InfoOf(req, local)
	return func(prompt string) bool { return g.auth.AllowsSkill(subject, info.TokenInfo, prompt) }
}

// skillLimit spends the caller's rate limit on a skill's read or prompt, as
// the relay does for the upstreams' (an unidentified caller is not
// counted: it sees nothing).
func (g *Gateway) skillLimit(ctx context.Context, req mcp.Request, local bool, method string) error {
	subject, ok := g.relaySubject(ctx, req, local)
	if !ok {
		return nil
	}
	return g.relayLimit(ctx, subject, method)
}
