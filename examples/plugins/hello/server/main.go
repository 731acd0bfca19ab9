// Command server is the hello plugin's MCP server: two tools over stdio.
//
// Usage:
//
//	go run ./examples/plugins/hello/server    # serves one session on stdin/stdout
//
// Tools:
//
//	greet {name}  -> "Hello, <name>!"
//	add   {a, b}  -> a + b
//
// The plugin's mcp.json runs it with `go run ${PLUGIN_ROOT}/server`, so a
// fresh clone with Go installed is all it needs.
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type greetIn struct {
	Name string `json:"name" jsonschema:"who to greet"`
}

type addIn struct {
	A float64 `json:"a" jsonschema:"first addend"`
	B float64 `json:"b" jsonschema:"second addend"`
}

type addOut struct {
	Sum float64 `json:"sum"`
}

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "greeter", Version: "0.1.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "greet", Description: "Greet someone by name."},
		func(_ context.Context, _ *mcp.CallToolRequest, in greetIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("Hello, %s!", in.Name)}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Add two numbers."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
			return nil, addOut{Sum: in.A + in.B}, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
