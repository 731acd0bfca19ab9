package upauth

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/gatehouse-dev/gatehouse/identity/upstream"
	"github.com/gatehouse-dev/gatehouse/internal/egress"
)

// public stands in for a public address: the tests' guard resolves
// mcp.test and as.test to it, and its inner dialer dials it as 127.0.0.1.
const public = "93.184.216.34"

// remoteGuard is an egress guard without a host list for which mcp.test
// and as.test are public servers (dialed on 127.0.0.1 by its inner
// dialer), as a remote upstream is: its loopback literals are the
// gateway's own.
func remoteGuard() *egress.Guard {
	lookup := func(_ context.Context, host string) ([]netip.Addr, error) {
		if host == "mcp.test" || host == "as.test" {
			return []netip.Addr{netip.MustParseAddr(public)}, nil
		}
		return nil, fmt.Errorf("no such host %q", host)
	}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, _ := net.SplitHostPort(addr)
		if host == public {
			host = "127.0.0.1"
		}
		var d net.Dialer
		return d.DialContext(ctx, network, net.JoinHostPort(host, port))
	}
	// The test servers' certificates name 127.0.0.1 and example.com, not
	// mcp.test: not verified here (the go-sdk requires https of a remote
	// server's metadata).
	return egress.New(&egress.Options{LookupIP: lookup, Transport: &http.Transport{DialContext: dial,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}) //nolint:gosec // test servers

}

// counter is a loopback HTTP server that counts what reaches it: a
// service on the gateway's host that a remote server's metadata names.
func counter(t *testing.T, tls bool) (string, *atomic.Int64) {
	var n atomic.Int64
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		http.Error(w, "no", http.StatusNotFound)
	}))
	if tls {
		ts.StartTLS()
	} else {
		ts.Start()
	}
	t.Cleanup(ts.Close)
	return ts.URL, &n
}

// remoteUpstream is an upstream served as https://mcp.test:PORT/mcp (a
// remote server) answering 401 with its resource metadata, and an
// authorization server served as https://as.test:PORT, both as the test
// sets them.
type remoteUpstream struct {
	url, issuer string
	challenge   string // the 401's resource_metadata ("": its own well-known URL)
	asRedirect  string // where the authorization server redirects its metadata ("": nowhere)
	prm         map[string]any
	asm         map[string]any
}

