package toolset

import (
	"github.com/gatehouse-dev/gatehouse/internal/metatool"
	"github.com/gatehouse-dev/gatehouse/internal/projection"
)

// Filter keeps or drops a server's tools by remote or projected name
// (Server.Filter). Allow and Block are mutually exclusive; an empty list is
// "not set". Its rules live with the projection rules of names; this alias
// is its name in this package's API.
type Filter = projection.Filter

// Tier is the disclosure of a tool's input schema (ToolInfo.Disclosure).
type Tier = projection.Tier

// The disclosure tiers, from most to least disclosed.
const (
	// Inline discloses the full input schema.
	Inline = projection.Inline
	// Names discloses parameter names, scalar types and required only.
	Names = projection.Names
	// Bare discloses {"type":"object"}; the model reads the schema with
	// mcp__describe_tool.
	Bare = projection.Bare
)

// DescribeToolName is the name of the tool the Toolset adds when a server's
// schemas are beyond the disclosure budget: it answers a tool's full
// schema.
const DescribeToolName = projection.DescribeToolName

// SearchToolName is the name of the tool Options.SearchTool adds: it
// answers Search for a model, with the tools' full input schemas.
const SearchToolName = metatool.AgentSearchName

// SearchHit is one tool Search found: its name, title, description, full
// input schema and score (higher is better).
type SearchHit = metatool.Hit
