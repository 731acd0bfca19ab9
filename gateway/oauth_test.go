package gateway

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/testclock"
)

// oauthKey is a key the in-test issuer signs with.
type oauthKey struct {
	kid  string
	priv *ecdsa.PrivateKey
}

func newOAuthKey(t *testing.T, kid string) oauthKey {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return oauthKey{kid: kid, priv: priv}
}

func (k oauthKey) sign(t *testing.T, claims any) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: k.priv, KeyID: k.kid}},
		(&jose.SignerOptions{}).WithType("at+jwt"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// testIssuer is an authorization server on 127.0.0.1: RFC 8414 metadata
// and a JWKS whose keys the test replaces.
type testIssuer struct {
	URL  string
	srv  *httptest.Server
	mu   sync.Mutex
	keys []oauthKey
	hits atomic.Int64
}

func newTestIssuer(t *testing.T, keys ...oauthKey) *testIssuer {
	t.Helper()
	is := &testIssuer{keys: keys}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": is.URL, "jwks_uri": is.URL + "/jwks",
			"token_endpoint": is.URL + "/token", "response_types_supported": []string{"code"}})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, _ *http.Request) {
		is.hits.Add(1)
		is.mu.Lock()
		var set jose.JSONWebKeySet
		for _, k := range is.keys {
			set.Keys = append(set.Keys, jose.JSONWebKey{Key: k.priv.Public(), KeyID: k.kid, Algorithm: "ES256", Use: "sig"})
		}
		is.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(set)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	is.URL, is.srv = srv.URL, srv
	return is
}

func (is *testIssuer) publish(keys ...oauthKey) {
	is.mu.Lock()
	is.keys = keys
	is.mu.Unlock()
}

// syncBuffer is a log sink safe for the gateway's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// oauthEnv is a gateway with auth.oauth (requiredScopes [mcp]) and one
// static token (subject ci), in front of a real go-sdk upstream with the
// tools up__echo and up__secret.
type oauthEnv struct {
	t        *testing.T
	is       *testIssuer
	key      oauthKey
	clk      *testclock.Clock
	base     string // http://127.0.0.1:PORT
	resource string
	logs     *syncBuffer
	calls    map[string]*atomic.Int64
	upAuth   atomic.Int64 // upstream requests that carried an Authorization header
}

func newOAuthEnv(t *testing.T, bytePath bool, extra ...string) *oauthEnv {
	t.Helper()
	e := &oauthEnv{t: t, key: newOAuthKey(t, "k1"), clk: testclock.New(time.Now()), logs: &syncBuffer{},
		calls: map[string]*atomic.Int64{"echo": {}, "secret": {}}}
	e.is = newTestIssuer(t, e.key)

	up := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	for name, n := range e.calls {
		up.AddTool(&mcp.Tool{Name: name, Description: "The " + name + " tool.", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				n.Add(1)
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " ran"}}}, nil
			})
	}
	uh := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil)
	us := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			e.upAuth.Add(1)
		}
		uh.ServeHTTP(w, r)
	}))
	t.Cleanup(us.Close)

	gs := httptest.NewUnstartedServer(nil)
	e.base = "http://" + gs.Listener.Addr().String()
	e.resource = e.base + "/mcp"
	dir := t.TempDir()
	yml := fmt.Sprintf(`listen: 127.0.0.1:0
store: sqlite:%s
auth:
  resource: %s
  oauth: {issuer: %q, requiredScopes: [mcp]}
  tokens:
    - {sha256: %s, subject: ci}
http: {bytePath: %v}
servers:
  up: {type: streamable-http, url: %q}
%s`, filepath.Join(dir, "g.db"), e.resource, e.is.URL, hashOf("static-token"), bytePath, us.URL+"/mcp", strings.Join(extra, ""))
	serveAt(t, gs, dir, yml, &Options{Clock: e.clk.Now,
		Logger: slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	return e
}

// claims are a valid token's claims: alice, for the gateway, scopes mcp
// and the given ones, changed by edit.
func (e *oauthEnv) claims(scope string, edit ...func(map[string]any)) map[string]any {
	now := e.clk.Now()
	c := map[string]any{"iss": e.is.URL, "sub": "alice", "aud": e.resource, "scope": scope,
		"exp": now.Add(5 * time.Minute).Unix(), "iat": now.Add(-time.Minute).Unix()}
	for _, f := range edit {
		f(c)
	}
	return c
}

func (e *oauthEnv) token(scope string, edit ...func(map[string]any)) string {
	return e.key.sign(e.t, e.claims(scope, edit...))
}

// initialize posts an initialize with token ("" for none) and returns the
// status, the WWW-Authenticate header and the body.
func (e *oauthEnv) initialize(token string) (int, string, string) {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.resource, strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), string(body)
}

