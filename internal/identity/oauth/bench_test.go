package oauth_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"math/big"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/testclock"
	"github.com/gatehouse-dev/gatehouse/internal/identity/oauth"
)

// BenchmarkVerifyCached is one Verify of a valid token whose key is cached:
// the cost per request once the issuer's keys are fetched. For each alg:
//
//   - Hit: the same token again, answered from the verified cache (the
//     steady state of a session presenting its access token per request);
//   - Miss: a token the verified cache does not hold (1,024 tokens in turn
//     through a cache of 512: each is verified in full, remembered, and
//     evicts another);
//   - Off: the verified cache disabled (VerifiedCache < 0), a full verify;
//   - Bare: the baseline of Off, the signature check alone straight with
//     crypto/rsa, crypto/ecdsa or crypto/ed25519 over the same token (no
//     parsing, no claims): what no verifier can go below.
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
			v := newVerifier(b, is, testclock.New(t0), nil, func(o *oauth.Options) { o.VerifiedCache = size })
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
		b.Run(string(alg)+"/Bare", func(b *testing.B) { bareVerify(b, k, tok) })
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

// bareVerify checks tok's signature with the standard library only.
func bareVerify(b *testing.B, k signingKey, tok string) {
	parts := strings.Split(tok, ".")
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		b.Fatal(err)
	}
	input := []byte(parts[0] + "." + parts[1])
	var check func() bool
	switch pub := k.priv.Public().(type) {
	case *rsa.PublicKey:
		check = func() bool {
			h := sha256.Sum256(input)
			return rsa.VerifyPKCS1v15(pub, crypto.SHA256, h[:], sig) == nil
		}
	case *ecdsa.PublicKey:
		r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
		check = func() bool {
			h := sha256.Sum256(input)
			return ecdsa.Verify(pub, h[:], r, s)
		}
	case ed25519.PublicKey:
		check = func() bool { return ed25519.Verify(pub, input, sig) }
	default:
		b.Fatalf("no bare check for %T", pub)
	}
	if !check() {
		b.Fatal("the bare check refuses the token")
	}
	b.ReportAllocs()
	for b.Loop() {
		if !check() {
			b.Fatal("refused")
		}
	}
}
