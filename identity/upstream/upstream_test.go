package upstream_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/identity/upstream"
	"github.com/gatehouse-dev/gatehouse/internal/egress"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/authserver"
)

// TestAuthorizeAndCall: a client without a token gets a 401, discovers the
// resource's and the authorization server's metadata, authorizes by the
// automated walk (PKCE, resource), and calls a tool; the token set lands in
// the store with a refresh token.
func TestAuthorizeAndCall(t *testing.T) {
	ctx := context.Background()
	as := startAS(t, authserver.Options{})
	srv := startMCP(t, as.Issuer(), nil)
	tokens := &upstream.MemoryTokens{}
	hc := guarded(t, srv.URL, nil)
	h, err := upstream.New(hc, agentOptions(tokens))
	if err != nil {
		t.Fatal(err)
	}
	s, err := connect(ctx, srv.URL, hc, h)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	call(ctx, t, s, "echo")
	call(ctx, t, s, "echo")
	if srv.calls.Load() != 2 || as.Codes() != 1 || srv.unauthorized.Load() != 1 {
		t.Fatalf("effects %d, codes %d, 401s %d; want 2, 1, 1", srv.calls.Load(), as.Codes(), srv.unauthorized.Load())
	}
	set, err := tokens.Token(ctx, "protected", "alice")
	if err != nil || set == nil {
		t.Fatalf("stored token set: %v %v", set, err)
	}
	if set.RefreshToken == "" || set.TokenURL != as.TokenURL() || set.ClientID != "agent" || !slices.Contains(set.Scopes, "offline_access") {
		t.Fatalf("stored token set: refresh %t, %q, %q, %v", set.RefreshToken != "", set.TokenURL, set.ClientID, set.Scopes)
	}
}

// TestRefreshUnnoticed: tokens that expire are refreshed with the refresh
// token, without another authorization and without the caller seeing an
// error; a new handler starts from the store and refreshes its expired
// token rather than sending the user through the grant again.
func TestRefreshUnnoticed(t *testing.T) {
	ctx := context.Background()
	// 5s is within oauth2's 10s expiry margin: every request refreshes.
	as := startAS(t, authserver.Options{TokenLifetime: 5 * time.Second})
	srv := startMCP(t, as.Issuer(), nil)
	tokens := &upstream.MemoryTokens{}
	hc := guarded(t, srv.URL, nil)
	h, err := upstream.New(hc, agentOptions(tokens))
	if err != nil {
		t.Fatal(err)
	}
	s, err := connect(ctx, srv.URL, hc, h)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		call(ctx, t, s, "echo")
	}
	s.Close()
	if as.Codes() != 1 || as.Refreshes() < 3 || srv.calls.Load() != 3 {
		t.Fatalf("codes %d, refreshes %d, effects %d; want 1, >= 3, 3", as.Codes(), as.Refreshes(), srv.calls.Load())
	}
	before := as.Refreshes()
	set, _ := tokens.Token(ctx, "protected", "alice")

	// A new handler (a new process) on the same store.
	h2, err := upstream.New(hc, agentOptions(tokens))
	if err != nil {
		t.Fatal(err)
	}
	s2, err := connect(ctx, srv.URL, hc, h2)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	call(ctx, t, s2, "echo")
	if as.Codes() != 1 || as.Refreshes() <= before {
		t.Fatalf("second handler: codes %d, refreshes %d (before %d): it authorized again or did not refresh", as.Codes(), as.Refreshes(), before)
	}
	now, _ := tokens.Token(ctx, "protected", "alice")
	if now.RefreshToken == set.RefreshToken || now.AccessToken == set.AccessToken {
		t.Fatal("the refreshed (rotated) tokens were not stored")
	}
}

