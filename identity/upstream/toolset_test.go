package upstream_test

import (
	"context"
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/diag"
	"github.com/gatehouse-dev/gatehouse/identity/upstream"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/authserver"
	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

func openToolset(t *testing.T, url string, opts *upstream.Options, tsOpts *toolset.Options) *toolset.Toolset {
	t.Helper()
	prefix := ""
	ts, err := toolset.Open(context.Background(), []toolset.Server{{
		Config: plugin.ServerConfig{Name: "protected", Type: plugin.TransportStreamableHTTP, URL: url},
		Prefix: &prefix,
		OAuth:  upstream.Factory(opts),
	}}, tsOpts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ts.Close() })
	return ts
}

// TestToolsetOAuth: an agent's toolset reaches a server that requires the
// MCP authorization flow: the 401, discovery, the automated walk, the
// listing and the calls; tokens expire and are refreshed unnoticed; a tool
// that needs more scope steps up.
func TestToolsetOAuth(t *testing.T) {
	ctx := context.Background()
	as := startAS(t, authserver.Options{TokenLifetime: 5 * time.Second}) // within oauth2's margin: every request refreshes
	srv := startMCP(t, as.Issuer(), nil)
	tokens := &upstream.MemoryTokens{}
	ts := openToolset(t, srv.URL, agentOptions(tokens), nil)
	tools, err := ts.Tools(ctx)
	if err != nil || len(tools) != 2 {
		t.Fatalf("tools %v, %v; diagnostics %v", tools, err, ts.Diagnostics())
	}
	for _, name := range []string{"echo", "echo", "admin", "echo"} {
		res, err := ts.Call(ctx, name, map[string]any{}, toolset.CallInfo{})
		if err != nil || res.IsError {
			t.Fatalf("call %s: %v %v", name, err, res)
		}
	}
	if srv.calls.Load() != 4 || as.Codes() != 2 || as.Refreshes() == 0 {
		t.Fatalf("effects %d, codes %d (want 2: the first and the step-up), refreshes %d (want some)", srv.calls.Load(), as.Codes(), as.Refreshes())
	}
	if set, _ := tokens.Token(ctx, "protected", "alice"); set == nil || !strings.Contains(strings.Join(set.Scopes, " "), "mcp:admin") {
		t.Fatalf("stored token set %v: want the stepped-up scopes", set)
	}
	up, err := ts.Upstreams(ctx)
	if err != nil || len(up) != 1 {
		t.Fatalf("upstreams %v %v", up, err)
	}
	if _, _, ok := up[0].HTTP(); ok {
		t.Fatal("an OAuth server offers its HTTP client for the byte path, which carries no token")
	}
}

// TestToolsetOAuthEgress: the handler a toolset builds uses the toolset's
// egress guard (its host list and resolver): a token endpoint on a private
// address is refused and the server is skipped with the unsafe-address
// rule; nothing is dialed.
func TestToolsetOAuthEgress(t *testing.T) {
	ctx := context.Background()
	port, accepted := countingListener(t)
	as := startHostileAS(t, func(h *hostileAS) { h.tokenURL = "https://tok.evil.test:" + strconv.Itoa(port) + "/token" })
	srv := startMCP(t, as.URL, nil)
	ts := openToolset(t, srv.URL, agentOptions(nil), &toolset.Options{
		LookupIP: func(_ context.Context, host string) ([]netip.Addr, error) {
			if host == "tok.evil.test" {
				return []netip.Addr{netip.MustParseAddr("10.9.8.7")}, nil
			}
			return nil, errors.New("no such host")
		},
	})
	if _, err := ts.Tools(ctx); err != nil {
		t.Fatal(err)
	}
	ds := ts.Diagnostics()
	if len(ds) != 1 || ds[0].Rule != diag.UnsafeAddress || !strings.Contains(ds[0].Message, "tok.evil.test") {
		t.Fatalf("diagnostics %v, want one unsafe-address for tok.evil.test", ds)
	}
	if accepted.Load() != 0 || srv.calls.Load() != 0 {
		t.Fatalf("token connections %d, effects %d; want 0", accepted.Load(), srv.calls.Load())
	}
}