func startRemote(t *testing.T) *remoteUpstream {
	r := &remoteUpstream{}
	as := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/.well-known/oauth-authorization-server" {
			http.NotFound(w, req)
			return
		}
		if r.asRedirect != "" {
			http.Redirect(w, req, r.asRedirect, http.StatusTemporaryRedirect)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(r.asm)
	}))
	t.Cleanup(as.Close)
	_, asPort, _ := net.SplitHostPort(as.Listener.Addr().String())
	r.issuer = "https://as.test:" + asPort
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(r.prm)
			return
		}
		rm := r.challenge
		if rm == "" {
			rm = strings.TrimSuffix(r.url, "/mcp") + "/.well-known/oauth-protected-resource/mcp"
		}
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata="%s"`, rm))
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	}))
	t.Cleanup(up.Close)
	_, upPort, _ := net.SplitHostPort(up.Listener.Addr().String())
	r.url = "https://mcp.test:" + upPort + "/mcp"
	r.prm = map[string]any{"resource": r.url, "authorization_servers": []string{r.issuer}}
	r.asm = map[string]any{"issuer": r.issuer, "authorization_endpoint": r.issuer + "/authorize", "token_endpoint": r.issuer + "/token",
		"code_challenge_methods_supported": []string{"S256"}}
	return r
}

func remoteManager(t *testing.T, r *remoteUpstream, tokens upstream.TokenStore) (*Manager, *Server) {
	t.Helper()
	m, err := New(&Options{Servers: []Server{{Name: "up", URL: r.url, Mode: User, ClientID: "gw"}},
		Tokens: tokens, Flows: NewMemoryFlows(), PublicURL: "http://127.0.0.1:9"})
	if err != nil {
		t.Fatal(err)
	}
	m.guard = remoteGuard()
	t.Cleanup(func() { _ = m.Close() })
	return m, m.servers["up"]
}

// TestMetadataNeverReachesLoopback: a remote upstream (no host list) whose
// metadata names a loopback address of the gateway's host (its
// WWW-Authenticate resource_metadata, its authorization server, a
// redirect of its authorization server's metadata, the token endpoint):
// the connect flow is refused before the browser is sent anywhere, and
// nothing reaches the loopback service; a stored connection whose token
// endpoint is on loopback is not refreshed there. The same flow with all
// of it remote begins.
func TestMetadataNeverReachesLoopback(t *testing.T) {
	ctx := context.Background()
	t.Run("all remote", func(t *testing.T) {
		r := startRemote(t)
		m, s := remoteManager(t, r, &upstream.MemoryTokens{})
		u, _, err := m.authorization(ctx, s)
		if err != nil || !strings.HasPrefix(u.String(), r.issuer+"/authorize?") {
			t.Fatalf("authorization: %v %v", u, err)
		}
	})
	cases := []struct {
		name string
		tls  bool // the loopback service speaks TLS
		set  func(r *remoteUpstream, loop string)
	}{
		{"resource_metadata on loopback", false, func(r *remoteUpstream, loop string) { r.challenge = loop + "/prm" }},
		{"authorization server on loopback", false, func(r *remoteUpstream, loop string) {
			r.prm["authorization_servers"] = []string{loop}
		}},
		{"authorization server metadata redirected to loopback", true, func(r *remoteUpstream, loop string) {
			r.asRedirect = loop + "/.well-known/oauth-authorization-server"
		}},
		{"token endpoint on loopback", false, func(r *remoteUpstream, loop string) { r.asm["token_endpoint"] = loop + "/token" }},
		{"authorization endpoint on loopback", false, func(r *remoteUpstream, loop string) {
			r.asm["authorization_endpoint"] = loop + "/authorize"
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			loop, hits := counter(t, tc.tls)
			r := startRemote(t)
			tc.set(r, loop)
			m, s := remoteManager(t, r, &upstream.MemoryTokens{})
			u, _, err := m.authorization(ctx, s)
			if tc.name == "resource_metadata on loopback" {
				// The well-known URL on the server's own origin is used
				// instead; the loopback one was not fetched.
				if err != nil {
					t.Fatalf("authorization: %v", err)
				}
			} else if err == nil {
				t.Fatalf("the browser would be sent to %v", u)
			}
			if hits.Load() != 0 {
				t.Fatalf("the loopback service got %d requests", hits.Load())
			}
			// Fetched as the flow fetches it, the loopback URL is refused
			// at dial time.
			hc, err := m.learntClient("token endpoint", s, loop+"/token")
			if err != nil {
				t.Fatal(err)
			}
			defer hc.CloseIdleConnections()
			resp, err := hc.Post(loop+"/token", "application/x-www-form-urlencoded", strings.NewReader("code=c0de"))
			if err == nil {
				resp.Body.Close()
				t.Fatalf("the token request reached loopback: %s", resp.Status)
			}
			if hits.Load() != 0 {
				t.Fatalf("the loopback service got %d requests", hits.Load())
			}
		})
	}
	t.Run("jwks_uri on loopback", func(t *testing.T) {
		// The upstream's ID token names the account connected: its keys
		// are at the jwks_uri of the authorization server's metadata.
		loop, hits := counter(t, false)
		r := startRemote(t)
		m, s := remoteManager(t, r, &upstream.MemoryTokens{})
		seg := func(v any) string { b, _ := json.Marshal(v); return base64.RawURLEncoding.EncodeToString(b) }
		idToken := seg(map[string]any{"alg": "RS256", "kid": "k1", "typ": "JWT"}) + "." +
			seg(map[string]any{"iss": r.issuer, "aud": "gw", "sub": "u-1", "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()}) + ".c2ln"
		tok := (&oauth2.Token{AccessToken: "a"}).WithExtra(map[string]any{"id_token": idToken})
		if got := m.upstreamAccount(ctx, s, &pending{Issuer: r.issuer, JWKS: loop + "/keys", OpenID: true}, tok); got != "" {
			t.Fatalf("account %q", got)
		}
		if hits.Load() != 0 {
			t.Fatalf("the loopback service got %d requests", hits.Load())
		}
	})
	t.Run("refresh at a loopback token endpoint", func(t *testing.T) {
		loop, hits := counter(t, false)
		r := startRemote(t)
		tokens := &upstream.MemoryTokens{}
		if err := tokens.PutToken(ctx, "up", "alice", &upstream.TokenSet{AccessToken: "old", RefreshToken: "r", TokenType: "Bearer",
			Expiry: time.Now().Add(-time.Hour), TokenURL: loop + "/token", ClientID: "gw"}); err != nil {
			t.Fatal(err)
		}
		m, s := remoteManager(t, r, tokens)
		hc, err := m.guard.Client(s.URL, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer hc.CloseIdleConnections()
		h, err := upstream.New(hc, m.handlerOptions(s, "alice", "test"))
		if err != nil {
			t.Fatal(err)
		}
		ts, err := h.TokenSource(ctx)
		if err != nil || ts == nil {
			t.Fatalf("token source: %v %v", ts, err)
		}
		if _, err := ts.Token(); err == nil {
			t.Fatal("refreshed")
		}
		if hits.Load() != 0 {
			t.Fatalf("the loopback service got %d requests", hits.Load())
		}
	})
}
