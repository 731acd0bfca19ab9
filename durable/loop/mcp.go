package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/durable"
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
// _meta.idempotencyKey. Each tool's Contract is ToolsetContract: an
// approval is bound to the contract the toolset trusts when the call is
// made.
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
		out = append(out, Tool{
			Name:        ti.Name,
			Description: ti.Description,
			InputSchema: schema,
			Server:      ti.Server,
			RemoteName:  ti.RemoteName,
			Call:        ToolsetCall(ts, ti.Name),
			Contract:    ToolsetContract(ts, ti.Name),
		})
	}
	return out, nil
}

// ToolsetContract returns the Contract of the toolset tool registered
// under name: the fingerprint of its trusted contract as the toolset
// holds it when asked (toolset.Target), "" when the toolset refuses the
// tool (quarantined, withdrawn, unknown; its call is refused the same way
// without being sent).
func ToolsetContract(ts *toolset.Toolset, name string) func(ctx context.Context) string {
	return func(ctx context.Context) string {
		tg, err := ts.Target(ctx, name)
		if err != nil {
			return ""
		}
		return tg.Contract
	}
}

// ToolsetCall returns the Call of the toolset tool registered under name:
// the arguments pass through as raw JSON and the idempotency key goes as
// _meta.idempotencyKey. What the toolset refuses before anything is sent
// (an unknown tool, arguments that are not an object, a failed auth
// resolver, a closed toolset, a quarantined or withdrawn tool) is a known
// failure, marked with durable.Failed: recorded and replayed, never in
// doubt. Every other error follows the journal's rules (a JSON-RPC error
// from the server is a failure; a lost connection leaves the outcome
// unknown).
//
// Use it for a durable.Tool too:
//
//	tool := durable.Tool{Name: "bank__charge", Server: "bank", Call: loop.ToolsetCall(ts, "bank__charge")}
func ToolsetCall(ts *toolset.Toolset, name string) func(ctx context.Context, args json.RawMessage, idempotencyKey string) (*mcp.CallToolResult, error) {
	return func(ctx context.Context, args json.RawMessage, key string) (*mcp.CallToolResult, error) {
		var a any
		if len(args) > 0 {
			a = args
		}
		res, err := ts.Call(ctx, name, a, toolset.CallInfo{Meta: map[string]any{MetaIdempotencyKey: key}})
		var te *toolset.Error
		if err != nil && errors.As(err, &te) {
			if r, ok := te.Refusal(); ok {
				return nil, durable.Failed(r) // quarantined, withdrawn: nothing was sent
			}
			switch te.Code {
			case toolset.CodeUnknownTool, toolset.CodeInvalidArguments, toolset.CodeAuthFailed, toolset.CodeClosed:
				return nil, durable.Failed(err) // refused before anything was sent
			}
		}
		return res, err
	}
}
