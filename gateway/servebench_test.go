package gateway

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"testing"
)

// BenchmarkGatewayCallServe is BenchmarkGatewayCall through the gateway's
// own Serve (its http.Server, with the HTTP limits), not httptest's.
func BenchmarkGatewayCallServe(b *testing.B) {
	up := benchEcho(b)
	dir := b.TempDir()
	yml := fmt.Sprintf("listen: 127.0.0.1:0\nstore: sqlite:%s\nservers:\n  echo:\n    type: streamable-http\n    url: %s/mcp\n    prefix: \"\"\n",
		filepath.Join(dir, "gh.db"), up)
	g, _ := serveGateway(b, yml, dir)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx, ln) }()
	defer func() { cancel(); <-done }()
	benchCalls(b, "http://"+ln.Addr().String()+"/mcp")
}
