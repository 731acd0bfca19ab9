package console

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/authserver"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/testclock"
	"github.com/gatehouse-dev/gatehouse/store"
)

// lockedBuffer is a log sink safe for the gateway's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}
func (b *lockedBuffer) String() string { b.mu.Lock(); defer b.mu.Unlock(); return b.b.String() }

const staticMCPToken = "static-mcp-token-0123456789"

// TestOAuthAdminLogin: a real gateway with auth.oauth in front of a real
// authorization server (internal/fixture/authserver, client_credentials
// with the gateway's resource) checks the console's logins through
// (*gateway.Gateway).VerifyAdmin. A token holding the admin scope logs in
// over HTTP (POST /login, same-origin) as issuer#sub, and an approval it
// decides records that subject as the decider (read back from the store).
// A token without the scope, one for another resource, a garbage or
// expired one and the gateway's static MCP token are refused with the same
// 401 and form, and no session cookie. The session ends when the token
// expires, well before console.sessionTTL.
func TestOAuthAdminLogin(t *testing.T) {
	eachStore(t, func(t *testing.T, d string) {
		as := authserver.Start(t, authserver.Options{Clients: []authserver.Client{
			{ID: "ops", Secret: "s3cret", Subject: "ops-7"},
		}})
		clk := testclock.New(time.Now())
		resource := "http://127.0.0.1:1/mcp"
		dir := t.TempDir()
		yml := fmt.Sprintf(`listen: 127.0.0.1:0
store: %q
drift: {recheck: 0}
auth:
  resource: %s
  tokens: [{subject: bot, sha256: %s}]
  oauth: {issuer: %q, requiredScopes: ['gatehouse:admin']}
console: {adminScope: 'gatehouse:admin'}
`, d, resource, hashOf(staticMCPToken), as.Issuer())
		// requiredScopes holds the admin scope: the MCP endpoint gives a
		// static token the required scopes by construction, so a check that
		// took the MCP endpoint's path for static tokens would admit it.
		cfg, err := gateway.ParseConfig([]byte(yml), filepath.Join(dir, "gatehouse.yaml"), dir)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		logs := &lockedBuffer{}
		log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		g, err := gateway.New(ctx, cfg, &gateway.Options{Clock: clk.Now, Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = g.Close() })
		scope := *cfg.Console.AdminScope
		h, err := New(&Options{Store: g.Store(), Now: clk.Now, SessionTTL: 8 * time.Hour, Logger: log,
			VerifyAdmin: func(ctx context.Context, token string) (string, time.Time, error) {
				return g.VerifyAdmin(ctx, token, scope)
			}})
		if err != nil {
			t.Fatal(err)
		}
		sctx, scancel := context.WithCancel(context.Background())
		srv := httptest.NewUnstartedServer(h)
		srv.Config.BaseContext = func(net.Listener) context.Context { return sctx }
		srv.Start()
		t.Cleanup(func() { scancel(); srv.Close() })

		tokens := []string{staticMCPToken}
		token := func(resource string, scopes ...string) string {
			t.Helper()
			tok, err := as.Token(ctx, "ops", "s3cret", resource, scopes...)
			if err != nil {
				t.Fatal(err)
			}
			tokens = append(tokens, tok)
			return tok
		}
		refused := func(what, tok string) {
			t.Helper()
			c := newClient(t, srv.URL)
			code, hdr, body := c.do("POST", "/login", map[string][]string{"token": {tok}}, sameOrigin)
			if code != http.StatusUnauthorized || !strings.Contains(body, "That token is not an operator's token.") ||
				hdr.Get("Set-Cookie") != "" || strings.Contains(body, tok) {
				t.Errorf("%s: %d, Set-Cookie %q: %s", what, code, hdr.Get("Set-Cookie"), body)
			}
			if code, hdr, _ := c.do("GET", "/approvals", nil, nil); code != http.StatusSeeOther || hdr.Get("Location") != "/login" {
				t.Errorf("%s: a page after the refused login: %d %s", what, code, hdr.Get("Location"))
			}
		}

		refused("a token without the admin scope", token(resource, "mcp", "tool:*"))
		refused("a token for another resource", token("https://other.example.com/mcp", "gatehouse:admin"))
		refused("the static MCP token", staticMCPToken)
		refused("garbage", "eyJhbGciOiJSUzI1NiJ9.garbage.sig")
		refused("a scope that only starts like it", token(resource, "gatehouse:administrator"))

		// The admin's token logs in; the pages name its subject.
		subject := as.Issuer() + "#ops-7"
		id := askApproval(t, g.Store(), "acme-ltd", `{"to":"acct-1","amount":100}`)
		admin := token(resource, "mcp", "gatehouse:admin")
		c := newClient(t, srv.URL)
		code, hdr, _ := c.do("POST", "/login", map[string][]string{"token": {admin}}, sameOrigin)
		if code != http.StatusSeeOther || hdr.Get("Location") != "/approvals" || hdr.Get("Set-Cookie") == "" {
			t.Fatalf("the admin token: %d %s", code, hdr.Get("Location"))
		}
		if code, _, body := c.do("GET", "/approvals", nil, nil); code != 200 || !strings.Contains(body, subject) {
			t.Fatalf("the approvals page does not name %s (%d): %s", subject, code, body)
		}
		if code, _, _ := c.do("POST", "/approvals/decide", map[string][]string{"id": {id}, "verdict": {"approve"}, "csrf": {c.csrf()}}, sameOrigin); code != http.StatusSeeOther {
			t.Fatalf("decide: %d", code)
		}
		a, err := g.Store().GetApproval(ctx, id)
		if err != nil || a.State != store.ApprovalApproved || a.DecidedBy != subject {
			t.Fatalf("the decision: %+v %v; want approved by %s", a, err, subject)
		}

		// Past the token's expiry (5m, the server's default lifetime) the
		// session is over, though sessionTTL is 8h; and the token no longer
		// logs in.
		clk.Advance(6 * time.Minute)
		if code, hdr, _ := c.do("GET", "/approvals", nil, nil); code != http.StatusSeeOther || hdr.Get("Location") != "/login" {
			t.Errorf("the session outlived its token: %d %s", code, hdr.Get("Location"))
		}
		refused("the expired admin token", admin)

		// Every refusal and the login were logged, never a token.
		out := logs.String()
		if strings.Count(out, "console: failed login") != 6 || !strings.Contains(out, "operator="+subject) {
			t.Errorf("the logins are not logged: %s", out)
		}
		for _, tok := range tokens {
			if strings.Contains(out, tok) || strings.Contains(out, tok[len(tok)-20:]) {
				t.Errorf("a token is in the logs: %s", out)
			}
		}
	})
}

// TestNewNeedsALogin: a console with neither admins nor VerifyAdmin is an
// error (nobody could log in); VerifyAdmin alone is enough.
func TestNewNeedsALogin(t *testing.T) {
	st := openStore(t, "sqlite:"+filepath.Join(t.TempDir(), "c.db"))
	if _, err := New(&Options{Store: st}); err == nil || !strings.Contains(err.Error(), "VerifyAdmin") {
		t.Fatalf("no admins and no VerifyAdmin: %v", err)
	}
	verify := func(context.Context, string) (string, time.Time, error) { return "", time.Time{}, errors.New("no") }
	if _, err := New(&Options{Store: st, VerifyAdmin: verify}); err != nil {
		t.Fatalf("VerifyAdmin alone: %v", err)
	}
}
