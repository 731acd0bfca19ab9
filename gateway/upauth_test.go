package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/gatehouse-dev/gatehouse/identity/upstream"
	"github.com/gatehouse-dev/gatehouse/internal/egress"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/authserver"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/pgtest"
	"github.com/gatehouse-dev/gatehouse/internal/identity/oauth"
	"github.com/gatehouse-dev/gatehouse/internal/vault"
)

// protectedUpstream is a real go-sdk MCP server over streamable HTTP on
// 127.0.0.1 that requires a JWT of the authorization server issued for its
// URL (RFC 8707), and answers a 401 with its protected resource metadata
// (RFC 9728). It counts the effects of its tool echo and keeps the bearer
// tokens its tools/call requests carried.
type protectedUpstream struct {
	url     string
	effects atomic.Int64
	mu      sync.Mutex
	seen    []string // bearer tokens of tools/call requests, in order
	claims  []map[string]any
}

func startProtected(t *testing.T, issuer string) *protectedUpstream {
	t.Helper()
	return startProtectedOn(t, issuer, "127.0.0.1")
}

// startProtectedOn is startProtected with host in its URL (the server
// listens on 127.0.0.1: host is 127.0.0.1 or a name that resolves to it,
// "localhost").
func startProtectedOn(t *testing.T, issuer, host string) *protectedUpstream {
	t.Helper()
	p := &protectedUpstream{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "protected", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, any, error) {
			p.effects.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echoed"}}}, nil, nil
		})
	protect(t, p, issuer, host, srv, nil)
	return p
}

// protect serves srv (with hopts) as p, at a URL with host, requiring
// tokens of issuer for p.url.
func protect(t *testing.T, p *protectedUpstream, issuer, host string, srv *mcp.Server, hopts *mcp.StreamableHTTPOptions) {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	_, port, _ := net.SplitHostPort(ts.Listener.Addr().String())
	base := "http://" + net.JoinHostPort(host, port)
	p.url = base + "/mcp"
	v, err := oauth.New(&oauth.Options{Issuer: issuer, Audience: p.url})
	if err != nil {
		t.Fatal(err)
	}
	metaURL := base + "/.well-known/oauth-protected-resource/mcp"
	mux := http.NewServeMux()
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(
		&oauthex.ProtectedResourceMetadata{Resource: p.url, AuthorizationServers: []string{issuer}, ScopesSupported: []string{"mcp"}}))
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, hopts)
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		var id oauth.Identity
		var err error // the request's own: requests run at once
		if ok {
			id, err = v.Verify(r.Context(), tok)
		}
		if !ok || err != nil {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata=%q, scope="mcp"`, metaURL))
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"tools/call"`)) {
			p.mu.Lock()
			p.seen = append(p.seen, tok)
			p.claims = append(p.claims, map[string]any{"sub": id.Subject})
			p.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	ts.Config.Handler = mux
	ts.Start()
	t.Cleanup(func() {
		ts.Close()
		// A session whose client did not end it (a revoked connection's
		// session may not get its DELETE through) would wait for its idle
		// timeout: ended here.
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
	})
}

// lastSeen is the bearer token of the last tools/call that reached it.
func (p *protectedUpstream) lastSeen() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.seen) == 0 {
		return ""
	}
	return p.seen[len(p.seen)-1]
}

func (p *protectedUpstream) sawToken(tok string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Contains(p.seen, tok)
}

// serviceCallback is the redirect URI of the operator's `gatehouse
// connect` in these tests: Walk stops at it, so nothing listens there.
const serviceCallback = "http://127.0.0.1:1/callback"

// connectService obtains the service connection (subject "") of server at
// url into tokens, as `gatehouse connect` does: the authorization-code
// grant walked without a browser.
func connectService(t *testing.T, tokens upstream.TokenStore, server, url string) {
	t.Helper()
	connectServiceVia(t, egress.New(nil), tokens, server, url)
}

// connectServiceVia is connectService through the egress guard g (an
// operator's gatehouse connect runs under the config's allowedHosts).
func connectServiceVia(t *testing.T, g *egress.Guard, tokens upstream.TokenStore, server, url string) {
	t.Helper()
	hc, err := g.Client(url, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer hc.CloseIdleConnections()
	h, err := upstream.New(hc, &upstream.Options{
		Client:      &oauthex.ClientCredentials{ClientID: "gw", ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: "gw-secret"}},
		RedirectURL: serviceCallback, Fetch: upstream.Walk(serviceCallback),
		Tokens: tokens, Server: server,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "operator", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, OAuthHandler: h, DisableStandaloneSSE: true}, statefulSession())
	if err != nil {
		t.Fatalf("service connection: %v", err)
	}
	_ = cs.Close()
	if set, _ := tokens.Token(ctx, server, ""); set == nil {
		t.Fatal("the service connection was not stored")
	}
}

