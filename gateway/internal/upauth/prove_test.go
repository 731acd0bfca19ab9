package upauth

import (
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/authserver"
	"github.com/gatehouse-dev/gatehouse/internal/identity/oauth"
)

// proving is a gateway's connect endpoint (a Manager served over HTTP at
// its public URL) for one auth: user server, a protected go-sdk upstream
// whose authorization server is the real authserver fixture, which is
// also the gateway's auth.oauth.issuer (its login client gw-login). Its
// tokens and flows are the vault's on a real SQLite store.
type proving struct {
	m      *Manager
	public string
	as     *authserver.Server
	flows  StoreFlows
	up     string // the upstream's MCP URL

	mu     sync.Mutex
	events []ConnectEvent
}

const ciToken = "ci-static-token"

func startProving(t *testing.T) *proving {
	t.Helper()
	gs := httptest.NewUnstartedServer(nil)
	p := &proving{public: "http://" + gs.Listener.Addr().String()}
	p.as = authserver.Start(t, authserver.Options{Clients: []authserver.Client{
		{ID: "gw", Secret: "gw-secret", RedirectURIs: []string{p.public + CallbackPath}},
		{ID: "gw-login", Secret: "login-secret", RedirectURIs: []string{p.public + LoginPath}},
	}})
	p.up = startProtectedUpstream(t, p.as.Issuer())
	p.flows, _ = sqliteFlows(t)
	iss := p.as.Issuer()
	m, err := New(&Options{Servers: []Server{{Name: "up", URL: p.up, Mode: User, ClientID: "gw", ClientSecret: "gw-secret"}},
		Tokens: p.flows.Vault, Flows: p.flows, PublicURL: p.public, ConnectLimit: -1,
		Prove: &Prove{
			StaticSubject: func(s string) bool { return s == "ci" },
			StaticToken: func(tok string) (string, bool) {
				if tok == ciToken {
					return "ci", true
				}
				return "", false
			},
			OAuthIssuer: iss,
			Login:       &Login{Issuer: iss, ClientID: "gw-login", ClientSecret: "login-secret", SubjectClaim: "sub"},
		},
		Record: func(ev ConnectEvent) {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.events = append(p.events, ev)
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	p.m = m
	gs.Config.Handler = m
	gs.Start()
	t.Cleanup(gs.Close)
	return p
}

func (p *proving) recorded() []ConnectEvent {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]ConnectEvent(nil), p.events...)
}

// startProtectedUpstream is a go-sdk MCP server over streamable HTTP that
// requires the issuer's access tokens for its URL (returned), with its
// RFC 9728 metadata.
func startProtectedUpstream(t *testing.T, issuer string) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "protected", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echoed"}}}, nil, nil
		})
	ts := httptest.NewUnstartedServer(nil)
	base := "http://" + ts.Listener.Addr().String()
	mcpURL := base + "/mcp"
	v, err := oauth.New(&oauth.Options{Issuer: issuer, Audience: mcpURL})
	if err != nil {
		t.Fatal(err)
	}
	metaURL := base + "/.well-known/oauth-protected-resource/mcp"
	mux := http.NewServeMux()
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(
		&oauthex.ProtectedResourceMetadata{Resource: mcpURL, AuthorizationServers: []string{issuer}, ScopesSupported: []string{"mcp"}}))
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		var err error // the request's own: requests run at once
		if ok {
			_, err = v.Verify(r.Context(), tok)
		}
		if !ok || err != nil {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata=%q, scope="mcp"`, metaURL))
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	ts.Config.Handler = mux
	ts.Start()
	t.Cleanup(func() {
		ts.Close()
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
	})
	return mcpURL
}

// browser is a person's browser: a cookie jar, redirects followed, and
// every URL it was sent to remembered.
type browser struct {
	c       *http.Client
	mu      sync.Mutex
	visited []*url.URL
}

func newBrowser() *browser {
	jar, _ := cookiejar.New(nil)
	b := &browser{}
	b.c = &http.Client{Jar: jar, Timeout: 30 * time.Second, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.visited = append(b.visited, req.URL)
		if len(via) > 10 {
			return fmt.Errorf("too many redirects")
		}
		return nil
	}}
	return b
}

// sentTo returns the URLs the browser was redirected to whose path is
// path and whose client_id is clientID.
func (b *browser) sentTo(path, clientID string) []*url.URL {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []*url.URL
	for _, u := range b.visited {
		if u.Path == path && u.Query().Get("client_id") == clientID {
			out = append(out, u)
		}
	}
	return out
}

func (b *browser) do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := b.c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// open GETs the connect URL u, then POSTs its page's form from origin
// (the gateway's own when ""), with token when not "". It returns the
// last answer.
func (b *browser) open(t *testing.T, u, origin, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	code, body := b.do(t, req)
	if code != http.StatusOK {
		t.Fatalf("the connect page: %d %s", code, body)
	}
	if strings.Contains(body, "Location") || !strings.Contains(body, "<form method=\"post\"") {
		t.Fatalf("the connect page: %s", body)
	}
	m := csrfField.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no form token: %s", body)
	}
	pu, _ := url.Parse(u)
	form := url.Values{"flow": {pu.Query().Get("flow")}, "csrf": {html.UnescapeString(m[1])}}
	if token != "" {
		form.Set("token", token)
	}
	if origin == "" {
		origin = pu.Scheme + "://" + pu.Host
	}
	req, _ = http.NewRequest(http.MethodPost, pu.Scheme+"://"+pu.Host+pu.Path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", origin)
	return b.do(t, req)
}

func (p *proving) connectURL(t *testing.T, subject string) string {
	t.Helper()
	r, err := p.m.Check(context.Background(), "up", subject)
	if err != nil || r == nil {
		t.Fatalf("Check(%s): %v %v", subject, r, err)
	}
	return r.ConnectURL
}

// TestConnectURLOpenedByAnother: caller A's connect URL (an OAuth
// subject's) opened by victim B's browser, B logging in at the issuer as
// B: the page says the link is another identity's, the flow is spent (A's
// next refusal has a new URL; the old one is gone), nothing is stored
// under A (nor B), and the browser was never sent to the upstream's
// authorization endpoint. The refusal is recorded.
func TestConnectURLOpenedByAnother(t *testing.T) {
	p := startProving(t)
	alice := p.as.Issuer() + "#alice"
	u := p.connectURL(t, alice)
	p.as.SetUser("bob")
	victim := newBrowser()
	code, body := victim.open(t, u, "", "")
	if code != http.StatusForbidden || !strings.Contains(body, "another identity") {
		t.Fatalf("alice's URL in bob's browser: %d %s", code, body)
	}
	if got := victim.sentTo("/authorize", "gw-login"); len(got) != 1 || got[0].Query().Get("prompt") != "login" || got[0].Query().Get("nonce") == "" {
		t.Fatalf("the login: %v", got)
	}
	if got := victim.sentTo("/authorize", "gw"); len(got) != 0 {
		t.Fatalf("bob's browser was sent to the upstream's authorization endpoint: %v", got)
	}
	ctx := context.Background()
	for _, s := range []string{alice, p.as.Issuer() + "#bob"} {
		if set, err := p.flows.Vault.Token(ctx, "up", s); set != nil || err != nil {
			t.Fatalf("stored for %s: %v %v", s, set, err)
		}
	}
	if next := p.connectURL(t, alice); next == u {
		t.Fatal("the spent URL is handed out again")
	}
	if code, _ := newBrowser().open(t, u, "", ""); code != http.StatusGone {
		t.Fatalf("the spent URL again: %d", code)
	}
	if ev := p.recorded(); len(ev) != 1 || ev[0] != (ConnectEvent{Subject: alice, Server: "up", Outcome: OutcomeAnotherIdentity, Proof: proofOpenID}) {
		t.Fatalf("recorded %+v", ev)
	}
}

// TestConnectOwnURL: A opens its own URL: logs in at the issuer as A, is
// sent to the upstream's authorization endpoint with prompt=consent, and
// the connection is stored under A with the upstream account (its ID
// token's issuer#sub) recorded in the store and in the event.
func TestConnectOwnURL(t *testing.T) {
	p := startProving(t)
	iss := p.as.Issuer()
	alice := iss + "#alice"
	p.as.SetUser("alice")
	u := p.connectURL(t, alice)
	// The page: no redirect, not framable, naming the gateway and the server.
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Location") != "" || resp.Header.Get("X-Frame-Options") != "DENY" ||
		!strings.Contains(resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") || resp.Header.Get("Cache-Control") != "no-store" ||
		!strings.Contains(string(page), p.public) || !strings.Contains(string(page), "<b>up</b>") {
		t.Fatalf("the page: %d %v %s", resp.StatusCode, resp.Header, page)
	}
	b := newBrowser()
	code, body := b.open(t, u, "", "")
	if code != http.StatusOK || !strings.Contains(body, "Connected to up as "+iss+"#alice") {
		t.Fatalf("alice's own URL: %d %s", code, body)
	}
	got := b.sentTo("/authorize", "gw")
	if len(got) != 1 || got[0].Query().Get("prompt") != "consent" || !strings.Contains(got[0].Query().Get("scope"), "openid") {
		t.Fatalf("the upstream authorization: %v", got)
	}
	c, ok, err := p.flows.St.Connection(context.Background(), "up", alice)
	if err != nil || !ok || c.Account != iss+"#alice" {
		t.Fatalf("the connection: %+v %v %v", c, ok, err)
	}
	if set, err := p.flows.Vault.Token(context.Background(), "up", alice); err != nil || set == nil || set.RefreshToken == "" {
		t.Fatalf("the token set: %+v %v", set, err)
	}
	if ev := p.recorded(); len(ev) != 1 || ev[0] != (ConnectEvent{Subject: alice, Server: "up", Outcome: OutcomeConnected, Account: iss + "#alice", Proof: proofOpenID}) {
		t.Fatalf("recorded %+v", ev)
	}
}

// TestStaticSubjectProof: a static-token subject's URL posted with another
// token (or none, or an OAuth-looking one) is refused as another
// identity, spending the flow; with its own token it connects.
func TestStaticSubjectProof(t *testing.T) {
	p := startProving(t)
	for _, tok := range []string{"bob-static-token", "", ciToken + "x"} {
		u := p.connectURL(t, "ci")
		b := newBrowser()
		if code, body := b.open(t, u, "", tok); code != http.StatusForbidden || !strings.Contains(body, "another identity") {
			t.Fatalf("token %q: %d %s", tok, code, body)
		}
		if len(b.sentTo("/authorize", "gw")) != 0 || len(b.sentTo("/authorize", "gw-login")) != 0 {
			t.Fatalf("token %q: the browser was sent on", tok)
		}
		if code, _ := newBrowser().open(t, u, "", ciToken); code != http.StatusGone {
			t.Fatalf("token %q: the flow was not spent: %d", tok, code)
		}
	}
	if set, _ := p.flows.Vault.Token(context.Background(), "up", "ci"); set != nil {
		t.Fatal("stored for ci")
	}
	p.as.SetUser("ci-upstream")
	code, body := newBrowser().open(t, p.connectURL(t, "ci"), "", ciToken)
	if code != http.StatusOK || !strings.Contains(body, "Connected to up") {
		t.Fatalf("ci's own token: %d %s", code, body)
	}
	c, ok, _ := p.flows.St.Connection(context.Background(), "up", "ci")
	if !ok || c.Account != p.as.Issuer()+"#ci-upstream" {
		t.Fatalf("the connection: %+v %v", c, ok)
	}
	ev := p.recorded()
	if len(ev) != 4 || ev[3].Outcome != OutcomeConnected || ev[3].Proof != proofToken || ev[0].Outcome != OutcomeAnotherIdentity {
		t.Fatalf("recorded %+v", ev)
	}
}

// TestCrossSitePost: the connect form posted from another origin, with a
// null Origin, without Origin or Sec-Fetch-Site, or without the page's
// form token is refused 403 before the flow is taken: the rightful POST
// then goes on.
func TestCrossSitePost(t *testing.T) {
	p := startProving(t)
	u := p.connectURL(t, "ci")
	for _, o := range []string{"https://evil.example.com", "null", "http://127.0.0.1:1"} {
		if code, body := newBrowser().open(t, u, o, ciToken); code != http.StatusForbidden || !strings.Contains(body, "not from this gateway") {
			t.Fatalf("origin %s: %d %s", o, code, body)
		}
	}
	pu, _ := url.Parse(u)
	post := func(h http.Header, form url.Values, cookie string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, p.public+pu.Path, strings.NewReader(form.Encode()))
		req.Header = h
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: formCookie, Value: cookie})
		}
		return newBrowser().do(t, req)
	}
	form := url.Values{"flow": {pu.Query().Get("flow")}, "csrf": {"tok"}, "token": {ciToken}}
	if code, _ := post(http.Header{}, form, "tok"); code != http.StatusForbidden {
		t.Fatalf("no Origin: %d", code)
	}
	if code, _ := post(http.Header{"Sec-Fetch-Site": {"cross-site"}}, form, "tok"); code != http.StatusForbidden {
		t.Fatalf("cross-site fetch: %d", code)
	}
	if code, _ := post(http.Header{"Origin": {p.public}}, form, ""); code != http.StatusForbidden {
		t.Fatalf("no form cookie: %d", code)
	}
	if code, _ := post(http.Header{"Origin": {p.public}}, form, "other"); code != http.StatusForbidden {
		t.Fatalf("another form token: %d", code)
	}
	if code, body := newBrowser().open(t, u, "", ciToken); code != http.StatusOK {
		t.Fatalf("the rightful POST after the refused ones: %d %s", code, body)
	}
}

// TestOAuthSubjectWithoutLogin: with OAuth subjects and no
// auth.oauth.login, the POST answers a page naming what to configure and
// never redirects.
func TestOAuthSubjectWithoutLogin(t *testing.T) {
	p := startProving(t)
	p.m.o.Prove.Login = nil
	b := newBrowser()
	code, body := b.open(t, p.connectURL(t, p.as.Issuer()+"#alice"), "", "")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "auth.oauth.login") || len(b.visited) != 0 {
		t.Fatalf("%d %s (visited %v)", code, body, b.visited)
	}
}
