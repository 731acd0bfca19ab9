package oauth_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/testclock"
	"github.com/gatehouse-dev/gatehouse/internal/identity/oauth"
)

// TestKeyRotation: the issuer switches keys; a token with the new kid
// verifies after one refresh, without a new Verifier, and the retired key's
// tokens are refused.
func TestKeyRotation(t *testing.T) {
	ctx := context.Background()
	old, next := newKey(t, "2029", jose.ES256), newKey(t, "2030", jose.ES256)
	is := newIssuer(t, old)
	clk := testclock.New(t0)
	v := newVerifier(t, is, clk, nil)
	if _, err := v.Verify(ctx, old.sign(t, claims(is))); err != nil {
		t.Fatal(err)
	}
	is.publish(next)
	clk.Advance(oauth.DefaultRefreshInterval)
	if _, err := v.Verify(ctx, next.sign(t, claims(is))); err != nil {
		t.Fatalf("the new key's token: %v", err)
	}
	if n := is.jwksHits.Load(); n != 2 {
		t.Fatalf("%d key set fetches, want 2 (the first, one refresh)", n)
	}
	clk.Advance(oauth.DefaultRefreshInterval)
	_, err := v.Verify(ctx, old.sign(t, claims(is)))
	if r := reasonOf(t, err); r != oauth.ReasonUnknownKey {
		t.Fatalf("the retired key's token: reason %v (%v), want unknown_key", r, err)
	}
}

// TestUnknownKidFlood: 1,000 tokens naming unknown kids, one after another
// and then all at once, cost at most one refresh per interval at the issuer.
func TestUnknownKidFlood(t *testing.T) {
	ctx := context.Background()
	k := newKey(t, "real", jose.EdDSA)
	is := newIssuer(t, k)
	clk := testclock.New(t0)
	v := newVerifier(t, is, clk, nil)
	forged := make([]string, 1000)
	for i := range forged {
		f := k
		f.kid = fmt.Sprintf("bogus-%d", i)
		forged[i] = f.sign(t, claims(is))
	}
	check := func(tok string) error {
		_, err := v.Verify(ctx, tok)
		if err == nil {
			return fmt.Errorf("a forged kid verified")
		}
		var e *oauth.Error
		if !asError(err, &e) || e.Reason != oauth.ReasonUnknownKey {
			return fmt.Errorf("reason of %v, want unknown_key", err)
		}
		return nil
	}
	for _, tok := range forged {
		if err := check(tok); err != nil {
			t.Fatal(err)
		}
	}
	if n := is.jwksHits.Load(); n != 1 {
		t.Fatalf("sequential flood: %d key set fetches, want 1", n)
	}

	clk.Advance(oauth.DefaultRefreshInterval) // one refresh is due again
	var wg sync.WaitGroup
	errs := make(chan error, len(forged))
	for _, tok := range forged {
		wg.Go(func() {
			if err := check(tok); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := is.jwksHits.Load(); n != 2 {
		t.Fatalf("concurrent flood: %d key set fetches in all, want 2", n)
	}
	if _, err := v.Verify(ctx, k.sign(t, claims(is))); err != nil {
		t.Fatalf("a real token after the flood: %v", err)
	}
}

// TestFirstFetchShared: concurrent first verifies share one discovery and
// one key set fetch.
func TestFirstFetchShared(t *testing.T) {
	ctx := context.Background()
	k := newKey(t, "k", jose.ES256)
	is := newIssuer(t, k)
	v := newVerifier(t, is, testclock.New(t0), nil)
	tok := k.sign(t, claims(is))
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if _, err := v.Verify(ctx, tok); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if is.jwksHits.Load() != 1 || is.mdHits.Load() != 1 {
		t.Fatalf("jwks %d, metadata %d; want 1 and 1", is.jwksHits.Load(), is.mdHits.Load())
	}
}

// TestIssuerDown: once keys are cached, a stopped issuer fails no token
// whose key is cached, even after the cache's life.
func TestIssuerDown(t *testing.T) {
	ctx := context.Background()
	k := newKey(t, "k", jose.RS256)
	is := newIssuer(t, k)
	clk := testclock.New(t0)
	v := newVerifier(t, is, clk, nil)
	if _, err := v.Verify(ctx, k.sign(t, claims(is))); err != nil {
		t.Fatal(err)
	}
	is.srv.Close()
	clk.Advance(2 * oauth.DefaultMaxCacheLife) // the cache's life is over; the refresh fails
	tok := k.sign(t, claims(is, func(c map[string]any) {
		c["exp"] = clk.Now().Add(time.Minute).Unix()
		c["iat"] = clk.Now().Unix()
	}))
	for range 3 {
		if _, err := v.Verify(ctx, tok); err != nil {
			t.Fatalf("cached key, issuer down: %v", err)
		}
	}
	// An unknown kid while the issuer is down is still unknown.
	_, err := v.Verify(ctx, newKey(t, "new", jose.RS256).sign(t, claims(is, func(c map[string]any) {
		c["exp"] = clk.Now().Add(time.Minute).Unix()
	})))
	if r := reasonOf(t, err); r != oauth.ReasonUnknownKey {
		t.Fatalf("reason %v (%v), want unknown_key", r, err)
	}
}

// TestCacheLife: the JWKS response's max-age shortens the cache's life; a
// key added by the issuer without a rotation is seen once it ends.
func TestCacheLife(t *testing.T) {
	ctx := context.Background()
	k := newKey(t, "k", jose.ES256)
	is := newIssuer(t, k)
	is.cacheControl = "public, max-age=120"
	clk := testclock.New(t0)
	v := newVerifier(t, is, clk, nil)
	tok := k.sign(t, claims(is))
	for range 3 {
		if _, err := v.Verify(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	if n := is.jwksHits.Load(); n != 1 {
		t.Fatalf("%d fetches within the life, want 1", n)
	}
	clk.Advance(121 * time.Second)
	if _, err := v.Verify(ctx, tok); err != nil {
		t.Fatal(err)
	}
	if n := is.jwksHits.Load(); n != 2 {
		t.Fatalf("%d fetches after max-age, want 2", n)
	}
}
