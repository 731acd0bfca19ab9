package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// benchEcho serves a go-sdk echo tool over streamable HTTP on 127.0.0.1
// (SSE answers, stateful, like bench/echoserver).
func benchEcho(b *testing.B) string {
	b.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	b.Cleanup(hs.Close)
	return hs.URL
}

// BenchmarkGatewayCall is one unkeyed tools/call from a go-sdk client
// through the gateway's HTTP handler to a go-sdk echo server, all over
// loopback HTTP in this process: what the gateway adds per call in
// allocations (compare BenchmarkDirectCall).
func BenchmarkGatewayCall(b *testing.B) {
	up := benchEcho(b)
	dir := b.TempDir()
	yml := fmt.Sprintf("listen: 127.0.0.1:0\nstore: sqlite:%s\nservers:\n  echo:\n    type: streamable-http\n    url: %s/mcp\n    prefix: \"\"\n",
		filepath.Join(dir, "gh.db"), up)
	_, url := serveGateway(b, yml, dir)
	benchCalls(b, url)
}

// BenchmarkDirectCall is BenchmarkGatewayCall's client against the echo
// server itself.
func BenchmarkDirectCall(b *testing.B) { benchCalls(b, benchEcho(b)) }

func benchCalls(b *testing.B, url string) {
	ctx := context.Background()
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, statefulSession())
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	text := strings.Repeat("x", 64)
	b.ReportAllocs()
	for b.Loop() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
		if err != nil {
			b.Fatal(err)
		}
		if res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != text {
			b.Fatalf("wrong answer: %+v", res)
		}
	}
}
