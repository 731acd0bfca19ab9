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

// benchCatalog serves servers go-sdk servers of perServer tools each over
// streamable HTTP on 127.0.0.1, their descriptions made of varied words,
// and returns the servers: entries of a config in front of them.
func benchCatalog(b *testing.B, servers, perServer int) string {
	b.Helper()
	verbs := []string{"create", "list", "get", "update", "delete", "search", "send", "close", "merge", "archive"}
	nouns := []string{"issue", "pull request", "file", "message", "user", "project", "invoice", "ticket", "branch", "calendar event",
		"document", "channel", "deployment", "record", "comment", "label", "order", "customer", "report", "folder"}
	var entries strings.Builder
	for s := range servers {
		srv := mcp.NewServer(&mcp.Implementation{Name: fmt.Sprintf("s%d", s), Version: "1"}, nil)
		for i := range perServer {
			v, n := verbs[(i+s)%len(verbs)], nouns[(i/len(verbs)+s)%len(nouns)]
			srv.AddTool(&mcp.Tool{Name: fmt.Sprintf("%s_%s_%d", v, strings.ReplaceAll(n, " ", "_"), i),
				Description: fmt.Sprintf("%s a %s in the workspace, with its owner and its history (variant %d).", v, n, i),
				InputSchema: map[string]any{"type": "object", "properties": map[string]any{
					"id": map[string]any{"type": "string", "description": "The " + n + "'s ID."}}}},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return &mcp.CallToolResult{}, nil
				})
		}
		hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
		b.Cleanup(hs.Close)
		fmt.Fprintf(&entries, "  s%d: {type: streamable-http, url: %q}\n", s, hs.URL+"/mcp")
	}
	return entries.String()
}

// BenchmarkGatewaySearch is one gatehouse__search_tools call from a go-sdk
// client through the gateway (admission, the pipeline, the caller's
// visibility before the cut) over 1,000 tools of 5 servers, all over
// loopback HTTP in this process.
func BenchmarkGatewaySearch(b *testing.B) {
	dir := b.TempDir()
	yml := fmt.Sprintf("listen: 127.0.0.1:0\nstore: sqlite:%s\nsearch: {enabled: true}\nservers:\n%s",
		filepath.Join(dir, "gh.db"), benchCatalog(b, 5, 200))
	_, url := serveGateway(b, yml, dir)
	ctx := context.Background()
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, statefulSession())
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	args := map[string]any{"query": "open a new pull request for my branch"}
	b.ReportAllocs()
	for b.Loop() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: searchToolName, Arguments: args})
		if err != nil || res.IsError {
			b.Fatalf("%v %+v", err, res)
		}
	}
}

// BenchmarkGatewayStableList is one tools/list with search.enabled absent
// over 1,000 tools: the caller's visible catalog is measured against the
// budget on every list (it is over: the answer is the stable list).
func BenchmarkGatewayStableList(b *testing.B) {
	dir := b.TempDir()
	yml := fmt.Sprintf("listen: 127.0.0.1:0\nstore: sqlite:%s\nservers:\n%s", filepath.Join(dir, "gh.db"), benchCatalog(b, 5, 200))
	_, url := serveGateway(b, yml, dir)
	ctx := context.Background()
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, statefulSession())
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	b.ReportAllocs()
	for b.Loop() {
		res, err := cs.ListTools(ctx, nil)
		if err != nil || len(res.Tools) != 1 {
			b.Fatalf("%v %d tools", err, len(res.Tools))
		}
	}
}
