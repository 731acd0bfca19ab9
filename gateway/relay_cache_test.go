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

// TestRelayedReadIsPrivate: a resources/read relayed from an upstream that
// states no cacheScope (as a server of an earlier protocol revision: here
// a go-sdk server whose middleware clears what its SDK fills in) reaches
// the caller, on the wire, as "private": content read for one caller is
// not for a shared cache to serve to another. A scope the upstream states
// is kept ("private", and "public" with its ttlMs).
func TestRelayedReadIsPrivate(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "cache", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "noop", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	for _, scope := range []string{"none", "private", "public"} {
		uri := "cache://" + scope
		s.AddResource(&mcp.Resource{URI: uri, Name: scope}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			res := &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: "for " + scope}}}
			if scope != "none" {
				res.CacheScope, res.TTLMs = scope, 5000
			}
			return res, nil
		})
	}
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if r, ok := res.(*mcp.ReadResourceResult); ok && r.Contents[0].URI == "cache://none" {
				r.CacheScope = "" // what the SDK filled in: the server stated none
			}
			return res, err
		}
	})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(up.Close)
	dir := t.TempDir()
	_, url := serveGateway(t, fmt.Sprintf(`listen: 127.0.0.1:0
store: sqlite:%s
auth:
  tokens:
    - {sha256: %s, subject: alice}
servers:
  up: {type: streamable-http, url: %s/mcp}
`, filepath.Join(dir, "g.db"), hashOf("alice-token"), up.URL), dir)
	cs := session(t, url, "alice-token")
	for _, tc := range []struct{ uri, want string }{
		{"cache://none", `"ttlMs":0,"cacheScope":"private"`},
		{"cache://private", `"ttlMs":5000,"cacheScope":"private"`},
		{"cache://public", `"ttlMs":5000,"cacheScope":"public"`},
	} {
		status, _, body := post(t, url, cs, "alice-token", fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":%q}}`, tc.uri))
		if status != http.StatusOK || !strings.Contains(string(body), tc.want) || !strings.Contains(string(body), `"text":"for `) {
			t.Errorf("%s: %d %s, want %s", tc.uri, status, body, tc.want)
		}
	}
}