func (e *oauthEnv) metadataURL() string {
	return e.base + "/.well-known/oauth-protected-resource/mcp"
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

// callAnswer calls tool and returns its answer as one string (an error's
// text, or the result's JSON).
func callAnswer(cs *mcp.ClientSession, tool string) string {
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
	if err != nil {
		return "error: " + err.Error()
	}
	b, _ := json.Marshal(res)
	return string(b)
}

// A caller with a valid access token lists and calls tools; the upstream
// never sees the caller's Authorization header. Tool scopes hide tools
// exactly as unknown ones, per token: two tokens of one subject each see
// what their own scopes allow. A static token works beside OAuth.
func TestOAuthCallerCallsTools(t *testing.T) {
	for _, bytePath := range []bool{true, false} {
		t.Run(fmt.Sprintf("bytePath=%v", bytePath), func(t *testing.T) {
			e := newOAuthEnv(t, bytePath)
			all := session(t, e.resource, e.token("mcp"))
			if got := toolNames(t, all); !slices.Equal(got, []string{"up__echo", "up__secret"}) {
				t.Fatalf("token without tool scopes lists %v, want every tool", got)
			}
			if a := callAnswer(all, "up__echo"); !strings.Contains(a, "echo ran") {
				t.Fatalf("call: %s", a)
			}
			if a := callAnswer(all, "up__secret"); !strings.Contains(a, "secret ran") {
				t.Fatalf("call: %s", a)
			}

			// The same subject with a token scoped to one tool.
			narrow := session(t, e.resource, e.token("mcp tool:up__echo"))
			if got := toolNames(t, narrow); !slices.Equal(got, []string{"up__echo"}) {
				t.Fatalf("token with tool:up__echo lists %v", got)
			}
			hidden := callAnswer(narrow, "up__secret")
			unknown := callAnswer(narrow, "up__nothere")
			if strings.ReplaceAll(hidden, "up__secret", "X") != strings.ReplaceAll(unknown, "up__nothere", "X") {
				t.Fatalf("a tool beyond the token's scopes answers\n%s\nbut an unknown tool\n%s", hidden, unknown)
			}
			if a := callAnswer(narrow, "up__echo"); !strings.Contains(a, "echo ran") {
				t.Fatalf("call in scope: %s", a)
			}
			if a := callAnswer(narrow, "mcp__describe_tool"); strings.Contains(a, "secret") {
				t.Fatalf("describe: %s", a)
			}
			// The broad token's session still sees everything: scopes are per
			// token, not per subject.
			if got := toolNames(t, all); len(got) != 2 {
				t.Fatalf("broad token after the narrow one lists %v", got)
			}
			if n := e.calls["secret"].Load(); n != 1 {
				t.Fatalf("secret ran %d times, want 1 (the hidden call must not reach it)", n)
			}

			static := session(t, e.resource, "static-token")
			if a := callAnswer(static, "up__echo"); !strings.Contains(a, "echo ran") {
				t.Fatalf("static token beside oauth: %s", a)
			}
			if n := e.upAuth.Load(); n != 0 {
				t.Fatalf("the upstream saw %d requests with an Authorization header", n)
			}
			e.assertNoTokenLogged()
		})
	}
}

func (e *oauthEnv) assertNoTokenLogged(tokens ...string) {
	e.t.Helper()
	logs := e.logs.String()
	if !strings.Contains(logs, "gateway") {
		e.t.Fatalf("no gateway log captured: %q", logs)
	}
	for _, tok := range tokens {
		parts := strings.Split(tok, ".")
		for _, p := range append(parts, tok) {
			if len(p) >= 16 && strings.Contains(logs, p) {
				e.t.Fatalf("a log line contains (part of) a token: %q", p)
			}
		}
	}
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// Every attack gets 401 with exactly the challenge that names the
// metadata and the required scope; the verifier logs why at Debug, and no
// log line contains a token.
func TestOAuthAttacksGet401(t *testing.T) {
	e := newOAuthEnv(t, true)
	want := fmt.Sprintf(`Bearer resource_metadata="%s", scope="mcp"`, e.metadataURL())
	other := newOAuthKey(t, "k1") // same kid, another key: a forged signature
	stranger := newOAuthKey(t, "k9")
	pubDER, err := x509.MarshalPKIXPublicKey(e.key.priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	hmacWith := func(key []byte) string {
		s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: key}, (&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", "k1"))
		if err != nil {
			t.Fatal(err)
		}
		tok, err := jwt.Signed(s).Claims(e.claims("mcp")).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	payload, _ := json.Marshal(e.claims("mcp"))
	big := e.claims("mcp", func(c map[string]any) { c["pad"] = strings.Repeat("A", 20<<10) })
	attacks := []struct{ name, token string }{
		{"no token", ""},
		{"garbage", "not-a-jwt"},
		{"wrong audience", e.token("mcp", func(c map[string]any) { c["aud"] = "https://other.example.com/mcp" })},
		{"token for another resource here", e.token("mcp", func(c map[string]any) { c["aud"] = e.base + "/other" })},
		{"wrong issuer", e.token("mcp", func(c map[string]any) { c["iss"] = "https://evil.example.com" })},
		{"expired", e.token("mcp", func(c map[string]any) { c["exp"] = e.clk.Now().Add(-10 * time.Minute).Unix() })},
		{"not yet valid", e.token("mcp", func(c map[string]any) { c["nbf"] = e.clk.Now().Add(10 * time.Minute).Unix() })},
		{"alg none", b64(`{"alg":"none","typ":"at+jwt","kid":"k1"}`) + "." + b64(string(payload)) + "."},
		{"HMAC with the public key (PEM)", hmacWith(pubPEM)},
		{"HMAC with the public key (DER)", hmacWith(pubDER)},
		{"forged signature", other.sign(t, e.claims("mcp"))},
		{"unknown kid", stranger.sign(t, e.claims("mcp"))},
		{"oversized", e.key.sign(t, big)},
	}
	var used []string
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			code, challenge, _ := e.initialize(a.token)
			if code != http.StatusUnauthorized || challenge != want {
				t.Fatalf("got %d %q, want 401 %q", code, challenge, want)
			}
		})
		used = append(used, a.token)
	}
	// The valid token passes (so the refusals above are the attacks').
	good := e.token("mcp")
	if code, _, body := e.initialize(good); code != http.StatusOK {
		t.Fatalf("valid token: %d %s", code, body)
	}
	if !strings.Contains(e.logs.String(), "access token refused") {
		t.Fatal("refusals are not logged")
	}
	e.assertNoTokenLogged(append(used, good)...)
}

// A verified token missing a required scope gets 403 insufficient_scope
// naming the scope and the metadata; nothing reaches the upstream.
func TestOAuthMissingRequiredScopeGets403(t *testing.T) {
	e := newOAuthEnv(t, true)
	code, challenge, _ := e.initialize(e.token("tool:*"))
	want := fmt.Sprintf(`Bearer error="insufficient_scope", scope="mcp", resource_metadata="%s"`, e.metadataURL())
	if code != http.StatusForbidden || challenge != want {
		t.Fatalf("got %d %q, want 403 %q", code, challenge, want)
	}
	// /readyz shows its detail to no such token either.
	req, _ := http.NewRequest(http.MethodGet, e.base+"/readyz", nil)
	req.Header.Set("Authorization", "Bearer "+e.token("tool:*"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(body), "servers") {
		t.Fatalf("readyz detail for a token without the required scope: %s", body)
	}
	if e.calls["echo"].Load()+e.calls["secret"].Load() != 0 {
		t.Fatal("an upstream tool ran")
	}
}

// The Protected Resource Metadata is served without a token at both
// paths, and names the resource, the issuer and the scopes.
func TestOAuthProtectedResourceMetadata(t *testing.T) {
	e := newOAuthEnv(t, true)
	want := map[string]any{"resource": e.resource, "authorization_servers": []any{e.is.URL},
		"scopes_supported": []any{"mcp", "tool:*", "skill:*"}, "bearer_methods_supported": []any{"header"}}
	for _, p := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		resp, err := http.Get(e.base + p)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		err = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %v", p, resp.StatusCode, err)
		}
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(want)
		if !bytes.Equal(gb, wb) {
			t.Fatalf("%s:\n got %s\nwant %s", p, gb, wb)
		}
	}
}

