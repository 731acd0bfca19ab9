package loop

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/skills"
)

// SkillTools returns the two tools a model reads a catalog's skills with,
// skills.ReadToolName and skills.ReadFileToolName, as Go tools (no Server):
// the journal records each read like any call, and a replay returns the
// recorded text without reading the file again. Everything the model can
// get wrong or meet (an unknown skill, a file too large, a file changed on
// disk or swapped for a symlink out of its directory) is an IsError result
// it reads. Run adds them when Options.Skills is set; an agent that drives
// its provider itself passes them to its Executor beside its other tools
// and skills.Catalog.Index to its system prompt. A nil catalog has no
// tools.
//
// The tools live here and not in package skills because they are loop.Tool
// values: skills is below the loop (it imports neither durable nor the
// go-sdk), and an agent on package toolset without the loop uses
// skills.Catalog.Tools and skills.Catalog.Call directly.
func SkillTools(cat *skills.Catalog) []Tool {
	if cat == nil {
		return nil
	}
	defs := cat.Tools()
	out := make([]Tool, len(defs))
	for i, d := range defs {
		name := d.Name
		out[i] = Tool{
			Name:        name,
			Description: d.Description,
			InputSchema: d.InputSchema,
			Call: func(ctx context.Context, args json.RawMessage, _ string) (*mcp.CallToolResult, error) {
				res, err := cat.Call(ctx, name, args)
				if err != nil {
					return nil, err
				}
				return &mcp.CallToolResult{IsError: res.IsError, Content: []mcp.Content{&mcp.TextContent{Text: res.Text}}}, nil
			},
		}
	}
	return out
}

// SkillsSystemPrompt returns system followed by the catalog's index (see
// skills.Catalog.Index), separated by a blank line: the system prompt Run
// gives its model when Options.Skills is set. It returns system unchanged
// when the catalog is nil or has no skills.
func SkillsSystemPrompt(system string, cat *skills.Catalog) string {
	idx := cat.Index()
	switch {
	case idx == "":
		return system
	case system == "":
		return idx
	}
	return system + "\n\n" + idx
}
