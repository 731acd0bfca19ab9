package gateway

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/bearer"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/authserver"
)

// TestOAuthIntrospection: an opaque access token obtained from a real
// authorization server (client_credentials) calls a tool through the
// gateway, which checks it at the server's RFC 7662 endpoint with its own
// client credentials (the secret from the environment variable the config
// names); presented again it is answered from the cache. A token the server
// does not know, and one it revoked, get the 401 challenge with no effect
// upstream. A JWT from the same server still goes to the JWT verifier, not
// to introspection.
func TestOAuthIntrospection(t *testing.T) {
	up := newRugServer(t)
	as := authserver.Start(t, authserver.Options{Clients: []authserver.Client{
		{ID: "agent", Secret: "s3cret", Subject: "agent-7", Opaque: true},
		{ID: "jwt-agent", Secret: "pw", Subject: "agent-8"},
		{ID: "gatehouse", Secret: "rs-secret"},
	}})
	t.Setenv("GH_TEST_INTROSPECTION_SECRET", "rs-secret")
	e := startASGateway(t, up, func(string) string {
		return fmt.Sprintf("{issuer: %q, requiredScopes: [mcp], introspection: {url: %q, clientID: gatehouse, clientSecretEnv: GH_TEST_INTROSPECTION_SECRET}}",
			as.Issuer(), as.IntrospectionURL())
	})
	resource, clk, call, challenge := e.resource, e.clk, e.call, e.challenge
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	tok, err := as.Token(ctx, "agent", "s3cret", resource, "mcp", "tool:*")
	if err != nil {
		t.Fatal(err)
	}
	if bearer.LooksLikeJWS(tok) {
		t.Fatalf("the opaque client got a JWS: %s", tok)
	}
	if a := call(tok); !strings.Contains(a, "charged") || up.charges.Load() != 1 {
		t.Fatalf("an opaque token: %s (%d effects)", a, up.charges.Load())
	}
	n := as.Introspections()
	if n == 0 {
		t.Fatal("the opaque token was not introspected")
	}
	if a := call(tok); !strings.Contains(a, "charged") || up.charges.Load() != 2 {
		t.Fatalf("the opaque token again: %s (%d effects)", a, up.charges.Load())
	}
	if as.Introspections() != n {
		t.Errorf("presented again within the cache TTL: %d more introspections, want 0", as.Introspections()-n)
	}

	// A JWT goes to the verifier: it works, and is not introspected.
	jwtTok, err := as.Token(ctx, "jwt-agent", "pw", resource, "mcp", "tool:*")
	if err != nil {
		t.Fatal(err)
	}
	if a := call(jwtTok); !strings.Contains(a, "charged") || up.charges.Load() != 3 {
		t.Fatalf("a JWT: %s (%d effects)", a, up.charges.Load())
	}
	if as.Introspections() != n {
		t.Errorf("a JWT was introspected (%d more)", as.Introspections()-n)
	}

	// Tokens the server says are not active: 401 with the challenge.
	for name, bad := range map[string]string{"unknown": "opaque-token-the-server-never-issued", "junk": "a.b"} {
		if a := call(bad); !strings.Contains(a, "connect:") || up.charges.Load() != 3 {
			t.Fatalf("%s token: %s (%d effects)", name, a, up.charges.Load())
		}
		if code, www := challenge(bad); code != 401 || !strings.Contains(www, `resource_metadata="`) {
			t.Fatalf("%s token: %d %q", name, code, www)
		}
	}
	as.Revoke("agent-7")
	clk.Advance(6 * time.Minute) // past the cache TTL (5m)
	if code, www := challenge(tok); code != 401 || !strings.Contains(www, `resource_metadata="`) {
		t.Fatalf("revoked opaque token past the cache TTL: %d %q", code, www)
	}
	if a := call(tok); !strings.Contains(a, "connect:") || up.charges.Load() != 3 {
		t.Fatalf("revoked opaque token: %s (%d effects)", a, up.charges.Load())
	}
}

// The introspection secret comes from the environment variable the config
// names: unset, the gateway does not start, and says which variable.
func TestOAuthIntrospectionSecretUnset(t *testing.T) {
	t.Setenv("GH_TEST_UNSET_SECRET", "")
	dir := t.TempDir()
	cfg, err := ParseConfig([]byte(fmt.Sprintf(`store: sqlite:%s
auth:
  resource: http://127.0.0.1:1/mcp
  oauth:
    issuer: http://127.0.0.1:2
    introspection: {url: 'http://127.0.0.1:2/introspect', clientID: gatehouse, clientSecretEnv: GH_TEST_UNSET_SECRET}
`, filepath.Join(dir, "g.db"))), filepath.Join(dir, "gatehouse.yaml"), dir)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(context.Background(), cfg, nil)
	if err == nil {
		_ = g.Close()
		t.Fatal("the gateway started without the introspection secret")
	}
	if !strings.Contains(err.Error(), "GH_TEST_UNSET_SECRET") {
		t.Errorf("error does not name the variable: %v", err)
	}
}

func TestLooksLikeJWS(t *testing.T) {
	for tok, want := range map[string]bool{
		"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln": true,
		"a.b.c": true,
		"a.b":   false, "a.b.c.d.e": false, "a..c": false, ".b.c": false, "a.b.": false,
		"a.b+/.c": false, "opaque_token-1": false, "": false, "a.b.c=": false,
	} {
		if got := bearer.LooksLikeJWS(tok); got != want {
			t.Errorf("bearer.LooksLikeJWS(%q) = %v, want %v", tok, got, want)
		}
	}
}
