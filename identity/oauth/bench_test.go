package oauth_test

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
)

// BenchmarkVerifyCached is one Verify of a valid token whose key is cached:
// the cost per request once the issuer's keys are fetched. StaticSHA256 is
// what a static token costs today (a SHA-256 and a constant-time compare).
func BenchmarkVerifyCached(b *testing.B) {
	ctx := context.Background()
	for _, alg := range []jose.SignatureAlgorithm{jose.RS256, jose.ES256, jose.EdDSA} {
		b.Run(string(alg), func(b *testing.B) {
			k := newKey(b, "k", alg)
			is := newIssuer(b, k)
			v := newVerifier(b, is, &clock{now: t0}, nil)
			tok := k.sign(b, claims(is))
			if _, err := v.Verify(ctx, tok); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Verify(ctx, tok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("StaticSHA256", func(b *testing.B) {
		tok := []byte("a-static-bearer-token-of-forty-three-bytes!")
		want := sha256.Sum256(tok)
		b.ReportAllocs()
		for b.Loop() {
			got := sha256.Sum256(tok)
			if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
				b.Fatal("mismatch")
			}
		}
	})
}
