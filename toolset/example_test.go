package toolset_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

type greetIn struct {
	Name string `json:"name"`
}

// ExampleOpen connects one MCP server (here a go-sdk server on a loopback
// HTTP port), lists the tool map an agent would hand its model, and calls a
// tool by its projected name.
func ExampleOpen() {
	// A server to talk to.
	srv := mcp.NewServer(&mcp.Implementation{Name: "greeter", Version: "1.0.0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "greet", Description: "Greet someone."},
		func(_ context.Context, _ *mcp.CallToolRequest, in greetIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Hello, " + in.Name + "!"}}}, nil, nil
		})
	httpSrv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer httpSrv.Close()

	// Servers usually come from plugins (plugin.Load + toolset.PluginServers);
	// here one is configured in code.
	ctx := context.Background()
	ts, err := toolset.Open(ctx, []toolset.Server{{Config: plugin.ServerConfig{
		Name: "hello", Type: plugin.TransportStreamableHTTP, URL: httpSrv.URL,
	}}}, &toolset.Options{AllowedHosts: []string{"127.0.0.1"}})
	if err != nil {
		log.Fatal(err)
	}
	defer ts.Close()

	tools, err := ts.Tools(ctx) // connects on first use
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range tools {
		fmt.Printf("%s (%s on %s): %s\n", t.Name, t.RemoteName, t.Server, t.Description)
	}
	res, err := ts.Call(ctx, "hello__greet", map[string]any{"name": "Ada"},
		toolset.CallInfo{RunID: "run-1", ToolCallID: "call-1"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	fmt.Println(len(ts.Diagnostics()), "diagnostics")
	// Output:
	// hello__greet (greet on hello): Greet someone.
	// Hello, Ada!
	// 0 diagnostics
}
