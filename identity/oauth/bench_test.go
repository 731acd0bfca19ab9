package oauth_test

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"testing"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/gatehouse-dev/gatehouse/identity/oauth"
)

// BenchmarkVerifyCached is one Verify of a valid token whose key is cached:
// the cost per request once the issuer's keys are fetched. For each alg:
//
//   - Hit: the same token again, answered from the verified cache (the
//     steady state of a session presenting its access token per request);
//   - Miss: a token the verified cache does not hold (1,024 tokens in turn
//     through a cache of 512: each is verified in full, remembered, and
//     evicts another);
//   - Off: the verified cache disabled (VerifiedCache < 0), a full verify.
//
// StaticSHA256 is what a static token costs today (a SHA-256 and a
// constant-time compare).
func BenchmarkVerifyCached(b *testing.B) {
	ctx := context.Background()
	for _, alg := range []jose.SignatureAlgorithm{jose.RS256, jose.ES256, jose.EdDSA} {
		k := newKey(b, "k", alg)
		is := newIssuer(b, k)
		tok := k.sign(b, claims(is))
		run := func(b *testing.B, size int, toks []string) {
			v := newVerifier(b, is, &clock{now: t0}, nil, func(o *oauth.Options) { o.VerifiedCache = size })
			for _, tok := range toks {
				if _, err := v.Verify(ctx, tok); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := v.Verify(ctx, toks[i%len(toks)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		}
		b.Run(string(alg)+"/Hit", func(b *testing.B) { run(b, 0, []string{tok}) })
		b.Run(string(alg)+"/Miss", func(b *testing.B) {
			toks := make([]string, 1024)
			for i := range toks {
				toks[i] = k.sign(b, claims(is, jti(i)))
			}
			run(b, 512, toks)
		})
		b.Run(string(alg)+"/Off", func(b *testing.B) { run(b, -1, []string{tok}) })
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
