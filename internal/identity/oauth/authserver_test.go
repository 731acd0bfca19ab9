package oauth_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/authserver"
	"github.com/gatehouse-dev/gatehouse/internal/identity/oauth"
)

// These tests obtain their tokens from a real authorization server (the
// zitadel/oidc provider in internal/fixture/authserver) by the
// client_credentials grant over HTTP, and let the Verifier discover its
// keys from its metadata: nothing here is signed by the test.

const (
	realResource  = "https://gw.test/mcp"
	otherResource = "https://other.test/mcp"
)

func startAuthServer(t *testing.T) *authserver.Server {
	t.Helper()
	return authserver.Start(t, authserver.Options{Clients: []authserver.Client{
		{ID: "agent-7", Secret: "agent-secret", Resources: []string{realResource, otherResource}},
	}})
}

// offsetClock is time.Now moved forward by what the test adds.
type offsetClock struct{ d atomic.Int64 }

func (c *offsetClock) now() time.Time          { return time.Now().Add(time.Duration(c.d.Load())) }
func (c *offsetClock) advance(d time.Duration) { c.d.Add(int64(d)) }

func realVerifier(t *testing.T, s *authserver.Server, clock *offsetClock) *oauth.Verifier {
	t.Helper()
	opts := &oauth.Options{Issuer: s.Issuer(), Audience: realResource}
	if clock != nil {
		opts.Now = clock.now
	}
	v, err := oauth.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func grant(t *testing.T, s *authserver.Server, resource string, scopes ...string) string {
	t.Helper()
	tok, err := s.Token(context.Background(), "agent-7", "agent-secret", resource, scopes...)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func wantReason(t *testing.T, err error, want oauth.Reason) {
	t.Helper()
	var e *oauth.Error
	if !errors.As(err, &e) || e.Reason != want {
		t.Fatalf("err = %v, want reason %v", err, want)
	}
}

func TestRealServerGrantVerifies(t *testing.T) {
	s := startAuthServer(t)
	v := realVerifier(t, s, nil)
	before := time.Now()
	tok := grant(t, s, realResource, "mcp", "tool:echo")
	id, err := v.Verify(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	if want := s.Issuer() + "#agent-7"; id.Subject != want {
		t.Errorf("Subject = %q, want %q", id.Subject, want)
	}
	if !slices.Equal(id.Scopes, []string{"mcp", "tool:echo"}) {
		t.Errorf("Scopes = %q", id.Scopes)
	}
	// exp is whole seconds: now + 5m, give or take the second it was cut to.
	if lo, hi := before.Add(5*time.Minute-time.Second), time.Now().Add(5*time.Minute+time.Second); id.Expiry.Before(lo) || id.Expiry.After(hi) {
		t.Errorf("Expiry = %v, want within [%v, %v]", id.Expiry, lo, hi)
	}
}

func TestRealServerOtherResourceRefused(t *testing.T) {
	s := startAuthServer(t)
	v := realVerifier(t, s, nil)
	// A token the same server issued to the same client, for another
	// resource: a gateway must not accept a token meant for someone else.
	_, err := v.Verify(context.Background(), grant(t, s, otherResource, "mcp"))
	wantReason(t, err, oauth.ReasonAudience)
	// Without a resource the server's default audience (the client id) is
	// not this resource either.
	_, err = v.Verify(context.Background(), grant(t, s, "", "mcp"))
	wantReason(t, err, oauth.ReasonAudience)
	// And the one for this resource still passes on the same Verifier.
	if _, err := v.Verify(context.Background(), grant(t, s, realResource)); err != nil {
		t.Fatal(err)
	}
}

func TestRealServerRotationFollowed(t *testing.T) {
	s := startAuthServer(t)
	clock := &offsetClock{}
	v := realVerifier(t, s, clock)
	ctx := context.Background()

	old := grant(t, s, realResource, "mcp")
	if _, err := v.Verify(ctx, old); err != nil {
		t.Fatal(err)
	}

	// Rollover: the new key signs, the old one is still published. The
	// Verifier learns the new kid from the unknown kid, once the refresh
	// interval (10s by default) since its last fetch has passed.
	if _, err := s.RotateKeepingOld(); err != nil {
		t.Fatal(err)
	}
	clock.advance(11 * time.Second)
	next := grant(t, s, realResource, "mcp")
	if _, err := v.Verify(ctx, next); err != nil {
		t.Fatalf("token of the new key after RotateKeepingOld: %v", err)
	}
	if _, err := v.Verify(ctx, old); err != nil {
		t.Fatalf("token of the kept old key: %v", err)
	}

	// Hard rotation: every other key leaves the JWKS. The next token's new
	// kid makes the Verifier refresh, and that refresh revokes the tokens of
	// the dropped keys, remembered ones included.
	if _, err := s.Rotate(); err != nil {
		t.Fatal(err)
	}
	clock.advance(11 * time.Second)
	latest := grant(t, s, realResource, "mcp")
	if _, err := v.Verify(ctx, latest); err != nil {
		t.Fatalf("token of the new key after Rotate: %v", err)
	}
	for name, tok := range map[string]string{"first": old, "second": next} {
		_, err := v.Verify(ctx, tok)
		t.Logf("%s key's token: %v", name, err)
		wantReason(t, err, oauth.ReasonUnknownKey)
	}
}
