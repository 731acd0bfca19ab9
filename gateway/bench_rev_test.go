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
// http.bothRevisions: each call is served without a session, through the
// go-sdk's server (no byte path). On 2026-12-05: about 985 KB and 860
// allocations a call against 430 KB and 456 on a session, nine tenths of
// the bytes in the go-sdk's JSON decoders (one per look at the request:
// its name, its _meta, the batch, the message).
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
