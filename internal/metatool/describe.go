package metatool

import (
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Describe answers mcp__describe_tool: args (any value that encodes to
// {"name": ...}) names a tool, lookup returns its description and full
// input schema (ok false for a name it does not have). A name it does not
// have is a tool error; the error is the encoding's, if any.
func Describe(args any, lookup func(name string) (description string, schema map[string]any, ok bool)) (*mcp.CallToolResult, error) {
	var in struct {
		Name string `json:"name"`
	}
	if args != nil {
		b, _ := json.Marshal(args)
		_ = json.Unmarshal(b, &in)
	}
	desc, schema, ok := lookup(in.Name)
	if !ok {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{
			Text: fmt.Sprintf("unknown tool %q: pass a tool name exactly as listed", in.Name)}}}, nil
	}
	out := map[string]any{"name": in.Name, "description": desc, "inputSchema": schema}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: out}, nil
}