// TestStepUp: a tool that needs more scope answers 403 insufficient_scope;
// the handler authorizes again for the union of scopes and the call
// succeeds, once.
func TestStepUp(t *testing.T) {
	ctx := context.Background()
	as := startAS(t, authserver.Options{})
	srv := startMCP(t, as.Issuer(), nil)
	hc := guarded(t, srv.URL, nil)
	h, err := upstream.New(hc, agentOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	s, err := connect(ctx, srv.URL, hc, h)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	call(ctx, t, s, "echo")
	call(ctx, t, s, "admin")
	call(ctx, t, s, "echo")
	if as.Codes() != 2 || srv.calls.Load() != 3 {
		t.Fatalf("codes %d, effects %d; want 2 (one step-up), 3", as.Codes(), srv.calls.Load())
	}
}

// TestStepUpBounded: an authorization server that never grants the scope
// the resource asks for gets at most MaxStepUps authorizations for it, then
// ErrStepUpLimit; the tool never runs.
func TestStepUpBounded(t *testing.T) {
	ctx := context.Background()
	// The client may not have mcp:admin: the server drops it from grants.
	as := authserver.Start(t, authserver.Options{Clients: []authserver.Client{
		{ID: "agent", RedirectURIs: []string{callback}, Scopes: []string{"mcp"}}}})
	srv := startMCP(t, as.Issuer(), nil)
	hc := guarded(t, srv.URL, nil)
	opts := agentOptions(nil)
	// Ask only for what the client may have, as a filter would.
	opts.Scopes = func(d []string) []string {
		return slices.DeleteFunc(slices.Clone(d), func(s string) bool { return s == "mcp:admin" })
	}
	opts.MaxStepUps = 2
	h, err := upstream.New(hc, opts)
	if err != nil {
		t.Fatal(err)
	}
	// The go-sdk's transport ends a session whose retried request is
	// refused again; each new session (a toolset's reconnect) asks again.
	var last error
	for range 5 {
		s, err := connect(ctx, srv.URL, hc, h)
		if err != nil {
			t.Fatal(err)
		}
		_, last = s.CallTool(ctx, &mcp.CallToolParams{Name: "admin", Arguments: map[string]any{}})
		s.Close()
	}
	if !errors.Is(last, upstream.ErrStepUpLimit) {
		t.Fatalf("last error %v, want ErrStepUpLimit", last)
	}
	if as.Codes() != 1+2 || srv.calls.Load() != 0 {
		t.Fatalf("codes %d, effects %d; want 3 (the first, two step-ups), 0", as.Codes(), srv.calls.Load())
	}
}

var _ = egress.Public

// TestRevokedNotBroughtBack: a token store without a refresh lock (here
// MemoryTokens); a handler started from a stored set; the set is deleted
// (revoked); the handler's next request refreshes (5s tokens, within
// oauth2's margin) and must neither use the new token nor store it: a
// revoked connection stays revoked (it came back on the session's closing
// request, and the gateway's next call ran as if connected).
func TestRevokedNotBroughtBack(t *testing.T) {
	ctx := context.Background()
	as := startAS(t, authserver.Options{TokenLifetime: 5 * time.Second})
	srv := startMCP(t, as.Issuer(), nil)
	tokens := &upstream.MemoryTokens{}
	hc := guarded(t, srv.URL, nil)
	h, err := upstream.New(hc, agentOptions(tokens))
	if err != nil {
		t.Fatal(err)
	}
	s, err := connect(ctx, srv.URL, hc, h)
	if err != nil {
		t.Fatal(err)
	}
	call(ctx, t, s, "echo")
	s.Close()
	if set, _ := tokens.Token(ctx, "protected", "alice"); set == nil {
		t.Fatal("nothing stored by the authorization")
	}

	h2, err := upstream.New(hc, agentOptions(tokens))
	if err != nil {
		t.Fatal(err)
	}
	ts, err := h2.TokenSource(ctx)
	if err != nil || ts == nil {
		t.Fatalf("TokenSource = %v, %v", ts, err)
	}
	if err := tokens.DeleteToken(ctx, "protected", "alice"); err != nil {
		t.Fatal(err)
	}
	if tok, err := ts.Token(); tok != nil || !errors.Is(err, upstream.ErrTokenGone) {
		t.Fatalf("Token after revoke: a token %v, err %v; want ErrTokenGone", tok != nil, err)
	}
	if set, _ := tokens.Token(ctx, "protected", "alice"); set != nil {
		t.Fatal("the revoked connection was stored again")
	}
}

// TestConnectedAfterLooking: a handler that looked in the token store
// before anything was there (a gateway started before `gatehouse connect`)
// uses the set stored afterwards instead of remembering that there was
// none: its call is served with the stored token, and the authorization
// server sees no second authorization.
func TestConnectedAfterLooking(t *testing.T) {
	ctx := context.Background()
	as := startAS(t, authserver.Options{})
	srv := startMCP(t, as.Issuer(), nil)
	tokens := &upstream.MemoryTokens{}
	hc := guarded(t, srv.URL, nil)
	early, err := upstream.New(hc, agentOptions(tokens))
	if err != nil {
		t.Fatal(err)
	}
	if ts, err := early.TokenSource(ctx); ts != nil || err != nil {
		t.Fatalf("TokenSource of an empty store = %v, %v; want nothing", ts, err)
	}

	connector, err := upstream.New(hc, agentOptions(tokens)) // what `gatehouse connect` does
	if err != nil {
		t.Fatal(err)
	}
	s, err := connect(ctx, srv.URL, hc, connector)
	if err != nil {
		t.Fatal(err)
	}
	call(ctx, t, s, "echo")
	s.Close()
	if as.Codes() != 1 {
		t.Fatalf("%d authorizations to connect, want 1", as.Codes())
	}

	s, err = connect(ctx, srv.URL, hc, early)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	call(ctx, t, s, "echo")
	if as.Codes() != 1 {
		t.Fatalf("the early handler authorized again (%d authorizations): it did not read the stored set", as.Codes())
	}
	if srv.calls.Load() != 2 {
		t.Fatalf("%d calls served, want 2", srv.calls.Load())
	}
}
