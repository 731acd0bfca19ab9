package oauth_test

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/testclock"
	"github.com/gatehouse-dev/gatehouse/internal/identity/oauth"
)

const resource = "https://gw.example.com/mcp"

// t0 is the tests' clock: tokens are minted around it.
var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// signingKey is a private key the in-test issuer signs with.
type signingKey struct {
	kid  string
	alg  jose.SignatureAlgorithm
	priv crypto.Signer
}

func newKey(t testing.TB, kid string, alg jose.SignatureAlgorithm) signingKey {
	t.Helper()
	var priv crypto.Signer
	var err error
	switch alg {
	case jose.RS256, jose.PS256:
		priv, err = rsa.GenerateKey(rand.Reader, 2048)
	case jose.ES256:
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case jose.EdDSA:
		_, priv, err = ed25519.GenerateKey(rand.Reader)
	default:
		t.Fatalf("no key for %s", alg)
	}
	if err != nil {
		t.Fatal(err)
	}
	return signingKey{kid: kid, alg: alg, priv: priv}
}

func (k signingKey) jwk() jose.JSONWebKey {
	return jose.JSONWebKey{Key: k.priv.Public(), KeyID: k.kid, Algorithm: string(k.alg), Use: "sig"}
}

// sign mints a compact JWS over claims with typ at+jwt (or typ, if given).
func (k signingKey) sign(t testing.TB, claims any, typ ...jose.ContentType) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType("at+jwt")
	if len(typ) > 0 {
		opts = &jose.SignerOptions{}
		if typ[0] != "" {
			opts = opts.WithType(typ[0])
		}
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: k.alg, Key: jose.JSONWebKey{Key: k.priv, KeyID: k.kid}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// issuer is an authorization server on 127.0.0.1 serving RFC 8414 metadata
// (or only OpenID metadata) and a JWKS, counting what it serves.
type issuer struct {
	srv *httptest.Server
	URL string

	mu           sync.Mutex
	keys         []jose.JSONWebKey
	mdIssuer     string // the issuer its metadata names; URL unless set
	oidcOnly     bool
	cacheControl string

	jwksHits, mdHits atomic.Int64
}

func newIssuer(t testing.TB, keys ...signingKey) *issuer {
	t.Helper()
	is := &issuer{}
	mux := http.NewServeMux()
	metadata := func(w http.ResponseWriter, r *http.Request) {
		is.mdHits.Add(1)
		is.mu.Lock()
		iss := is.mdIssuer
		is.mu.Unlock()
		if iss == "" {
			iss = is.URL
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"issuer": iss, "jwks_uri": is.URL + "/jwks"})
	}
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		is.mu.Lock()
		oidc := is.oidcOnly
		is.mu.Unlock()
		if oidc {
			http.NotFound(w, r)
			return
		}
		metadata(w, r)
	})
	mux.HandleFunc("/.well-known/openid-configuration", metadata)
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		is.jwksHits.Add(1)
		is.mu.Lock()
		set := jose.JSONWebKeySet{Keys: append([]jose.JSONWebKey(nil), is.keys...)}
		cc := is.cacheControl
		is.mu.Unlock()
		if cc != "" {
			w.Header().Set("Cache-Control", cc)
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(set)
	})
	is.srv = httptest.NewServer(mux)
	is.URL = is.srv.URL
	t.Cleanup(is.srv.Close)
	is.publish(keys...)
	return is
}

// publish replaces the issuer's key set.
func (is *issuer) publish(keys ...signingKey) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.keys = nil
	for _, k := range keys {
		is.keys = append(is.keys, k.jwk())
	}
}

// verifier returns a Verifier for is on clk, logging into logs when given.
func newVerifier(t testing.TB, is *issuer, clk *testclock.Clock, logs *bytes.Buffer, edit ...func(*oauth.Options)) *oauth.Verifier {
	t.Helper()
	opts := &oauth.Options{Issuer: is.URL, Audience: resource, Now: clk.Now, HTTPClient: is.srv.Client()}
	if logs != nil {
		opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	for _, e := range edit {
		e(opts)
	}
	v, err := oauth.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// claims are a valid token's claims for is, at t0, changed by edit.
func claims(is *issuer, edit ...func(map[string]any)) map[string]any {
	c := map[string]any{
		"iss":   is.URL,
		"sub":   "alice",
		"aud":   resource,
		"exp":   t0.Add(5 * time.Minute).Unix(),
		"iat":   t0.Add(-time.Minute).Unix(),
		"nbf":   t0.Add(-time.Minute).Unix(),
		"scope": "mcp tool:bank__balance",
	}
	for _, e := range edit {
		e(c)
	}
	return c
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

func asError(err error, target **oauth.Error) bool { return errors.As(err, target) }
