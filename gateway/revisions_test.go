package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRevisionByDefault: a go-sdk client, which asks for 2026-07-28 first,
// is served without a session at 2026-07-28 by a gateway with the defaults
// (http.bothRevisions), its call read by the byte path, and gets a session at
// 2025-11-25 from one with http.bothRevisions: false.
func TestRevisionByDefault(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "ping"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil, nil
	})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(up.Close)
	for _, c := range []struct {
		http      string
		revision  string
		wantSessn bool
	}{
		{"", "2026-07-28", false},
		{"http: {bothRevisions: false}\n", "2025-11-25", true},
	} {
		dir := t.TempDir()
		yml := fmt.Sprintf("listen: 127.0.0.1:0\n%sstore: sqlite:%s\nservers:\n  up:\n    type: streamable-http\n    url: %s/mcp\n    prefix: \"\"\n",
			c.http, filepath.Join(dir, "gh.db"), up.URL)
		g, url := serveGateway(t, yml, dir)
		cl := mcp.NewClient(&mcp.Implementation{Name: "default", Version: "1"}, nil)
		cs, err := cl.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
		if err != nil {
			t.Fatalf("%q: %v", c.http, err)
		}
		if v := cs.InitializeResult().ProtocolVersion; v != c.revision || (cs.ID() != "") != c.wantSessn {
			t.Errorf("%q: revision %s, session %q; want %s, a session %v", c.http, v, cs.ID(), c.revision, c.wantSessn)
		}
		r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ping"})
		if err != nil || r.IsError || r.Content[0].(*mcp.TextContent).Text != "pong" {
			t.Errorf("%q: call: %v %+v", c.http, err, r)
		}
		if l := loggedCalls(t, g); !c.wantSessn && (len(l) != 1 || l[0].Front != "bytes") {
			t.Errorf("%q: call lines %+v; want one read by the byte path", c.http, l)
		}
		_ = cs.Close()
	}
}