// userGateway is a gateway whose server up has auth: user, callers alice
// and bob with static tokens.
type userGateway struct {
	t      *testing.T
	url    string // the gateway's base URL
	as     *authserver.Server
	up     *protectedUpstream
	tokens upstream.TokenStore
	db     string // the gateway's SQLite file (startUserGatewayOn)
}

func sum(tok string) string { s := sha256.Sum256([]byte(tok)); return hex.EncodeToString(s[:]) }

const (
	aliceToken = "alice-static-token"
	bobToken   = "bob-static-token"
)

func userConfig(dir, storeDSN, publicURL, upURL string) string {
	return fmt.Sprintf(`listen: 127.0.0.1:0
store: %s
drift: {recheck: 0}
auth:
  tokens:
    - {sha256: %s, subject: alice}
    - {sha256: %s, subject: bob}
connect: {publicURL: %q}
servers:
  up:
    type: streamable-http
    url: %q
    auth: user
    oauth: {clientID: gw, clientSecretEnv: GW_UP_SECRET}
`, storeDSN, sum(aliceToken), sum(bobToken), publicURL, upURL)
}

// call calls up__echo as the holder of token and returns the result.
func (e *userGateway) call(token string) *mcp.CallToolResult { return e.callKeyed(token, "") }

// callKeyed is call with _meta.idempotencyKey key ("": none).
func (e *userGateway) callKeyed(token, key string) *mcp.CallToolResult {
	e.t.Helper()
	cs, err := connectAs(e.url+"/mcp", token)
	if err != nil {
		e.t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	params := &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{}}
	if key != "" {
		params.Meta = mcp.Meta{"idempotencyKey": key}
	}
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		e.t.Fatalf("call: %v", err)
	}
	return res
}

// connectURL returns the connectURL of an auth_required result (fails
// the test for any other).
func connectURL(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	b, _ := json.Marshal(res.StructuredContent)
	var sc struct {
		Code       string `json:"code"`
		Retryable  bool   `json:"retryable"`
		ConnectURL string `json:"connectURL"`
	}
	_ = json.Unmarshal(b, &sc)
	if !res.IsError || sc.Code != "auth_required" || sc.ConnectURL == "" {
		t.Fatalf("want auth_required with a connectURL, got %s", b)
	}
	return sc.ConnectURL
}

// browse plays the browser on a connect URL: a fresh cookie jar, every
// redirect followed (the gateway, the authorization server's auto-approving
// login, the gateway's callback), bearer when set. It returns the last
// status.
func browse(t *testing.T, u, bearer string) int {
	t.Helper()
	proof := bearer
	if proof == "" {
		proof = aliceToken // a browser without credentials: alice's, whose URLs these tests walk
	}
	return walk(t, u, bearer, proof)
}

// walk opens u in a browser (a client with a cookie jar that follows
// redirects), sending bearer when set; see openConnect. It returns the
// last status.
func walk(t *testing.T, u, bearer, proof string) int {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	code, _, _ := openConnect(t, &http.Client{Jar: jar, Timeout: 30 * time.Second}, u, bearer, proof)
	return code
}

