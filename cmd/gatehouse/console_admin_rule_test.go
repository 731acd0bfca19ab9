package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/authserver"
)

// TestConsoleAdminTokenRule: the console's OAuth login and the MCP
// endpoint share auth.oauth's issuer and audience (auth.resource); what
// tells them apart is console.adminScope, matched exactly. With real
// tokens of the authorization server against the real console login and
// the real MCP endpoint (requiredScopes [mcp]):
//
//   - an agent's MCP token (scope mcp) is refused by the console;
//   - a token holding the admin scope logs in; one for another audience,
//     or holding only a scope that merely begins with the admin scope's
//     name (gatehouse:admin:read, gatehouse:administrator), does not;
//   - an admin-only token is refused by the MCP endpoint (it lacks mcp);
//   - a token holding both is accepted by both: which is why the admin
//     scope must never be granted to an agent's client.
func TestConsoleAdminTokenRule(t *testing.T) {
	as := authserver.Start(t, authserver.Options{Clients: []authserver.Client{
		{ID: "ops", Secret: "s3cret", Subject: "ops-7"},
		{ID: "agent", Secret: "a-secret", Subject: "agent-7"},
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	gs := httptest.NewUnstartedServer(nil)
	resource := "http://" + gs.Listener.Addr().String() + "/mcp"
	tok := func(client, secret, res string, scopes ...string) string {
		t.Helper()
		s, err := as.Token(ctx, client, secret, res, scopes...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	cfg, err := gateway.ParseConfig([]byte(fmt.Sprintf(`listen: 127.0.0.1:0
store: sqlite:%s
drift: {recheck: 0}
auth: {resource: %q, oauth: {issuer: %q, requiredScopes: [mcp]}}
console: {listen: '%s', adminScope: 'gatehouse:admin'}
`, filepath.Join(dir, "g.db"), resource, as.Issuer(), addr)), filepath.Join(dir, "gatehouse.yaml"), dir)
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	h, err := g.Handler()
	if err != nil {
		t.Fatal(err)
	}
	gs.Config.Handler = h
	gs.Start()
	defer gs.Close()
	stop, err := serveConsole(ctx, g, cfg, slog.New(slog.DiscardHandler), net.Listen)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	hc := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	defer hc.CloseIdleConnections()
	login := func(token string) int {
		t.Helper()
		req, _ := http.NewRequest("POST", "http://"+addr+"/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode == http.StatusSeeOther && res.Header.Get("Set-Cookie") == "" {
			t.Fatal("logged in without a session cookie")
		}
		return res.StatusCode
	}
	mcpStatus := func(token string) int {
		t.Helper()
		req, _ := http.NewRequest("POST", resource, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	other := "http://127.0.0.1:1/mcp"
	for _, tc := range []struct {
		name         string
		token        string
		console, mcp int // 0: not asked
	}{
		{"agent's MCP token", tok("agent", "a-secret", resource, "mcp"), http.StatusUnauthorized, http.StatusOK},
		{"admin token", tok("ops", "s3cret", resource, "gatehouse:admin"), http.StatusSeeOther, http.StatusForbidden},
		{"admin token for another audience", tok("ops", "s3cret", other, "gatehouse:admin"), http.StatusUnauthorized, http.StatusUnauthorized},
		{"a scope beginning with the admin scope", tok("ops", "s3cret", resource, "gatehouse:admin:read", "gatehouse:administrator"), http.StatusUnauthorized, 0},
		{"admin and mcp in one token", tok("agent", "a-secret", resource, "mcp", "gatehouse:admin"), http.StatusSeeOther, http.StatusOK},
	} {
		if got := login(tc.token); got != tc.console {
			t.Errorf("%s: console login %d, want %d", tc.name, got, tc.console)
		}
		if tc.mcp != 0 {
			if got := mcpStatus(tc.token); got != tc.mcp {
				t.Errorf("%s: MCP endpoint %d, want %d", tc.name, got, tc.mcp)
			}
		}
	}
}
