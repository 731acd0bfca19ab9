package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// A gateway in front of one MCP server: the server's tool is served under
// its projected name (the server's name, "__", the tool's name), and a
// call through the gateway reaches it. Without auth the gateway serves
// loopback callers only.
func ExampleNew() {
	ctx := context.Background()

	// An upstream MCP server with one tool, over streamable HTTP.
	upstream := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "1"}, nil)
	type forecastIn struct {
		City string `json:"city"`
	}
	mcp.AddTool(upstream, &mcp.Tool{Name: "forecast", Description: "Tomorrow's weather in a city."},
		func(_ context.Context, _ *mcp.CallToolRequest, in forecastIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sunny in " + in.City}}}, nil, nil
		})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return upstream }, nil))
	defer up.Close()

	// The gateway's config: the server inline, and a SQLite store (the
	// catalogue, the trust baselines, the journal) in a directory of its own.
	dir, err := os.MkdirTemp("", "gatehouse-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	yml := fmt.Sprintf(`
store: "sqlite:%s"
servers:
  weather:
    type: streamable-http
    url: %s
`, filepath.Join(dir, "gatehouse.db"), up.URL)
	cfg, err := gateway.ParseConfig([]byte(yml), filepath.Join(dir, "gatehouse.yaml"), dir)
	if err != nil {
		panic(err)
	}
	g, err := gateway.New(ctx, cfg, nil)
	if err != nil {
		panic(err)
	}
	defer g.Close()
	h, err := g.Handler()
	if err != nil {
		panic(err)
	}
	gs := httptest.NewServer(h) // in production: g.Serve(ctx, listener)
	defer gs.Close()

	// An MCP client of the gateway.
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: gs.URL + "/mcp"}, nil)
	if err != nil {
		panic(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		panic(err)
	}
	for _, t := range tools.Tools {
		fmt.Println("tool:", t.Name)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "weather__forecast", Arguments: map[string]any{"city": "Lisbon"}})
	if err != nil {
		panic(err)
	}
	fmt.Println("result:", res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// tool: weather__forecast
	// result: sunny in Lisbon
}
