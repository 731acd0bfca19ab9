package gateway

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/testserver"
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
	benchLatestCalls(b, yml, dir)
}

// BenchmarkGatewayCallLatestStdio is BenchmarkGatewayCallLatest with the
// tool on a stdio server (the fixture's echo, a child process): the call
// goes through the go-sdk's client, and the latest front encodes its
// result. On 2026-12-06 the answer's template decoded once instead of per
// call took 32 KiB off each call (the go-sdk's decoder's buffer).
func BenchmarkGatewayCallLatestStdio(b *testing.B) {
	dir := b.TempDir()
	if _, err := testserver.Build(dir); err != nil {
		b.Fatal(err)
	}
	yml := fmt.Sprintf("listen: 127.0.0.1:0\nhttp: {bothRevisions: true}\nstore: sqlite:%s\nservers:\n  echo:\n    type: stdio\n    command: ./fixture\n    args: [\"-tools\", \"echo\"]\n    prefix: \"\"\n",
		filepath.Join(dir, "gh.db"))
	benchLatestCalls(b, yml, dir)
}

// benchLatestCalls calls echo through a gateway of config yml from a
// go-sdk client at its newest revision.
func benchLatestCalls(b *testing.B, yml, dir string) {
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
