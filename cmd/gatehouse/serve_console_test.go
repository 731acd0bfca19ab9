package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/authserver"
)

// TestServeConsoleAdminScope: serveConsole wires console.adminScope to the
// gateway's OAuth verifier. With the key, an access token from the real
// authorization server holding the scope logs in (303 and a session
// cookie) and one without it is 401; without the key, the same admin
// token is 401 (admin tokens only).
func TestServeConsoleAdminScope(t *testing.T) {
	as := authserver.Start(t, authserver.Options{Clients: []authserver.Client{{ID: "ops", Secret: "s3cret", Subject: "ops-7"}}})
	resource := "http://127.0.0.1:1/mcp"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tok := func(scopes ...string) string {
		t.Helper()
		s, err := as.Token(ctx, "ops", "s3cret", resource, scopes...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	admin, plain := tok("gatehouse:admin"), tok("mcp")
	for _, tc := range []struct {
		name, console string
		admin, plain  int
	}{
		{"adminScope", "{adminScope: 'gatehouse:admin'}", http.StatusSeeOther, http.StatusUnauthorized},
		{"admins only", "{admins: [{name: alice, sha256: " + strings.Repeat("a", 64) + "}]}", http.StatusUnauthorized, http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
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
auth: {resource: %q, oauth: {issuer: %q}}
console: %s
`, filepath.Join(dir, "g.db"), resource, as.Issuer(), strings.Replace(tc.console, "{", "{listen: '"+addr+"', ", 1))), filepath.Join(dir, "gatehouse.yaml"), dir)
			if err != nil {
				t.Fatal(err)
			}
			g, err := gateway.New(ctx, cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			stop, err := serveConsole(ctx, g, cfg, slog.New(slog.DiscardHandler), net.Listen)
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			hc := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			login := func(token string) (int, string) {
				req, _ := http.NewRequest("POST", "http://"+addr+"/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.Header.Set("Sec-Fetch-Site", "same-origin")
				res, err := hc.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
				return res.StatusCode, res.Header.Get("Set-Cookie")
			}
			if code, ck := login(admin); code != tc.admin || (code == http.StatusSeeOther) != (ck != "") {
				t.Errorf("the admin token: %d, cookie %q; want %d", code, ck, tc.admin)
			}
			if code, ck := login(plain); code != tc.plain || ck != "" {
				t.Errorf("a token without the scope: %d, cookie %q", code, ck)
			}
		})
	}
}
