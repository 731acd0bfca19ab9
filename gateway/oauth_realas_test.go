package gateway

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/authserver"
)

// TestOAuthRealAuthorizationServer: a client obtains an access token from a
// real authorization server (internal/fixture/authserver: zitadel/oidc's
// provider) by the client_credentials grant with the gateway as its RFC 8707
// resource, and calls a tool through the gateway with it. A token the same
// server issues for another resource is refused with the 401 challenge. The
// server rotates its signing key: a token under the new key is accepted
// without restarting the gateway.
func TestOAuthRealAuthorizationServer(t *testing.T) {
	up := newRugServer(t) // a real go-sdk upstream (tools charge, refund, ...)
	gs := httptest.NewUnstartedServer(nil)
	resource := "http://" + gs.Listener.Addr().String() + "/mcp"
	as := authserver.Start(t, authserver.Options{Clients: []authserver.Client{
		{ID: "agent", Secret: "s3cret", Subject: "agent-7"},
	}})
	clk := &testClock{now: time.Now()}
	dir := t.TempDir()
	cfg, err := ParseConfig([]byte(fmt.Sprintf(`listen: 127.0.0.1:0
store: sqlite:%s
drift: {recheck: 0}
auth:
  resource: %s
  oauth: {issuer: %q, requiredScopes: [mcp]}
servers:
  pay: {type: streamable-http, url: %q}
`, filepath.Join(dir, "g.db"), resource, as.Issuer(), up.url)), filepath.Join(dir, "gatehouse.yaml"), dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g, err := New(ctx, cfg, &Options{Clock: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	h, err := g.Handler()
	if err != nil {
		t.Fatal(err)
	}
	gs.Config.Handler = h
	gs.Start()
	t.Cleanup(gs.Close)

	call := func(token string) string {
		t.Helper()
		cs, err := connectAs(resource, token)
		if err != nil {
			return "connect: " + err.Error()
		}
		defer cs.Close()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "pay__charge", Arguments: map[string]any{"amount": 1}})
		if err != nil {
			return "call: " + err.Error()
		}
		return answer(res, nil)
	}

	tok, err := as.Token(ctx, "agent", "s3cret", resource, "mcp", "tool:*")
	if err != nil {
		t.Fatal(err)
	}
	if a := call(tok); !strings.Contains(a, "charged") || up.charges.Load() != 1 {
		t.Fatalf("a token from the real grant: %s (%d effects)", a, up.charges.Load())
	}

	// Issued by the same server, for another resource: refused.
	other, err := as.Token(ctx, "agent", "s3cret", "https://other.example.com/mcp", "mcp", "tool:*")
	if err != nil {
		t.Fatal(err)
	}
	if a := call(other); !strings.Contains(a, "connect:") || up.charges.Load() != 1 {
		t.Fatalf("a token for another resource: %s", a)
	}
	req := httptest.NewRequest("POST", resource, strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+other)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 401 || !strings.Contains(rec.Header().Get("WWW-Authenticate"), `resource_metadata="`) {
		t.Fatalf("another resource's token: %d %q", rec.Code, rec.Header().Get("WWW-Authenticate"))
	}

	// Key rotation at the server: past the verifier's refresh interval, a
	// token under the new key is accepted by the running gateway.
	as.Rotate()
	clk.advance(11 * time.Second)
	tok2, err := as.Token(ctx, "agent", "s3cret", resource, "mcp", "tool:*")
	if err != nil {
		t.Fatal(err)
	}
	if tok2 == tok {
		t.Fatal("the rotated server issued the same token")
	}
	if a := call(tok2); !strings.Contains(a, "charged") || up.charges.Load() != 2 {
		t.Fatalf("a token under the rotated key: %s (%d effects)", a, up.charges.Load())
	}
}
