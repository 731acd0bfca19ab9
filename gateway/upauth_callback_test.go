package gateway

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/identity/upstream"
)

// TestCallbackWrongCookieKeepsFlow: alice's browser and bob's each walk to
// the authorization server and back, stopped before the gateway's
// callback. Alice's callback URL (its state) opened by bob's browser (the
// cookie of another flow) or by a browser without a cookie is refused 403
// and her flow is not spent: her own browser then completes it, her token
// is stored and her call reaches the upstream with it. (The flow used to
// be taken before the cookie was checked: the refused request spent it.)
func TestCallbackWrongCookieKeepsFlow(t *testing.T) {
	tokens := &upstream.MemoryTokens{}
	e := startUserGatewayOn(t, userSetup{tokens: tokens})
	// walk plays a browser up to the gateway's callback: its client (the
	// jar) and the callback URL the authorization server sent it to.
	walk := func(token string) (*http.Client, string) {
		t.Helper()
		u := connectURL(t, e.call(token))
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar, Timeout: 30 * time.Second, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
			if req.URL.Path == "/connect/callback" {
				return http.ErrUseLastResponse
			}
			return nil
		}}
		code, _, cb := openConnect(t, c, u, "", token)
		if !strings.HasPrefix(cb, e.url+"/connect/callback?") {
			t.Fatalf("stopped at %d %s", code, cb)
		}
		c.CheckRedirect = nil
		return c, cb
	}
	alice, aliceCB := walk(aliceToken)
	bob, _ := walk(bobToken)
	status := func(c *http.Client, u string) int {
		t.Helper()
		resp, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := status(bob, aliceCB); code != http.StatusForbidden {
		t.Fatalf("alice's callback in bob's browser: %d", code)
	}
	if code := status(&http.Client{}, aliceCB); code != http.StatusForbidden {
		t.Fatalf("alice's callback without a cookie: %d", code)
	}
	for _, s := range []string{"alice", "bob"} {
		if set, _ := tokens.Token(context.Background(), "up", s); set != nil {
			t.Fatalf("a token was stored for %s", s)
		}
	}
	if code := status(alice, aliceCB); code != http.StatusOK {
		t.Fatalf("alice's callback in her browser: %d", code)
	}
	set, _ := tokens.Token(context.Background(), "up", "alice")
	if set == nil {
		t.Fatal("no token stored for alice")
	}
	if res := e.call(aliceToken); res.IsError || e.up.lastSeen() != set.AccessToken {
		t.Fatalf("alice's retry: %+v", res)
	}
	if code := status(alice, aliceCB); code == http.StatusOK {
		t.Fatal("a callback completed twice")
	}
}
