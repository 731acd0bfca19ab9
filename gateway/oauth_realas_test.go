package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/authserver"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/testclock"
)

// asGateway is a gateway in front of a rug upstream (pay__charge, ...)
// whose callers bring tokens from a real authorization server
// (internal/fixture/authserver), on a settable clock.
type asGateway struct {
	t        *testing.T
	resource string // the gateway's auth.resource: its own /mcp URL
	h        http.Handler
	clk      *testclock.Clock
}

// startASGateway starts it with oauth (auth.oauth's YAML flow mapping,
// given the resource) and the upstream up.
func startASGateway(t *testing.T, up *rugServer, oauth func(resource string) string) *asGateway {
	t.Helper()
	gs := httptest.NewUnstartedServer(nil)
	e := &asGateway{t: t, resource: "http://" + gs.Listener.Addr().String() + "/mcp", clk: testclock.New(time.Now())}
	dir := t.TempDir()
	e.h = serveAt(t, gs, dir, fmt.Sprintf(`listen: 127.0.0.1:0
store: sqlite:%s
drift: {recheck: 0}
auth:
  resource: %s
  oauth: %s
servers:
  pay: {type: streamable-http, url: %q}
`, filepath.Join(dir, "g.db"), e.resource, oauth(e.resource), up.url), &Options{Clock: e.clk.Now})
	return e
}

// serveAt builds a gateway from the config yml (dir holds its store and is
// its directory) with opts, serves its handler on gs, an unstarted server
// whose URL the config already names (auth.resource), and returns the
// handler. Gateway and server end with the test.
func serveAt(t *testing.T, gs *httptest.Server, dir, yml string, opts *Options) http.Handler {
	t.Helper()
	cfg, err := ParseConfig([]byte(yml), filepath.Join(dir, "gatehouse.yaml"), dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g, err := New(ctx, cfg, opts)
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
	return h
}

// call connects with token and calls pay__charge: the answer, or what
// failed ("connect: ...", "call: ...").
func (e *asGateway) call(token string) string {
	e.t.Helper()
	cs, err := connectAs(e.resource, token)
	if err != nil {
		return "connect: " + err.Error()
	}
	defer cs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "pay__charge", Arguments: map[string]any{"amount": 1}})
	if err != nil {
		return "call: " + err.Error()
	}
	return answer(res, nil)
}

// challenge is the HTTP status and WWW-Authenticate of a request bearing
// token.
func (e *asGateway) challenge(token string) (int, string) {
	e.t.Helper()
	req := httptest.NewRequest("POST", e.resource, strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	return rec.Code, rec.Header().Get("WWW-Authenticate")
}

// TestOAuthRealAuthorizationServer: a client obtains an access token from a
// real authorization server (internal/fixture/authserver: zitadel/oidc's
// provider) by the client_credentials grant with the gateway as its RFC 8707
// resource, and calls a tool through the gateway with it. A token the same
// server issues for another resource is refused with the 401 challenge. The
// server rotates its signing key: a token under the new key is accepted
// without restarting the gateway.
func TestOAuthRealAuthorizationServer(t *testing.T) {
	up := newRugServer(t) // a real go-sdk upstream (tools charge, refund, ...)
	as := authserver.Start(t, authserver.Options{Clients: []authserver.Client{
		{ID: "agent", Secret: "s3cret", Subject: "agent-7"},
	}})
	e := startASGateway(t, up, func(string) string { return fmt.Sprintf("{issuer: %q, requiredScopes: [mcp]}", as.Issuer()) })
	resource, clk, call := e.resource, e.clk, e.call
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

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
	if code, www := e.challenge(other); code != 401 || !strings.Contains(www, `resource_metadata="`) {
		t.Fatalf("another resource's token: %d %q", code, www)
	}

	// Key rotation at the server: past the verifier's refresh interval, a
	// token under the new key is accepted by the running gateway.
	as.Rotate()
	clk.Advance(11 * time.Second)
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
