package upauth

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/gatehouse-dev/gatehouse/identity/upstream"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// hostile is an upstream MCP endpoint that answers 401 with its resource
// metadata, and an authorization server's metadata, both as a test sets
// them: real HTTP servers on 127.0.0.1.
type hostile struct {
	mcpURL, issuer string
	prm            func(h *hostile) map[string]any
	asm            func(h *hostile) map[string]any
	tokenRequests  atomic.Int64
}

func startHostile(t *testing.T) *hostile {
	h := &hostile{}
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(h.asm(h))
		case "/token":
			h.tokenRequests.Add(1)
			http.Error(w, "no", http.StatusBadRequest)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(as.Close)
	h.issuer = as.URL
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(h.prm(h))
			return
		}
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp"`, strings.TrimSuffix(h.mcpURL, "/mcp")))
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	}))
	t.Cleanup(up.Close)
	h.mcpURL = up.URL + "/mcp"
	h.prm = func(h *hostile) map[string]any {
		return map[string]any{"resource": h.mcpURL, "authorization_servers": []string{h.issuer}}
	}
	h.asm = func(h *hostile) map[string]any {
		return map[string]any{"issuer": h.issuer, "authorization_endpoint": h.issuer + "/authorize", "token_endpoint": h.issuer + "/token",
			"code_challenge_methods_supported": []string{"S256"}, "authorization_response_iss_parameter_supported": true}
	}
	return h
}

func newManager(t *testing.T, h *hostile, tokens upstream.TokenStore) *Manager {
	t.Helper()
	m, err := New(&Options{Servers: []Server{{Name: "up", URL: h.mcpURL, Mode: User, ClientID: "gw"}},
		Tokens: tokens, Flows: NewMemoryFlows(), PublicURL: "http://127.0.0.1:9",
		// token.evil.test resolves to a private address.
		LookupIP: func(context.Context, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("10.1.2.3")}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// get serves a GET of target (a URL on the gateway) by m, with cookies.
func get(m *Manager, target string, cookies ...*http.Cookie) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, target, nil)
	for _, c := range cookies {
		req.AddCookie(c)
	}
	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, req)
	return rec
}