// The issuer rotates its key: a token signed with the new key is accepted
// without a restart (after the refresh interval), and the old key's tokens
// are refused once it is gone.
func TestOAuthKeyRotationFollowed(t *testing.T) {
	e := newOAuthEnv(t, true)
	old := e.token("mcp")
	if code, _, body := e.initialize(old); code != http.StatusOK {
		t.Fatalf("before rotation: %d %s", code, body)
	}
	k2 := newOAuthKey(t, "k2")
	e.is.publish(k2)
	e.clk.Advance(11 * time.Second) // past the verifier's refresh interval
	if code, _, body := e.initialize(k2.sign(t, e.claims("mcp"))); code != http.StatusOK {
		t.Fatalf("new key after rotation: %d %s", code, body)
	}
	e.clk.Advance(2 * time.Hour) // the cached set's life ends; refreshed without k1
	if code, _, _ := e.initialize(e.token("mcp")); code != http.StatusUnauthorized {
		t.Fatalf("a token of the retired key: %d, want 401", code)
	}
	if code, _, body := e.initialize(k2.sign(t, e.claims("mcp"))); code != http.StatusOK {
		t.Fatalf("new key later: %d %s", code, body)
	}
}

// An issuer that cannot be reached (no key cached) makes a token
// uncheckable, not invalid: 503 with Retry-After, not 401.
func TestOAuthIssuerDownGets503(t *testing.T) {
	e := newOAuthEnv(t, true)
	e.is.srv.Close()
	req, _ := http.NewRequest(http.MethodPost, e.resource, strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+e.token("mcp"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("got %d (Retry-After %q), want 503", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}
