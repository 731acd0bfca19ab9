package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/authserver"
	"github.com/gatehouse-dev/gatehouse/internal/identity/oauth"
	"github.com/gatehouse-dev/gatehouse/internal/vault"
)

// lockedBuffer is a bytes.Buffer safe for a writer and a poller.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// protectedMCP is a real go-sdk MCP server over HTTP on 127.0.0.1 that
// requires a JWT of issuer for its URL; it counts echo's effects.
func protectedMCP(t *testing.T, issuer string) (string, *atomic.Int64) {
	t.Helper()
	var effects atomic.Int64
	srv := mcp.NewServer(&mcp.Implementation{Name: "protected", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, any, error) {
			effects.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echoed"}}}, nil, nil
		})
	ts := httptest.NewUnstartedServer(nil)
	base := "http://" + ts.Listener.Addr().String()
	url := base + "/mcp"
	v, err := oauth.New(&oauth.Options{Issuer: issuer, Audience: url})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(
		&oauthex.ProtectedResourceMetadata{Resource: url, AuthorizationServers: []string{issuer}, ScopesSupported: []string{"mcp"}}))
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		var err error // the request's own: requests run at once
		if ok {
			_, err = v.Verify(r.Context(), tok)
		}
		if !ok || err != nil {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp"`, base))
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
	return url, &effects
}

// gatewayTools starts a gateway on cfgPath in process and returns the
// names of the tools it serves, and an echo call's answer when it serves
// up__echo.
func gatewayTools(t *testing.T, cfgPath string) ([]string, string) {
	t.Helper()
	cfg, err := gateway.LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g, err := gateway.New(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	h, err := g.Handler()
	if err != nil {
		t.Fatal(err)
	}
	gs := httptest.NewServer(h)
	defer gs.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: gs.URL + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var names []string
	answer := ""
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
		if tool.Name == "up__echo" {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{}})
			if err != nil || res.IsError {
				t.Fatalf("up__echo: %v %+v", err, res)
			}
			answer = res.Content[0].(*mcp.TextContent).Text
		}
	}
	return names, answer
}

var authorizeURL = regexp.MustCompile(`http://\S+/authorize\?\S+`)

// TestConnectService: `gatehouse connect up` (in process through Main)
// prints the authorization URL of the server's authorization server and
// waits on its loopback callback; walking the URL (the authorization
// server approves without a user) brings the code back, and the service
// connection is stored in the vault in the store. A gateway started before
// does not serve the server (no interactive fetch at run time); one started
// after serves its tools with the stored token.
func TestConnectService(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := ln.Addr().String()
	ln.Close()
	as := authserver.Start(t, authserver.Options{Clients: []authserver.Client{
		{ID: "gw", Secret: "gw-secret", RedirectURIs: []string{"http://" + listen + "/callback"}},
	}})
	up, effects := protectedMCP(t, as.Issuer())
	key := make([]byte, vault.KeySize)
	for i := range key {
		key[i] = byte(i)
	}
	t.Setenv(vault.EnvKey, base64.StdEncoding.EncodeToString(key))
	t.Setenv(vault.EnvPreviousKey, "")
	t.Setenv("GW_SECRET", "gw-secret")
	t.Setenv("GATEHOUSE_STORE", "")
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "gatehouse.yaml")
	if err := os.WriteFile(cfgPath, []byte(fmt.Sprintf(`store: sqlite:%s
drift: {recheck: 0}
servers:
  up:
    type: streamable-http
    url: %q
    auth: service
    oauth: {clientID: gw, clientSecretEnv: GW_SECRET}
`, filepath.Join(dir, "g.db"), up)), 0o600); err != nil {
		t.Fatal(err)
	}

	if names, _ := gatewayTools(t, cfgPath); len(names) != 0 {
		t.Fatalf("a gateway without the service connection serves %v", names)
	}

	var out, errb lockedBuffer
	code := make(chan int, 1)
	go func() {
		code <- Main(context.Background(), []string{"connect", "up", "--config", cfgPath, "--listen", listen}, &out, &errb)
	}()
	var u string
	for deadline := time.Now().Add(30 * time.Second); u == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		u = authorizeURL.FindString(out.String())
		select {
		case c := <-code:
			t.Fatalf("connect ended (%d) before printing a URL: %s%s", c, out.String(), errb.String())
		default:
		}
	}
	if u == "" {
		t.Fatalf("no authorization URL printed: %s", out.String())
	}
	resp, err := http.Get(u) // the browser: redirects followed to the loopback callback
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if c := <-code; c != 0 || !strings.Contains(out.String(), "connected up") {
		t.Fatalf("exit %d: %s%s", c, out.String(), errb.String())
	}

	names, answer := gatewayTools(t, cfgPath)
	if len(names) != 1 || names[0] != "up__echo" || answer != "echoed" || effects.Load() != 1 {
		t.Fatalf("the gateway after connect serves %v (%q, %d effects)", names, answer, effects.Load())
	}
	code2, listed, _ := run(t, "connections", "list", "--config", cfgPath)
	if code2 != 0 || !strings.Contains(listed, "up") {
		t.Fatalf("connections list: %d %s", code2, listed)
	}
}
