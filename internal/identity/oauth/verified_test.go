package oauth_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/testclock"
	"github.com/gatehouse-dev/gatehouse/internal/identity/oauth"
)

// jti makes a token's claims distinct.
func jti(i int) func(map[string]any) {
	return func(c map[string]any) { c["jti"] = fmt.Sprintf("t-%d", i) }
}

// TestVerifiedCacheHit: the same token verified again is answered without a
// signature check and with the same identity, which the caller may change
// without changing the next answer; with the cache off every verify checks.
func TestVerifiedCacheHit(t *testing.T) {
	ctx := context.Background()
	k := newKey(t, "k", jose.EdDSA)
	is := newIssuer(t, k)
	clk := testclock.New(t0)
	v := newVerifier(t, is, clk, nil)
	tok := k.sign(t, claims(is))
	first, err := v.Verify(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	first.Scopes[0] = "changed by the caller"
	for i := range 3 {
		id, err := v.Verify(ctx, tok)
		if err != nil {
			t.Fatal(err)
		}
		want := oauth.Identity{Subject: is.URL + "#alice", Scopes: []string{"mcp", "tool:bank__balance"}, Expiry: t0.Add(5 * time.Minute)}
		if !reflect.DeepEqual(id, want) {
			t.Fatalf("hit %d: identity %+v, want %+v", i, id, want)
		}
		id.Scopes[0] = "changed by the caller"
	}
	if n := v.SignatureChecks(); n != 1 {
		t.Fatalf("%d signature checks for one token verified four times, want 1", n)
	}
	if _, err := v.Verify(ctx, k.sign(t, claims(is, jti(1)))); err != nil {
		t.Fatal(err)
	}
	if n := v.SignatureChecks(); n != 2 {
		t.Fatalf("another token: %d signature checks in all, want 2", n)
	}

	off := newVerifier(t, is, clk, nil, func(o *oauth.Options) { o.VerifiedCache = -1 })
	for range 3 {
		if _, err := off.Verify(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	if n, l := off.SignatureChecks(), off.VerifiedLen(); n != 3 || l != 0 {
		t.Fatalf("cache off: %d signature checks and %d remembered, want 3 and 0", n, l)
	}
}

// TestVerifiedCacheTime: a remembered token is refused once it has expired
// (exp plus the skew), or while the clock stands before its nbf or iat (minus
// the skew), with the same refusal as a Verifier that does not remember it
// and without a signature check.
func TestVerifiedCacheTime(t *testing.T) {
	ctx := context.Background()
	k := newKey(t, "k", jose.ES256)
	is := newIssuer(t, k)
	clk := testclock.New(t0)
	v := newVerifier(t, is, clk, nil)
	off := newVerifier(t, is, clk, nil, func(o *oauth.Options) { o.VerifiedCache = -1 })
	tok := k.sign(t, claims(is, func(c map[string]any) { c["iat"] = t0.Add(-30 * time.Second).Unix() }))
	if _, err := v.Verify(ctx, tok); err != nil {
		t.Fatal(err)
	}
	same := func(t *testing.T, want oauth.Reason) {
		t.Helper()
		_, err := v.Verify(ctx, tok)
		_, errOff := off.Verify(ctx, tok)
		if want == 0 {
			if err != nil || errOff != nil {
				t.Fatalf("at %v: cached %v, uncached %v; want both accepted", clk.Now(), err, errOff)
			}
			return
		}
		if err == nil || errOff == nil {
			t.Fatalf("at %v: cached %v, uncached %v; want both refused", clk.Now(), err, errOff)
		}
		if r := reasonOf(t, err); r != want || err.Error() != errOff.Error() {
			t.Fatalf("at %v: cached %q, uncached %q; want both %v", clk.Now(), err, errOff, want)
		}
	}

	// Clock set back: before iat (t0-30s) and before nbf (t0-1m), beyond the skew.
	clk.Advance(-30*time.Second - oauth.DefaultSkew - time.Second)
	same(t, oauth.ReasonNotYetValid) // iat
	if _, err := v.Verify(ctx, tok); err == nil {
		t.Fatal("refused once, accepted next")
	}
	clk.Advance(30*time.Second + oauth.DefaultSkew + time.Second)
	same(t, 0) // verified again in full: remembered again
	clk.Advance(-time.Minute - oauth.DefaultSkew - time.Second)
	same(t, oauth.ReasonNotYetValid) // nbf
	clk.Advance(time.Minute + oauth.DefaultSkew + time.Second)
	same(t, 0)

	checks := v.SignatureChecks()
	clk.Advance(5*time.Minute + oauth.DefaultSkew) // exp + skew: still valid
	same(t, 0)
	clk.Advance(time.Second)
	_, err := v.Verify(ctx, tok)
	if r := reasonOf(t, err); r != oauth.ReasonExpired {
		t.Fatalf("expired token: %v, want expired", err)
	}
	if n := v.SignatureChecks(); n != checks {
		t.Fatalf("%d signature checks answering a remembered token, want none", n-checks)
	}
	same(t, oauth.ReasonExpired)
}

// TestVerifiedCacheKeyRemoved: when a refresh of the issuer's keys drops a
// key, or replaces it under the same kid, the tokens it verified are refused
// from then on; the tokens of a key the refresh keeps are still answered
// without a signature check.
func TestVerifiedCacheKeyRemoved(t *testing.T) {
	ctx := context.Background()
	k1, k2, k3 := newKey(t, "k1", jose.EdDSA), newKey(t, "k2", jose.RS256), newKey(t, "k3", jose.ES256)
	is := newIssuer(t, k1, k2, k3)
	is.cacheControl = "max-age=30"
	clk := testclock.New(t0)
	v := newVerifier(t, is, clk, nil)
	tok1, tok2, tok3 := k1.sign(t, claims(is)), k2.sign(t, claims(is)), k3.sign(t, claims(is))
	for _, tok := range []string{tok1, tok2, tok3} {
		if _, err := v.Verify(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	// The issuer drops k1 and replaces k3 with another key of the same kid.
	k3b := newKey(t, "k3", jose.ES256)
	is.publish(k2, k3b)
	if _, err := v.Verify(ctx, tok1); err != nil {
		t.Fatalf("before the key set is refreshed: %v", err)
	}
	clk.Advance(31 * time.Second) // the key set's life has ended
	checks := v.SignatureChecks()
	if _, err := v.Verify(ctx, tok2); err != nil {
		t.Fatalf("the kept key's token: %v", err)
	}
	if n := is.jwksHits.Load(); n != 2 {
		t.Fatalf("%d key set fetches, want 2 (the first and one refresh)", n)
	}
	if n := v.SignatureChecks(); n != checks {
		t.Fatalf("the kept key's token was checked again (%d signature checks)", n-checks)
	}
	_, err := v.Verify(ctx, tok1)
	if r := reasonOf(t, err); r != oauth.ReasonUnknownKey {
		t.Fatalf("the dropped key's token: %v, want unknown_key", err)
	}
	_, err = v.Verify(ctx, tok3)
	if r := reasonOf(t, err); r != oauth.ReasonSignature {
		t.Fatalf("the replaced key's token: %v, want signature", err)
	}
	if _, err := v.Verify(ctx, k3b.sign(t, claims(is))); err != nil {
		t.Fatalf("the new key's token: %v", err)
	}
}

// TestVerifiedCacheBound: a flood of distinct valid tokens never makes the
// cache hold more than its bound, and the most recently used are the ones
// kept; a flood of refused tokens (forged, expired, for another audience)
// enters nothing and evicts nothing.
func TestVerifiedCacheBound(t *testing.T) {
	ctx := context.Background()
	k := newKey(t, "real", jose.EdDSA)
	is := newIssuer(t, k)
	clk := testclock.New(t0)
	const bound = 64
	v := newVerifier(t, is, clk, nil, func(o *oauth.Options) { o.VerifiedCache = bound })
	toks := make([]string, 1000)
	for i := range toks {
		toks[i] = k.sign(t, claims(is, jti(i)))
		if _, err := v.Verify(ctx, toks[i]); err != nil {
			t.Fatal(err)
		}
		if n := v.VerifiedLen(); n > bound {
			t.Fatalf("after %d tokens the cache holds %d, more than %d", i+1, n, bound)
		}
	}
	checks := v.SignatureChecks()
	for _, tok := range toks[len(toks)-bound:] {
		if _, err := v.Verify(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	if n := v.SignatureChecks(); n != checks {
		t.Fatalf("the %d most recent tokens cost %d signature checks, want 0", bound, n-checks)
	}
	if _, err := v.Verify(ctx, toks[0]); err != nil || v.SignatureChecks() != checks+1 {
		t.Fatalf("the first token (evicted): %v, %d signature checks; want accepted after 1", err, v.SignatureChecks()-checks)
	}

	// Refusals: the one good token stays, alone.
	v = newVerifier(t, is, clk, nil, func(o *oauth.Options) { o.VerifiedCache = bound })
	good := toks[0]
	if _, err := v.Verify(ctx, good); err != nil {
		t.Fatal(err)
	}
	forger := newKey(t, "real", jose.EdDSA) // the issuer's kid, another key
	for i := range 1000 {
		var bad string
		switch i % 4 {
		case 0:
			bad = forger.sign(t, claims(is, jti(i)))
		case 1:
			bad = k.sign(t, claims(is, jti(i), func(c map[string]any) { c["exp"] = t0.Add(-time.Hour).Unix() }))
		case 2:
			bad = k.sign(t, claims(is, jti(i), func(c map[string]any) { c["aud"] = "https://other.example.com/mcp" }))
		case 3:
			bad = fmt.Sprintf("garbage-%d", i)
		}
		if _, err := v.Verify(ctx, bad); err == nil {
			t.Fatalf("bad token %d verified", i)
		}
		if _, err := v.Verify(ctx, bad); err == nil {
			t.Fatalf("bad token %d verified the second time", i)
		}
	}
	if n := v.VerifiedLen(); n != 1 {
		t.Fatalf("after 1,000 refused tokens the cache holds %d, want 1", n)
	}
	checks = v.SignatureChecks()
	if _, err := v.Verify(ctx, good); err != nil || v.SignatureChecks() != checks {
		t.Fatalf("the good token after the flood: %v, %d signature checks; want a hit", err, v.SignatureChecks()-checks)
	}
}

// TestVerifiedCacheConcurrent: many goroutines verify more tokens than the
// cache holds (so entries are evicted while others are read) and forged
// ones; every answer is right. Run with -race.
func TestVerifiedCacheConcurrent(t *testing.T) {
	ctx := context.Background()
	k := newKey(t, "k", jose.EdDSA)
	is := newIssuer(t, k)
	clk := testclock.New(t0)
	v := newVerifier(t, is, clk, nil, func(o *oauth.Options) { o.VerifiedCache = 8 })
	forger := newKey(t, "k", jose.EdDSA)
	type tc struct {
		tok, subject string
	}
	var toks []tc
	for i := range 24 {
		sub := fmt.Sprintf("user-%d", i)
		toks = append(toks, tc{k.sign(t, claims(is, func(c map[string]any) { c["sub"] = sub })), is.URL + "#" + sub})
		toks = append(toks, tc{forger.sign(t, claims(is, func(c map[string]any) { c["sub"] = sub })), ""})
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 300 {
				c := toks[(g*7+i*5)%len(toks)]
				id, err := v.Verify(ctx, c.tok)
				switch {
				case c.subject == "" && err == nil:
					errs <- fmt.Errorf("a forged token verified as %s", id.Subject)
					return
				case c.subject != "" && (err != nil || id.Subject != c.subject):
					errs <- fmt.Errorf("token of %s: %q, %v", c.subject, id.Subject, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := v.VerifiedLen(); n > 8 {
		t.Fatalf("the cache holds %d, more than 8", n)
	}
}
