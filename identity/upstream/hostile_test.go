package upstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/gatehouse-dev/gatehouse/diag"
	"github.com/gatehouse-dev/gatehouse/identity/upstream"
	"github.com/gatehouse-dev/gatehouse/internal/egress"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/authserver"
)

// hostileAS is an authorization server that lies in its metadata: its
// issuer, its token endpoint, its RFC 9207 iss. Its /authorize approves at
// once; its /token never grants.
type hostileAS struct {
	URL                  string
	issuer, tokenURL     string // "" means its own
	iss                  string // the iss its /authorize sends back ("" none)
	advertiseIss         bool
	authorizes, tokenReq atomic.Int64
}

func startHostileAS(t *testing.T, configure func(h *hostileAS)) *hostileAS {
	t.Helper()
	h := &hostileAS{}
	ts := httptest.NewUnstartedServer(nil)
	h.URL = "http://" + ts.Listener.Addr().String()
	configure(h)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		m := map[string]any{
			"issuer": or(h.issuer, h.URL), "authorization_endpoint": h.URL + "/authorize",
			"token_endpoint": or(h.tokenURL, h.URL+"/token"), "code_challenge_methods_supported": []string{"S256"},
			"response_types_supported": []string{"code"}, "authorization_response_iss_parameter_supported": h.advertiseIss,
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(m)
	})
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		h.authorizes.Add(1)
		q := url.Values{"code": {"stolen"}, "state": {r.URL.Query().Get("state")}}
		if h.iss != "" {
			q.Set("iss", h.iss)
		}
		http.Redirect(w, r, r.URL.Query().Get("redirect_uri")+"?"+q.Encode(), http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		h.tokenReq.Add(1)
		http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
	})
	ts.Config.Handler = mux
	ts.Start()
	t.Cleanup(ts.Close)
	return h
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// countingListener accepts TCP connections on 127.0.0.1 and closes them,
// counting: where a request would have gone had egress let it.
func countingListener(t *testing.T) (port int, accepted *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted = &atomic.Int64{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().(*net.TCPAddr).Port, accepted
}

// TestHostileTokenEndpointPrivate: the authorization server's metadata
// names a token endpoint whose host resolves to a private address. The
// egress guard refuses the token request at dial time: nothing is dialed.
// With the host on the allowed list, the same request is dialed.
func TestHostileTokenEndpointPrivate(t *testing.T) {
	ctx := context.Background()
	port, accepted := countingListener(t)
	as := startHostileAS(t, func(h *hostileAS) { h.tokenURL = "https://tok.evil.test:" + strconv.Itoa(port) + "/token" })
	srv := startMCP(t, as.URL, nil)
	lookup := func(addr string) func(context.Context, string) ([]netip.Addr, error) {
		return func(_ context.Context, host string) ([]netip.Addr, error) {
			if host == "tok.evil.test" {
				return []netip.Addr{netip.MustParseAddr(addr)}, nil
			}
			return nil, errors.New("no such host")
		}
	}

	hc := guarded(t, srv.URL, &egress.Options{LookupIP: lookup("10.9.8.7")})
	h, err := upstream.New(hc, agentOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	_, err = connect(ctx, srv.URL, hc, h)
	var ee *egress.Error
	if !errors.As(err, &ee) || ee.Rule != diag.UnsafeAddress || ee.Host != "tok.evil.test" {
		t.Fatalf("connect: %v, want the egress guard's unsafe-address refusal of tok.evil.test", err)
	}
	// (The go-sdk's session close after the failed initialize is refused
	// too and authorizes again: at least one walk, never a token dial.)
	if as.authorizes.Load() == 0 || accepted.Load() != 0 {
		t.Fatalf("authorizes %d, token connections %d; want > 0, 0", as.authorizes.Load(), accepted.Load())
	}

	// Allowed: the operator lists the host (here it resolves to loopback,
	// where the counting listener is).
	hc = guarded(t, srv.URL, &egress.Options{AllowedHosts: []string{"127.0.0.1", "tok.evil.test"}, LookupIP: lookup("127.0.0.1")})
	h, err = upstream.New(hc, agentOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := connect(ctx, srv.URL, hc, h); err == nil {
		t.Fatal("connected through a token endpoint that speaks no TLS")
	}
	if accepted.Load() == 0 {
		t.Fatal("the allowed host's token endpoint was never dialed")
	}
}

// TestHostileResourceMismatch: the resource's metadata names another
// resource. It is not used: the authorization server it names issues
// nothing, no code and no token, and the connection fails.
func TestHostileResourceMismatch(t *testing.T) {
	ctx := context.Background()
	as := startAS(t, authserver.Options{})
	srv := startMCP(t, as.Issuer(), func(string) *oauthex.ProtectedResourceMetadata {
		return &oauthex.ProtectedResourceMetadata{Resource: "https://other.test/mcp", AuthorizationServers: []string{as.Issuer()}}
	})
	hc := guarded(t, srv.URL, nil)
	h, err := upstream.New(hc, agentOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := connect(ctx, srv.URL, hc, h); err == nil {
		t.Fatal("connected with a resource metadata document for another resource")
	}
	if as.Codes() != 0 || as.TokensIssued() != 0 || srv.calls.Load() != 0 {
		t.Fatalf("codes %d, tokens %d, effects %d; want 0", as.Codes(), as.TokensIssued(), srv.calls.Load())
	}
}

// TestHostileIssuer: an authorization server whose metadata names another
// issuer than the one the resource named is refused before the user is
// sent anywhere; one whose authorization response carries an iss that is
// not its issuer (RFC 9207) is refused before the code is exchanged.
func TestHostileIssuer(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		configure func(*hostileAS)
		walked    bool
	}{
		{"metadata issuer", func(h *hostileAS) { h.issuer = "http://127.0.0.1:1" }, false},
		{"response iss", func(h *hostileAS) { h.advertiseIss, h.iss = true, "http://127.0.0.1:1" }, true},
		{"response iss missing", func(h *hostileAS) { h.advertiseIss = true }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			as := startHostileAS(t, tc.configure)
			srv := startMCP(t, as.URL, nil)
			hc := guarded(t, srv.URL, nil)
			h, err := upstream.New(hc, agentOptions(nil))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := connect(ctx, srv.URL, hc, h); err == nil {
				t.Fatal("connected")
			}
			if (as.authorizes.Load() > 0) != tc.walked || as.tokenReq.Load() != 0 {
				t.Fatalf("authorizes %d (want some: %t), token requests %d (want 0)", as.authorizes.Load(), tc.walked, as.tokenReq.Load())
			}
		})
	}
}
