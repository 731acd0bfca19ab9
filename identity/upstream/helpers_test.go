package upstream_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/gatehouse-dev/gatehouse/identity/upstream"
	"github.com/gatehouse-dev/gatehouse/internal/egress"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/authserver"
	"github.com/gatehouse-dev/gatehouse/internal/identity/oauth"
)

// callback is the redirect URI of the tests' client; Walk stops at it, so
// nothing listens there.
const callback = "http://127.0.0.1:1/callback"

// mcpServer is a real go-sdk MCP server over streamable HTTP on 127.0.0.1
// behind a bearer check: a JWT of the authorization server for its URL,
// with scope "mcp", and "mcp:admin" to call the tool admin (else a 403
// insufficient_scope challenge, the step-up).
type mcpServer struct {
	URL   string // the MCP endpoint, .../mcp
	calls atomic.Int64
	// unauthorized counts the 401 and 403 answers.
	unauthorized atomic.Int64
}

// prmFunc makes the server's protected resource metadata from its MCP URL.
type prmFunc func(mcpURL string) *oauthex.ProtectedResourceMetadata

func startMCP(t *testing.T, issuer string, prm prmFunc) *mcpServer {
	t.Helper()
	s := &mcpServer{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "protected", Version: "1"}, nil)
	for _, name := range []string{"echo", "admin"} {
		mcp.AddTool(srv, &mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, any, error) {
				s.calls.Add(1)
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " done"}}}, nil, nil
			})
	}
	ts := httptest.NewUnstartedServer(nil)
	base := "http://" + ts.Listener.Addr().String()
	s.URL = base + "/mcp"
	v, err := oauth.New(&oauth.Options{Issuer: issuer, Audience: s.URL})
	if err != nil {
		t.Fatal(err)
	}
	metaURL := base + "/.well-known/oauth-protected-resource/mcp"
	meta := &oauthex.ProtectedResourceMetadata{Resource: s.URL, AuthorizationServers: []string{issuer}, ScopesSupported: []string{"mcp", "mcp:admin"}}
	if prm != nil {
		meta = prm(s.URL)
	}
	mux := http.NewServeMux()
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(meta))
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	mux.Handle("/mcp", s.guard(v, metaURL, h))
	ts.Config.Handler = mux
	ts.Start()
	t.Cleanup(ts.Close)
	return s
}

func (s *mcpServer) guard(v *oauth.Verifier, metaURL string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		refuse := func(code int, params string) {
			s.unauthorized.Add(1)
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata=%q, %s`, metaURL, params))
			http.Error(w, http.StatusText(code), code)
		}
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			refuse(http.StatusUnauthorized, `scope="mcp"`)
			return
		}
		id, err := v.Verify(r.Context(), tok)
		if err != nil {
			refuse(http.StatusUnauthorized, `error="invalid_token", scope="mcp"`)
			return
		}
		if !slices.Contains(id.Scopes, "mcp") {
			refuse(http.StatusForbidden, `error="insufficient_scope", scope="mcp"`)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &msg)
		if msg.Method == "tools/call" && msg.Params.Name == "admin" && !slices.Contains(id.Scopes, "mcp:admin") {
			refuse(http.StatusForbidden, `error="insufficient_scope", scope="mcp mcp:admin"`)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// startAS starts the local authorization server with the public client
// "agent" (redirect URI callback).
func startAS(t *testing.T, opts authserver.Options) *authserver.Server {
	t.Helper()
	opts.Clients = append(opts.Clients, authserver.Client{ID: "agent", RedirectURIs: []string{callback}})
	return authserver.Start(t, opts)
}

// guarded is the egress guard's client for endpoint.
func guarded(t *testing.T, endpoint string, opts *egress.Options) *http.Client {
	t.Helper()
	hc, err := egress.New(opts).Client(endpoint, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hc.CloseIdleConnections)
	return hc
}

// connect opens a go-sdk client session to url with h as its OAuth handler.
func connect(ctx context.Context, url string, hc *http.Client, h auth.OAuthHandler) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, OAuthHandler: h, DisableStandaloneSSE: true}, nil)
}

func agentOptions(tokens upstream.TokenStore) *upstream.Options {
	return &upstream.Options{
		Client:      &oauthex.ClientCredentials{ClientID: "agent"},
		RedirectURL: callback,
		Fetch:       upstream.Walk(callback),
		Tokens:      tokens, Server: "protected", Subject: "alice",
	}
}

func call(ctx context.Context, t *testing.T, s *mcp.ClientSession, tool string) {
	t.Helper()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	if res.IsError {
		t.Fatalf("call %s: error result %v", tool, res.Content)
	}
}
