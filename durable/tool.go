package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool is a tool whose calls go through a journal: any Go function
// (GoTool), or an MCP tool (a toolset's: loop.ToolsetCall makes its Call).
type Tool struct {
	// Name is the tool's name (a projected name for a toolset tool).
	Name string
	// Server is the server's name ("" or a label of your choice for a Go
	// tool). With Name and the arguments it makes the call's fingerprint.
	Server string
	// Call performs the call; it must send idempotencyKey to the server as
	// _meta.idempotencyKey (or use it to dedup, for a Go tool). An error
	// it returns leaves the outcome unknown (in doubt) unless it is a
	// JSON-RPC error answered by the server or is marked with Failed.
	Call func(ctx context.Context, args json.RawMessage, idempotencyKey string) (*mcp.CallToolResult, error)
}

// CallInfo names one call of a Tool in a durable run.
type CallInfo struct {
	RunID, ToolCallID string
	// Owner is the subject the work belongs to.
	Owner string
}

// Invoke calls t through j.Do under (info.RunID, info.ToolCallID), with
// idempotencyKey = RunID:ToolCallID.
func (j *Journal) Invoke(ctx context.Context, t Tool, info CallInfo, args json.RawMessage) (*mcp.CallToolResult, bool, error) {
	if t.Call == nil {
		return nil, false, fmt.Errorf("%w: tool %q has no Call", ErrInvalidCall, t.Name)
	}
	c := Call{RunID: info.RunID, ToolCallID: info.ToolCallID, Server: t.Server, Tool: t.Name, Args: args, Owner: info.Owner}
	return j.Do(ctx, c, func(ctx context.Context, key string) (*mcp.CallToolResult, error) {
		return t.Call(ctx, args, key)
	})
}

// GoTool returns a Tool around a Go function of typed input and output:
// the result's structured content is out, and its text content is out as
// JSON. fn runs in this process, so an error it returns is its outcome: it
// is recorded as failed and replayed, except a context error (fn stopped
// midway: in doubt). A panic propagates and leaves the call in doubt.
func GoTool[In, Out any](server, name string, fn func(ctx context.Context, in In, idempotencyKey string) (Out, error)) Tool {
	return Tool{Name: name, Server: server, Call: func(ctx context.Context, args json.RawMessage, key string) (*mcp.CallToolResult, error) {
		var in In
		if len(args) > 0 {
			if err := json.Unmarshal(args, &in); err != nil {
				return nil, Failed(fmt.Errorf("tool %s: arguments: %w", name, err))
			}
		}
		out, err := fn(ctx, in, key)
		if err != nil {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return nil, err // stopped midway: unknown
			}
			return nil, Failed(err)
		}
		b, err := json.Marshal(out)
		if err != nil {
			return nil, Failed(fmt.Errorf("tool %s: result: %w", name, err))
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}, nil
	}}
}
