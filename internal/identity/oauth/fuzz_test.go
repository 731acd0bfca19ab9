package oauth_test

import (
	"context"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/testclock"
)

// FuzzVerify: no string panics the verifier, and none verifies: the only
// key that signs for the in-test issuer never leaves this process, and every
// seed it signed is refused for a claim.
func FuzzVerify(f *testing.F) {
	k := newKey(f, "fuzz-rsa", jose.RS256)
	e := newKey(f, "fuzz-ec", jose.ES256)
	is := newIssuer(f, k, e)
	v := newVerifier(f, is, testclock.New(t0), nil)
	for _, edit := range []func(map[string]any){
		func(c map[string]any) { c["aud"] = "https://other.example" },
		func(c map[string]any) { c["exp"] = t0.Add(-time.Hour).Unix() },
		func(c map[string]any) { c["iss"] = "https://evil.example" },
		func(c map[string]any) { delete(c, "sub") },
		func(c map[string]any) { c["scope"] = 7 },
	} {
		f.Add(k.sign(f, claims(is, edit)))
		f.Add(e.sign(f, claims(is, edit)))
	}
	valid := e.sign(f, claims(is))
	f.Add(valid[:len(valid)-2])
	f.Add(strings.Replace(valid, ".", "..", 1))
	f.Fuzz(func(t *testing.T, token string) {
		if token == valid {
			return // the one valid token, handed to the fuzzer as a prefix only
		}
		if id, err := v.Verify(context.Background(), token); err == nil {
			t.Fatalf("verified as %+v", id)
		}
	})
}
