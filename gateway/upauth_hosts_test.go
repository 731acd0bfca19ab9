package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/identity/upstream"
	"github.com/gatehouse-dev/gatehouse/internal/egress"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/authserver"
	"github.com/gatehouse-dev/gatehouse/internal/vault"
)

// userSetup says how startUserGatewayOn builds a gateway with a server in
// auth: user mode.
type userSetup struct {
	// host is the upstream's host in its URL ("" is 127.0.0.1); the
	// authorization server is always http://127.0.0.1:PORT.
	host string
	// allowed is the config's allowedHosts (nil: no list).
	allowed []string
	// lifetime is the access tokens' (0: 5m, so that no use of a stored
	// token refreshes it).
	lifetime time.Duration
	// tokens keeps the token sets and, through Options.UpstreamTokens, the
	// connect flows in memory; nil: both in the vault of the gateway's
	// SQLite store (GATEHOUSE_SECRET_KEY), e.db.
	tokens upstream.TokenStore
}

// testVaultKey is the GATEHOUSE_SECRET_KEY of the tests that keep the
// connections in the store.
const testVaultKey = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// startUserGatewayOn starts the authorization server, the protected
// upstream on s.host, the service connection (through the egress guard,
// as `gatehouse connect`) and a gateway on a SQLite store with
// allowedHosts s.allowed.
func startUserGatewayOn(t *testing.T, s userSetup) *userGateway {
	t.Helper()
	t.Setenv("GW_UP_SECRET", "gw-secret")
	if s.host == "" {
		s.host = "127.0.0.1"
	}
	if s.lifetime == 0 {
		s.lifetime = 5 * time.Minute
	}
	gs := httptest.NewUnstartedServer(nil)
	dir := t.TempDir()
	e := &userGateway{t: t, url: "http://" + gs.Listener.Addr().String(), tokens: s.tokens, db: filepath.Join(dir, "g.db")}
	e.as = authserver.Start(t, authserver.Options{TokenLifetime: s.lifetime, Clients: []authserver.Client{
		{ID: "gw", Secret: "gw-secret", RedirectURIs: []string{e.url + "/connect/callback", serviceCallback}},
	}})
	e.up = startProtectedOn(t, e.as.Issuer(), s.host)
	opts := &Options{UpstreamTokens: s.tokens}
	if s.tokens == nil {
		t.Setenv(vault.EnvKey, testVaultKey)
		keys, err := vault.LoadKeys(nil)
		if err != nil {
			t.Fatal(err)
		}
		e.tokens = vault.New(openTestStore(t, "sqlite:"+e.db), keys, nil)
		opts = nil
	}
	// The service connection is made under a list that holds the
	// authorization server's host too (s.allowed may not: a connect flow
	// then fails while the catalog is served with the service token).
	var svc []string
	if s.allowed != nil {
		svc = append(slices.Clone(s.allowed), "127.0.0.1")
	}
	connectServiceVia(t, egress.New(&egress.Options{AllowedHosts: svc}), e.tokens, "up", e.up.url)
	extra := ""
	if s.allowed != nil {
		extra = fmt.Sprintf("allowedHosts: [%s]\n", strings.Join(s.allowed, ", "))
	}
	serveAt(t, gs, dir, userConfig(dir, "sqlite:"+e.db, e.url, e.up.url)+extra, opts)
	return e
}

// browseBody is browse returning the last answer's body too.
func browseBody(t *testing.T, u string) (int, string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	code, body, _ := openConnect(t, &http.Client{Jar: jar, Timeout: 30 * time.Second}, u, "", aliceToken)
	return code, body
}

// TestUserModeAllowedHosts: the connect flow of an auth: user server,
// without allowedHosts and with one, against the real authorization
// server and a protected go-sdk upstream. The upstream is reached as
// localhost when there is a list (its host and the authorization
// server's, 127.0.0.1, differ). With both hosts listed (or no list) the
// browser's walk stores alice's token set and her next call reaches the
// upstream with it. With a list that does not hold the authorization
// server's host the connect URL answers 502 naming that host, before the
// browser is sent anywhere: no code is issued, nothing stored. (The flow
// used to fetch the metadata through a client made for a placeholder
// origin, https://any.invalid/, which no list admits: every connect URL
// answered 502 once allowedHosts was set.)
func TestUserModeAllowedHosts(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		host    string
		allowed []string
	}{
		{"no list", "127.0.0.1", nil},
		{"both hosts listed", "localhost", []string{"localhost", "127.0.0.1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tokens := &upstream.MemoryTokens{}
			e := startUserGatewayOn(t, userSetup{host: tc.host, allowed: tc.allowed, tokens: tokens})
			u := connectURL(t, e.call(aliceToken))
			if code, body := browseBody(t, u); code != http.StatusOK {
				t.Fatalf("walking the connect URL: %d %s", code, body)
			}
			set, _ := tokens.Token(ctx, "up", "alice")
			if set == nil {
				t.Fatal("no token stored for alice")
			}
			if res := e.call(aliceToken); res.IsError || e.up.effects.Load() != 1 {
				t.Fatalf("the retry: %+v (%d effects)", res, e.up.effects.Load())
			}
			if seen := e.up.lastSeen(); seen != set.AccessToken {
				t.Fatalf("the upstream saw %.12s..., want alice's token %.12s...", seen, set.AccessToken)
			}
		})
	}
	t.Run("authorization server not listed", func(t *testing.T) {
		tokens := &upstream.MemoryTokens{}
		e := startUserGatewayOn(t, userSetup{host: "localhost", allowed: []string{"localhost"}, tokens: tokens})
		u := connectURL(t, e.call(aliceToken))
		codes := e.as.Codes() // the service connection's
		code, body := browseBody(t, u)
		if code != http.StatusBadGateway || !strings.Contains(body, e.as.Issuer()) ||
			!strings.Contains(body, "&#34;127.0.0.1&#34;: host is not in allowedHosts") {
			t.Fatalf("want 502 naming the authorization server and its host, got %d %s", code, body)
		}
		if strings.Contains(body, "invalid") {
			t.Fatalf("a placeholder reached the guard: %s", body)
		}
		if set, _ := tokens.Token(ctx, "up", "alice"); set != nil || e.as.Codes() != codes || e.up.effects.Load() != 0 {
			t.Fatalf("stored %v, %d codes issued, %d effects", set, e.as.Codes()-codes, e.up.effects.Load())
		}
	})
}
