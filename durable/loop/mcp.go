package loop

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/toolset"
)

// MetaIdempotencyKey is the _meta key that carries a call's idempotency
// key to an MCP server.
const MetaIdempotencyKey = "idempotencyKey"

// SessionTools lists the tools of one connected MCP client session and
// returns them as Tools. Each tool is named prefix + its remote name (pass
// "server__" for the projected-name convention, or "" to keep remote
// names) and carries server as its Server. Calls send the idempotency key
// as _meta.idempotencyKey and pass the arguments through as raw JSON.
//
// SessionTools does no projection, sanitizing or drift checking: for
// servers you do not control, use a toolset.Toolset and ToolsetTools.
func SessionTools(ctx context.Context, cs *mcp.ClientSession, server, prefix string) ([]Tool, error) {
	var out []Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("loop: list tools of %q: %w", server, err)
		}
		schema, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("loop: schema of %q on %q: %w", t.Name, server, err)
		}
		remote := t.Name
		out = append(out, Tool{
			Name:        prefix + remote,
			Description: t.Description,
			InputSchema: schema,
			Server:      server,
			RemoteName:  remote,
			Call: func(ctx context.Context, args json.RawMessage, key string) (*mcp.CallToolResult, error) {
				return cs.CallTool(ctx, &mcp.CallToolParams{
					Name:      remote,
					Arguments: args,
					Meta:      mcp.Meta{MetaIdempotencyKey: key},
				})
			},
		})
	}
	return out, nil
}

// ToolsetTools returns the tools of a toolset (its projected tool map, as
// a model should see it: sanitized descriptions, schemas at their
// disclosure tier, quarantined tools refused by the toolset) as Tools.
// Calls go through the toolset, which sends the idempotency key as
// _meta.idempotencyKey.
func ToolsetTools(ctx context.Context, ts *toolset.Toolset) ([]Tool, error) {
	infos, err := ts.Tools(ctx)
	if err != nil {
		return nil, fmt.Errorf("loop: toolset tools: %w", err)
	}
	out := make([]Tool, 0, len(infos))
	for _, ti := range infos {
		schema, err := json.Marshal(ti.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("loop: schema of %q: %w", ti.Name, err)
		}
		name := ti.Name
		out = append(out, Tool{
			Name:        name,
			Description: ti.Description,
			InputSchema: schema,
			Server:      ti.Server,
			RemoteName:  ti.RemoteName,
			Call: func(ctx context.Context, args json.RawMessage, key string) (*mcp.CallToolResult, error) {
				return ts.Call(ctx, name, args, toolset.CallInfo{Meta: map[string]any{MetaIdempotencyKey: key}})
			},
		})
	}
	return out, nil
}
