package gateway

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkGatewayCallLatest is BenchmarkGatewayCall for a go-sdk client
// at its newest revision (2026-07-28) through a gateway with
// http.bothRevisions (the default): each call is served without a
// session, read and answered by the byte path (front_latest.go). On
// 2026-12-05: about 484 KB and 547 allocations a call against 430 KB and
// 456 on a session (before that byte path: 985 KB and 860, nine tenths of
// the bytes in the go-sdk's JSON decoders).
func BenchmarkGatewayCallLatest(b *testing.B) {
	up := benchEcho(b)
	dir := b.TempDir()
	yml := fmt.Sprintf("listen: 127.0.0.1:0\nhttp: {bothRevisions: true}\nstore: sqlite:%s\nservers:\n  echo:\n    type: streamable-http\n    url: %s/mcp\n    prefix: \"\"\n",
		filepath.Join(dir, "gh.db"), up)
	_, url := serveGateway(b, yml, dir)
	ctx := context.Background()
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	text := strings.Repeat("x", 64)
	b.ReportAllocs()
	for b.Loop() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}