// open opens a connect URL (target) as a browser does: GET its page, then
// POST its form from the gateway's origin with the page's cookie, and
// returns the POST's answer (or the page's, when it is not 200). fields
// are added to the form (token: a static subject's proof).
func open(m *Manager, target string, fields ...string) *httptest.ResponseRecorder {
	rec := get(m, target)
	if rec.Code != http.StatusOK {
		return rec
	}
	u, _ := url.Parse(target)
	form := url.Values{"flow": {u.Query().Get("flow")}}
	for _, c := range rec.Result().Cookies() {
		if c.Name == formCookie {
			form.Set("csrf", c.Value)
		}
	}
	for i := 0; i+1 < len(fields); i += 2 {
		form.Set(fields[i], fields[i+1])
	}
	req := httptest.NewRequest(http.MethodPost, u.Path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", origin(m.o.PublicURL))
	req.AddCookie(&http.Cookie{Name: formCookie, Value: form.Get("csrf")})
	post := httptest.NewRecorder()
	m.ServeHTTP(post, req)
	return post
}

func flowURL(t *testing.T, m *Manager, subject string) string {
	t.Helper()
	r, err := m.Check(context.Background(), "up", subject)
	if err != nil || r == nil {
		t.Fatalf("Check: %v %v", r, err)
	}
	return r.ConnectURL
}

// TestHostileMetadata: an upstream whose metadata sends the token request
// to a private address, names another resource, or names an authorization
// server whose metadata has another issuer: the connect URL is refused
// before the browser is sent anywhere, nothing is stored, and no token
// request is made.
func TestHostileMetadata(t *testing.T) {
	cases := []struct {
		name, want string
		set        func(h *hostile)
	}{
		{"token endpoint on a private address", "non-public address", func(h *hostile) {
			asm := h.asm
			h.asm = func(h *hostile) map[string]any {
				m := asm(h)
				m["token_endpoint"] = "https://10.1.2.3/token"
				return m
			}
		}},
		{"token endpoint on a metadata address", "non-public address", func(h *hostile) {
			asm := h.asm
			h.asm = func(h *hostile) map[string]any {
				m := asm(h)
				m["token_endpoint"] = "https://169.254.169.254/token"
				return m
			}
		}},
		{"another resource", "no usable protected resource metadata", func(h *hostile) {
			h.prm = func(h *hostile) map[string]any {
				return map[string]any{"resource": "https://other.example.com/mcp", "authorization_servers": []string{h.issuer}}
			}
		}},
		{"issuer does not match", "does not match", func(h *hostile) {
			asm := h.asm
			h.asm = func(h *hostile) map[string]any {
				m := asm(h)
				m["issuer"] = "https://evil.example.com"
				return m
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := startHostile(t)
			tc.set(h)
			tokens := &upstream.MemoryTokens{}
			m := newManager(t, h, tokens)
			rec := open(m, flowURL(t, m, "alice"))
			if rec.Code != http.StatusBadGateway || !strings.Contains(rec.Body.String(), tc.want) {
				t.Fatalf("got %d %q; want 502 mentioning %q", rec.Code, rec.Body.String(), tc.want)
			}
			if loc := rec.Header().Get("Location"); loc != "" {
				t.Fatalf("the browser was sent to %s", loc)
			}
			if set, _ := tokens.Token(context.Background(), "up", "alice"); set != nil || h.tokenRequests.Load() != 0 {
				t.Fatal("something was stored or requested")
			}
		})
	}
}

// TestCallbackChecks: the redirect back is refused, nothing stored and no
// code exchanged, when its iss is not the issuer's, when the browser is
// not the one that started the flow (no cookie, another cookie), or when
// its state was never issued; and a state is used once.
func TestCallbackChecks(t *testing.T) {
	h := startHostile(t)
	tokens := &upstream.MemoryTokens{}
	m := newManager(t, h, tokens)
	begin := func() (state string, c *http.Cookie) {
		rec := open(m, flowURL(t, m, "alice"))
		if rec.Code != http.StatusSeeOther {
			t.Fatalf("begin: %d %s", rec.Code, rec.Body.String())
		}
		loc, err := url.Parse(rec.Header().Get("Location"))
		if err != nil || !strings.HasPrefix(loc.String(), h.issuer+"/authorize?") {
			t.Fatalf("redirected to %v", loc)
		}
		q := loc.Query()
		if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("resource") != h.mcpURL || q.Get("client_id") != "gw" {
			t.Fatalf("authorization request %v", q)
		}
		return q.Get("state"), rec.Result().Cookies()[0]
	}
	cb := func(state, iss string) string {
		return CallbackPath + "?" + url.Values{"state": {state}, "code": {"c0de"}, "iss": {iss}}.Encode()
	}

	state, c := begin()
	if rec := get(m, cb(state, "https://evil.example.com"), c); rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "another issuer") {
		t.Fatalf("wrong iss: %d %s", rec.Code, rec.Body.String())
	}
	if rec := get(m, cb(state, h.issuer), c); rec.Code != http.StatusBadRequest {
		t.Fatalf("the same state again: %d", rec.Code)
	}
	state, _ = begin()
	if rec := get(m, cb(state, h.issuer)); rec.Code != http.StatusForbidden {
		t.Fatalf("no cookie: %d", rec.Code)
	}
	state, c = begin()
	forged := *c
	forged.Value = "x" + c.Value[1:]
	if forged.Value == c.Value { // one cookie in 64 starts with x
		forged.Value = "y" + c.Value[1:]
	}
	if rec := get(m, cb(state, h.issuer), &forged); rec.Code != http.StatusForbidden {
		t.Fatalf("another browser's cookie: %d", rec.Code)
	}
	if rec := get(m, cb("never-issued", h.issuer), c); rec.Code != http.StatusBadRequest {
		t.Fatalf("a forged state: %d", rec.Code)
	}
	// A connect flow's ID is not a state (and is not taken by the attempt).
	u := flowURL(t, m, "alice")
	if rec := get(m, cb(strings.SplitN(u, "flow=", 2)[1], h.issuer), c); rec.Code != http.StatusBadRequest {
		t.Fatalf("a flow ID as the state: %d", rec.Code)
	}
	if rec := open(m, u); rec.Code != http.StatusSeeOther {
		t.Fatalf("the flow after its ID was tried as a state: %d", rec.Code)
	}
	if set, _ := tokens.Token(context.Background(), "up", "alice"); set != nil || h.tokenRequests.Load() != 0 {
		t.Fatalf("stored %v; %d token requests", set, h.tokenRequests.Load())
	}
}

// TestTokenEndpointResolvesPrivate: the authorization server's token
// endpoint is a name that resolves to a private address. The browser is
// sent to the authorization server (its metadata passed), but the code is
// never exchanged: the egress guard refuses the dial, nothing is stored.
func TestTokenEndpointResolvesPrivate(t *testing.T) {
	h := startHostile(t)
	asm := h.asm
	h.asm = func(h *hostile) map[string]any {
		m := asm(h)
		m["token_endpoint"] = "https://token.evil.test/token"
		return m
	}
	tokens := &upstream.MemoryTokens{}
	m := newManager(t, h, tokens)
	rec := open(m, flowURL(t, m, "alice"))
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("begin: %d %s", rec.Code, rec.Body.String())
	}
	loc, _ := url.Parse(rec.Header().Get("Location"))
	cb := CallbackPath + "?" + url.Values{"state": {loc.Query().Get("state")}, "code": {"c0de"}, "iss": {h.issuer}}.Encode()
	rec = get(m, cb, rec.Result().Cookies()[0])
	if rec.Code != http.StatusBadGateway || !strings.Contains(rec.Body.String(), "private") {
		t.Fatalf("callback: %d %s", rec.Code, rec.Body.String())
	}
	if set, _ := tokens.Token(context.Background(), "up", "alice"); set != nil || h.tokenRequests.Load() != 0 {
		t.Fatal("a token was stored or requested")
	}
}