// openConnect opens u with c, sending bearer when set. A connect URL's
// page is answered by its form, POSTed from the page's origin with proof
// in its token field (a static subject's proof), as a person would. It
// returns the last answer's status, body and Location.
func openConnect(t *testing.T, c *http.Client, u, bearer, proof string) (int, string, string) {
	t.Helper()
	do := func(req *http.Request) (int, string, string) {
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("browsing %s: %v", req.URL, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header.Get("Location")
	}
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	code, body, loc := do(req)
	pu, _ := url.Parse(u)
	if code != http.StatusOK || !strings.HasPrefix(pu.Path, "/connect/") || !strings.Contains(body, `name="csrf"`) {
		return code, body, loc
	}
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
	if csrf == nil {
		t.Fatalf("the connect page has no form token: %s", body)
	}
	form := url.Values{"flow": {pu.Query().Get("flow")}, "csrf": {html.UnescapeString(csrf[1])}}
	if proof != "" {
		form.Set("token", proof)
	}
	req, _ = http.NewRequest(http.MethodPost, pu.Scheme+"://"+pu.Host+pu.Path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", pu.Scheme+"://"+pu.Host)
	return do(req)
}

// startUserGateway starts the authorization server, the protected
// upstream, the service connection and a gateway on the store dsn.
func startUserGateway(t *testing.T, tokens upstream.TokenStore) *userGateway {
	t.Helper()
	t.Setenv("GW_UP_SECRET", "gw-secret")
	gs := httptest.NewUnstartedServer(nil)
	e := &userGateway{t: t, url: "http://" + gs.Listener.Addr().String(), tokens: tokens}
	// Access tokens live 5s: within oauth2's 10s expiry margin, so every
	// use of a stored token refreshes it first (a rotating refresh token).
	e.as = authserver.Start(t, authserver.Options{TokenLifetime: 5 * time.Second, Clients: []authserver.Client{
		{ID: "gw", Secret: "gw-secret", RedirectURIs: []string{e.url + "/connect/callback", serviceCallback}},
	}})
	e.up = startProtected(t, e.as.Issuer())
	connectService(t, tokens, "up", e.up.url)
	dir := t.TempDir()
	serveAt(t, gs, dir, userConfig(dir, "sqlite:"+filepath.Join(dir, "g.db"), e.url, e.up.url), &Options{UpstreamTokens: tokens})
	return e
}

// TestUserModeConnect: a gateway with a server in auth: user mode, against
// a real authorization server and a real upstream requiring its tokens. A
// caller without a connection gets auth_required (nothing reaches the
// upstream); its connect URL used by another caller is refused, and
// replayed is refused, nothing stored for either; a browser-less walk of a
// fresh one stores alice's token; the retry runs with alice's token (not
// the caller's, not the service's); each use of the short-lived token
// refreshes it without the caller noticing; a callback with a wrong state
// stores nothing; deleting the connection (revoke) makes the next call
// auth_required again.
func TestUserModeConnect(t *testing.T) {
	tokens := &upstream.MemoryTokens{}
	e := startUserGateway(t, tokens)
	ctx := context.Background()
	service, _ := tokens.Token(ctx, "up", "")

	u := connectURL(t, e.call(aliceToken))
	if e.up.effects.Load() != 0 {
		t.Fatal("a refused call reached the upstream")
	}
	if !strings.HasPrefix(u, e.url+"/connect/up?flow=") {
		t.Fatalf("connect URL %s", u)
	}
	// Bob opens alice's URL with his credentials: refused, and the URL is
	// spent.
	if code := browse(t, u, bobToken); code != http.StatusForbidden {
		t.Fatalf("alice's connect URL with bob's token: %d", code)
	}
	if code := browse(t, u, aliceToken); code != http.StatusGone {
		t.Fatalf("a spent connect URL: %d", code)
	}
	for _, s := range []string{"alice", "bob"} {
		if set, _ := tokens.Token(ctx, "up", s); set != nil {
			t.Fatalf("a token was stored for %s", s)
		}
	}
	// A callback with a state nobody issued stores nothing.
	if code := browse(t, e.url+"/connect/callback?state=forged&code=x", ""); code != http.StatusBadRequest {
		t.Fatalf("forged state: %d", code)
	}

	// A fresh URL, walked: alice is connected.
	u = connectURL(t, e.call(aliceToken))
	if code := browse(t, u, ""); code != http.StatusOK {
		t.Fatalf("walking the connect URL: %d", code)
	}
	if code := browse(t, u, ""); code != http.StatusGone {
		t.Fatalf("the walked URL again: %d", code)
	}
	set, _ := tokens.Token(ctx, "up", "alice")
	if set == nil {
		t.Fatal("no token stored for alice")
	}
	if bob, _ := tokens.Token(ctx, "up", "bob"); bob != nil {
		t.Fatal("a token was stored for bob")
	}

	refreshes := e.as.Refreshes()
	if res := e.call(aliceToken); res.IsError || e.up.effects.Load() != 1 {
		t.Fatalf("the retry: %+v (%d effects)", res, e.up.effects.Load())
	}
	after, _ := tokens.Token(ctx, "up", "alice")
	seen := e.up.lastSeen()
	if seen == aliceToken || seen == service.AccessToken || seen != after.AccessToken {
		t.Fatalf("the upstream saw %.12s..., want alice's stored token %.12s...", seen, after.AccessToken)
	}
	// The token expired (5s, inside the 10s margin): refreshed, the new one
	// stored, the call none the wiser.
	if e.as.Refreshes() <= refreshes || after.AccessToken == set.AccessToken {
		t.Fatalf("no refresh: %d -> %d", refreshes, e.as.Refreshes())
	}
	if res := e.call(aliceToken); res.IsError || e.up.effects.Load() != 2 {
		t.Fatalf("the second call: %+v", res)
	}
	if res := e.callKeyed(aliceToken, "k1"); res.IsError || e.up.effects.Load() != 3 {
		t.Fatalf("a keyed call: %+v (%d effects)", res, e.up.effects.Load())
	}
	if e.up.sawToken(aliceToken) || e.up.sawToken(bobToken) {
		t.Fatal("a caller's own token reached the upstream")
	}

	// Bob has no connection of his own: alice's is not his.
	connectURL(t, e.call(bobToken))

	// Revoke: the next call is auth_required again.
	if err := tokens.DeleteToken(ctx, "up", "alice"); err != nil {
		t.Fatal(err)
	}
	connectURL(t, e.call(aliceToken))
	// A repeat of a finished unit of work returns its first outcome (the
	// upstream is not asked): no connection is needed for that.
	if res := e.callKeyed(aliceToken, "k1"); res.IsError {
		t.Fatalf("the replay of k1 after revoke: %+v", res)
	}
	if e.up.effects.Load() != 3 {
		t.Fatalf("effects after revoke: %d", e.up.effects.Load())
	}
}

// TestUserModeReplicas: two gateways (replicas) share one store, on
// SQLite and on PostgreSQL, the vault in it (GATEHOUSE_SECRET_KEY). A
// call through replica B is refused auth_required; its connect URL is
// opened on B and the authorization server sends the browser back to A
// (the public URL): A finishes the flow B began, from the store. Then
// alice's calls through both replicas run with her token, refreshed as it
// expires by whichever replica uses it; the store holds no token in
// clear; revoking in the store (what `gatehouse connections revoke` does)
// makes the next call through either replica auth_required.
func TestUserModeReplicas(t *testing.T) {
	dbs := []struct {
		name string
		dsn  func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "shared.db") }},
		{"postgres", func(t *testing.T) string {
			return pgtest.Schema(t, "uprep", "the two-replica user connections on PostgreSQL")
		}},
	}
	for _, db := range dbs {
		t.Run(db.name, func(t *testing.T) {
			t.Setenv("GW_UP_SECRET", "gw-secret")
			t.Setenv(vault.EnvKey, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
			d := db.dsn(t)
			ga, gb := httptest.NewUnstartedServer(nil), httptest.NewUnstartedServer(nil)
			public := "http://" + ga.Listener.Addr().String()
			urlB := "http://" + gb.Listener.Addr().String()
			as := authserver.Start(t, authserver.Options{TokenLifetime: 5 * time.Second, Clients: []authserver.Client{
				{ID: "gw", Secret: "gw-secret", RedirectURIs: []string{public + "/connect/callback", serviceCallback}},
			}})
			up := startProtected(t, as.Issuer())
			st := openTestStore(t, d)
			keys, err := vault.LoadKeys(nil)
			if err != nil {
				t.Fatal(err)
			}
			connectService(t, vault.New(st, keys, nil), "up", up.url)
			for i, gs := range []*httptest.Server{ga, gb} {
				dir := t.TempDir()
				cfg, err := ParseConfig([]byte(userConfig(dir, d, public, up.url)), filepath.Join(dir, "gatehouse.yaml"), dir)
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				g, err := New(ctx, cfg, &Options{Store: openTestStore(t, d), Instance: fmt.Sprintf("replica-%d", i)})
				cancel()
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
			}
			a := &userGateway{t: t, url: public, as: as, up: up}
			b := &userGateway{t: t, url: urlB, as: as, up: up}

			u := connectURL(t, b.call(aliceToken))
			if !strings.HasPrefix(u, public+"/connect/up?flow=") {
				t.Fatalf("connect URL %s", u)
			}
			if code := browse(t, strings.Replace(u, public, urlB, 1), ""); code != http.StatusOK {
				t.Fatalf("begun on B, finished on A: %d", code)
			}
			for i, e := range []*userGateway{b, a, b, a} {
				if res := e.call(aliceToken); res.IsError || up.effects.Load() != int64(i+1) {
					t.Fatalf("call %d: %+v (%d effects)", i, res, up.effects.Load())
				}
			}
			if up.sawToken(aliceToken) {
				t.Fatal("the caller's token reached the upstream")
			}
			rows, err := st.Connections(context.Background(), "")
			if err != nil || len(rows) != 2 {
				t.Fatalf("connections %v %v", rows, err)
			}
			up.mu.Lock()
			seen := slices.Clone(up.seen)
			up.mu.Unlock()
			for _, r := range rows {
				for _, tok := range seen {
					if bytes.Contains(r.Sealed, []byte(tok)) || bytes.Contains(r.Sealed, []byte(tok[len(tok)-16:])) {
						t.Fatal("a token is in the store in clear")
					}
				}
			}
			if n, err := st.DeleteConnections(context.Background(), "up", "alice"); err != nil || n != 1 {
				t.Fatalf("revoke: %d %v", n, err)
			}
			connectURL(t, a.call(aliceToken))
			connectURL(t, b.call(aliceToken))
			if up.effects.Load() != 4 {
				t.Fatalf("effects after revoke: %d", up.effects.Load())
			}
		})
	}
}

// TestExchangeMode: a server with auth: exchange behind a gateway whose
// callers bring OAuth tokens of the real authorization server. The
// gateway lists the server with its own client_credentials token; a
// caller's call reaches the upstream with a token exchanged (RFC 8693) for
// it: aud the upstream (its verifier requires it), sub the caller's, not
// the caller's own token. The exchanged token is cached for the next
// call. A caller with a static token (nothing to exchange) is refused
// denied, and nothing reaches the upstream.
func TestExchangeMode(t *testing.T) {
	t.Setenv("GW_EX_SECRET", "gw-secret")
	gs := httptest.NewUnstartedServer(nil)
	resource := "http://" + gs.Listener.Addr().String() + "/mcp"
	as := authserver.Start(t, authserver.Options{Clients: []authserver.Client{
		{ID: "agent", Secret: "s3cret", Subject: "agent-7"},
		{ID: "gw", Secret: "gw-secret", Exchange: true},
	}})
	up := startProtected(t, as.Issuer())
	dir := t.TempDir()
	serveAt(t, gs, dir, fmt.Sprintf(`listen: 127.0.0.1:0
store: sqlite:%s
drift: {recheck: 0}
auth:
  resource: %s
  oauth: {issuer: %q, requiredScopes: [mcp]}
  tokens: [{sha256: %s, subject: bob}]
servers:
  up:
    type: streamable-http
    url: %q
    auth: exchange
    exchange: {tokenURL: %q, clientID: gw, clientSecretEnv: GW_EX_SECRET, scopes: [mcp]}
`, filepath.Join(dir, "g.db"), resource, as.Issuer(), sum(bobToken), up.url, as.TokenURL()), nil)
	e := &userGateway{t: t, url: strings.TrimSuffix(resource, "/mcp"), as: as, up: up}
	ctx := context.Background()
	caller, err := as.Token(ctx, "agent", "s3cret", resource, "mcp", "tool:*")
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 2; i++ {
		if res := e.call(caller); res.IsError || up.effects.Load() != int64(i) {
			t.Fatalf("call %d: %+v (%d effects)", i, res, up.effects.Load())
		}
	}
	up.mu.Lock()
	seen, claims := slices.Clone(up.seen), slices.Clone(up.claims)
	up.mu.Unlock()
	if len(seen) != 2 || seen[0] == caller || seen[0] != seen[1] || !strings.Contains(fmt.Sprint(claims[0]["sub"]), "agent-7") {
		t.Fatalf("the upstream saw %d tokens, the caller's %v, subjects %v", len(seen), slices.Contains(seen, caller), claims)
	}
	if as.Exchanges() != 1 {
		t.Fatalf("exchanges: %d, want 1 (the second call from the cache)", as.Exchanges())
	}
	res := e.call(bobToken)
	b, _ := json.Marshal(res.StructuredContent)
	if !res.IsError || !strings.Contains(string(b), `"code":"denied"`) || up.effects.Load() != 2 {
		t.Fatalf("a static token's call: %s (%d effects)", b, up.effects.Load())
	}
}
