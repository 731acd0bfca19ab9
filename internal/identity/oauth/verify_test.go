package oauth_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/testclock"
	"github.com/gatehouse-dev/gatehouse/internal/identity/oauth"
)

func reasonOf(t *testing.T, err error) oauth.Reason {
	t.Helper()
	var e *oauth.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *oauth.Error", err, err)
	}
	return e.Reason
}

func TestVerifyAccepts(t *testing.T) {
	ctx := context.Background()
	for _, alg := range []jose.SignatureAlgorithm{jose.RS256, jose.PS256, jose.ES256, jose.EdDSA} {
		t.Run(string(alg), func(t *testing.T) {
			k := newKey(t, "k-"+string(alg), alg)
			is := newIssuer(t, k)
			v := newVerifier(t, is, testclock.New(t0), nil)
			id, err := v.Verify(ctx, k.sign(t, claims(is)))
			if err != nil {
				t.Fatal(err)
			}
			want := oauth.Identity{Subject: is.URL + "#alice", Scopes: []string{"mcp", "tool:bank__balance"}, Expiry: t0.Add(5 * time.Minute)}
			if !reflect.DeepEqual(id, want) {
				t.Fatalf("identity %+v, want %+v", id, want)
			}
		})
	}
}

func TestVerifyShapes(t *testing.T) {
	ctx := context.Background()
	k := newKey(t, "k1", jose.ES256)
	is := newIssuer(t, k)
	clk := testclock.New(t0)
	v := newVerifier(t, is, clk, nil)
	cases := []struct {
		name   string
		token  string
		scopes []string
	}{
		{"scp array", k.sign(t, claims(is, func(c map[string]any) { delete(c, "scope"); c["scp"] = []string{"a", "b"} })), nil},
		{"aud array containing the resource", k.sign(t, claims(is, func(c map[string]any) { c["aud"] = []string{"https://other", resource} })), []string{"mcp", "tool:bank__balance"}},
		{"no scope", k.sign(t, claims(is, func(c map[string]any) { delete(c, "scope") })), nil},
		{"typ JWT", k.sign(t, claims(is), "JWT"), []string{"mcp", "tool:bank__balance"}},
		{"typ application/AT+JWT", k.sign(t, claims(is), "application/AT+JWT"), []string{"mcp", "tool:bank__balance"}},
		{"no typ", k.sign(t, claims(is), ""), []string{"mcp", "tool:bank__balance"}},
		{"expired within the skew", k.sign(t, claims(is, func(c map[string]any) { c["exp"] = t0.Add(-59 * time.Second).Unix() })), []string{"mcp", "tool:bank__balance"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id, err := v.Verify(ctx, c.token)
			if err != nil {
				t.Fatal(err)
			}
			if id.Subject != is.URL+"#alice" || !reflect.DeepEqual(id.Scopes, c.scopes) {
				t.Fatalf("identity %+v, want scopes %q", id, c.scopes)
			}
		})
	}

	// scp under ScopesClaim "scp", and another subject claim.
	v2 := newVerifier(t, is, clk, nil, func(o *oauth.Options) { o.ScopesClaim = "scp"; o.SubjectClaim = "email" })
	id, err := v2.Verify(ctx, k.sign(t, claims(is, func(c map[string]any) { c["scp"] = []string{"a", "b"}; c["email"] = "a@x" })))
	if err != nil {
		t.Fatal(err)
	}
	if id.Subject != is.URL+"#a@x" || !reflect.DeepEqual(id.Scopes, []string{"a", "b"}) {
		t.Fatalf("identity %+v", id)
	}
}

func TestDiscovery(t *testing.T) {
	ctx := context.Background()
	k := newKey(t, "k1", jose.EdDSA)

	t.Run("OpenID metadata when RFC 8414's is absent", func(t *testing.T) {
		is := newIssuer(t, k)
		is.oidcOnly = true
		v := newVerifier(t, is, testclock.New(t0), nil)
		if _, err := v.Verify(ctx, k.sign(t, claims(is))); err != nil {
			t.Fatal(err)
		}
		if is.mdHits.Load() != 1 {
			t.Fatalf("%d metadata documents served, want 1", is.mdHits.Load())
		}
	})
	t.Run("JWKSURL given: no discovery", func(t *testing.T) {
		is := newIssuer(t, k)
		v := newVerifier(t, is, testclock.New(t0), nil, func(o *oauth.Options) { o.JWKSURL = is.URL + "/jwks" })
		if _, err := v.Verify(ctx, k.sign(t, claims(is))); err != nil {
			t.Fatal(err)
		}
		if is.mdHits.Load() != 0 || is.jwksHits.Load() != 1 {
			t.Fatalf("metadata %d, jwks %d; want 0 and 1", is.mdHits.Load(), is.jwksHits.Load())
		}
	})
	t.Run("metadata naming another issuer is refused", func(t *testing.T) {
		is := newIssuer(t, k)
		is.mdIssuer = is.URL + "/" // a near miss is a miss: exact match
		v := newVerifier(t, is, testclock.New(t0), nil)
		_, err := v.Verify(ctx, k.sign(t, claims(is)))
		if r := reasonOf(t, err); r != oauth.ReasonMetadata {
			t.Fatalf("reason %v (%v), want metadata", r, err)
		}
		if is.jwksHits.Load() != 0 {
			t.Fatal("keys fetched from a jwks_uri named by metadata of another issuer")
		}
	})
	t.Run("issuer serving nothing", func(t *testing.T) {
		is := newIssuer(t, k)
		is.srv.Close()
		v := newVerifier(t, is, testclock.New(t0), nil)
		_, err := v.Verify(ctx, k.sign(t, claims(is)))
		if r := reasonOf(t, err); r != oauth.ReasonIssuerUnavailable {
			t.Fatalf("reason %v (%v), want issuer_unavailable", r, err)
		}
	})
}

// b64 is base64url without padding, for hand-made attack tokens.
func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// attacks returns every token the verifier must refuse, and why.
func attacks(t *testing.T, is *issuer, k, other signingKey) []struct {
	name   string
	token  string
	reason oauth.Reason
} {
	t.Helper()
	valid := k.sign(t, claims(is))
	parts := strings.Split(valid, ".")
	pubDER, err := x509.MarshalPKIXPublicKey(k.priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	hmacWith := func(secret []byte) string {
		s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: jose.JSONWebKey{Key: secret, KeyID: k.kid}}, (&jose.SignerOptions{}).WithType("at+jwt"))
		if err != nil {
			t.Fatal(err)
		}
		obj, err := s.Sign([]byte(parts[1]))
		if err != nil {
			t.Fatal(err)
		}
		tok, err := obj.CompactSerialize()
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	// a token signed by other's key but naming k's kid, with other's key embedded (jwk header).
	embedded := func() string {
		s, err := jose.NewSigner(jose.SigningKey{Algorithm: other.alg, Key: other.priv}, (&jose.SignerOptions{EmbedJWK: true}).WithHeader("kid", k.kid))
		if err != nil {
			t.Fatal(err)
		}
		obj, err := s.Sign(mustJSON(t, claims(is)))
		if err != nil {
			t.Fatal(err)
		}
		tok, _ := obj.CompactSerialize()
		return tok
	}()
	payloadNotJSON := func() string {
		s, _ := jose.NewSigner(jose.SigningKey{Algorithm: k.alg, Key: jose.JSONWebKey{Key: k.priv, KeyID: k.kid}}, nil)
		obj, _ := s.Sign([]byte("not json"))
		tok, _ := obj.CompactSerialize()
		return tok
	}()
	full := func() string {
		s, _ := jose.NewSigner(jose.SigningKey{Algorithm: k.alg, Key: jose.JSONWebKey{Key: k.priv, KeyID: k.kid}}, nil)
		obj, _ := s.Sign(mustJSON(t, claims(is)))
		return obj.FullSerialize()
	}()
	crit := func() string {
		s, _ := jose.NewSigner(jose.SigningKey{Algorithm: k.alg, Key: jose.JSONWebKey{Key: k.priv, KeyID: k.kid}},
			(&jose.SignerOptions{}).WithHeader("exp-ext", 1).WithCritical("exp-ext"))
		obj, _ := s.Sign(mustJSON(t, claims(is)))
		tok, _ := obj.CompactSerialize()
		return tok
	}()
	edit := func(e func(map[string]any)) string { return k.sign(t, claims(is, e)) }
	return []struct {
		name   string
		token  string
		reason oauth.Reason
	}{
		// signature and algorithm
		{"alg none", b64(`{"alg":"none","typ":"at+jwt"}`) + "." + parts[1] + ".", oauth.ReasonAlgorithm},
		{"alg none with kid", b64(`{"alg":"none","kid":"`+k.kid+`"}`) + "." + parts[1] + "." + parts[2], oauth.ReasonAlgorithm},
		{"HS256 keyed with the RSA public key PEM", hmacWith(pubPEM), oauth.ReasonAlgorithm},
		{"HS256 keyed with the RSA public key DER", hmacWith(pubDER), oauth.ReasonAlgorithm},
		{"RS512 (not on the list)", b64(`{"alg":"RS512","kid":"`+k.kid+`"}`) + "." + parts[1] + "." + parts[2], oauth.ReasonAlgorithm},
		{"ES256 header on an RSA key", b64(`{"alg":"ES256","kid":"`+k.kid+`"}`) + "." + parts[1] + "." + parts[2], oauth.ReasonAlgorithm},
		{"payload swapped under a valid signature", parts[0] + "." + b64(string(mustJSON(t, claims(is, func(c map[string]any) { c["sub"] = "root" })))) + "." + parts[2], oauth.ReasonSignature},
		{"signature of another key under this kid, that key embedded", embedded, oauth.ReasonSignature},
		{"signature truncated", valid[:len(valid)-4], oauth.ReasonSignature},
		{"unknown kid", other.sign(t, claims(is)), oauth.ReasonUnknownKey},
		// claims
		{"wrong audience (near miss)", edit(func(c map[string]any) { c["aud"] = resource + "/" }), oauth.ReasonAudience},
		{"token for another resource", edit(func(c map[string]any) { c["aud"] = []string{"https://api.other.example/mcp"} }), oauth.ReasonAudience},
		{"no audience", edit(func(c map[string]any) { delete(c, "aud") }), oauth.ReasonAudience},
		{"wrong issuer", edit(func(c map[string]any) { c["iss"] = "https://evil.example" }), oauth.ReasonIssuer},
		{"issuer with a trailing slash", edit(func(c map[string]any) { c["iss"] = is.URL + "/" }), oauth.ReasonIssuer},
		{"no issuer", edit(func(c map[string]any) { delete(c, "iss") }), oauth.ReasonIssuer},
		{"expired", edit(func(c map[string]any) { c["exp"] = t0.Add(-61 * time.Second).Unix() }), oauth.ReasonExpired},
		{"not yet valid", edit(func(c map[string]any) { c["nbf"] = t0.Add(61 * time.Second).Unix() }), oauth.ReasonNotYetValid},
		{"issued in the future", edit(func(c map[string]any) { c["iat"] = t0.Add(time.Hour).Unix() }), oauth.ReasonNotYetValid},
		{"no exp", edit(func(c map[string]any) { delete(c, "exp") }), oauth.ReasonMalformed},
		{"typ is another kind of JWT", k.sign(t, claims(is), "dpop+jwt"), oauth.ReasonType},
		{"typ is an ID token's", k.sign(t, claims(is), "id_token+jwt"), oauth.ReasonType},
		// size
		{"oversized", edit(func(c map[string]any) { c["pad"] = strings.Repeat("x", 16<<10) }), oauth.ReasonTooLarge},
		// malformed: one per way
		{"empty", "", oauth.ReasonMalformed},
		{"one part", "abc", oauth.ReasonMalformed},
		{"two parts", parts[0] + "." + parts[1], oauth.ReasonMalformed},
		{"four parts", valid + ".x", oauth.ReasonMalformed},
		{"five parts (a JWE)", parts[0] + ".a.b." + parts[1] + "." + parts[2], oauth.ReasonMalformed},
		{"JWS JSON serialization", full, oauth.ReasonMalformed},
		{"header not base64url", "*" + parts[0][1:] + "." + parts[1] + "." + parts[2], oauth.ReasonMalformed},
		{"header not JSON", b64("alg") + "." + parts[1] + "." + parts[2], oauth.ReasonMalformed},
		{"header without alg", b64(`{"kid":"`+k.kid+`"}`) + "." + parts[1] + "." + parts[2], oauth.ReasonAlgorithm},
		{"payload not base64url", parts[0] + ".*" + parts[1][1:] + "." + parts[2], oauth.ReasonMalformed},
		{"signature not base64url", parts[0] + "." + parts[1] + ".*" + parts[2][1:], oauth.ReasonMalformed},
		{"Bearer prefix left on", "Bearer " + valid, oauth.ReasonMalformed},
		{"payload not JSON", payloadNotJSON, oauth.ReasonMalformed},
		{"crit names an extension not understood", crit, oauth.ReasonMalformed},
		{"exp a string", edit(func(c map[string]any) { c["exp"] = "tomorrow" }), oauth.ReasonMalformed},
		{"aud a number", edit(func(c map[string]any) { c["aud"] = 7 }), oauth.ReasonMalformed},
		{"no sub", edit(func(c map[string]any) { delete(c, "sub") }), oauth.ReasonMalformed},
		{"sub empty", edit(func(c map[string]any) { c["sub"] = "" }), oauth.ReasonMalformed},
		{"sub a number", edit(func(c map[string]any) { c["sub"] = 7 }), oauth.ReasonMalformed},
		{"scope a number", edit(func(c map[string]any) { c["scope"] = 7 }), oauth.ReasonMalformed},
		{"scope an array of numbers", edit(func(c map[string]any) { c["scope"] = []int{1} }), oauth.ReasonMalformed},
		{"scope array with a spaced entry", edit(func(c map[string]any) { c["scope"] = []string{"a b"} }), oauth.ReasonMalformed},
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := jsonMarshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestVerifyRefuses(t *testing.T) {
	ctx := context.Background()
	k := newKey(t, "rsa-1", jose.RS256)
	other := newKey(t, "rsa-2", jose.RS256)
	is := newIssuer(t, k)
	var logs bytes.Buffer
	v := newVerifier(t, is, testclock.New(t0), &logs)
	for _, a := range attacks(t, is, k, other) {
		t.Run(a.name, func(t *testing.T) {
			id, err := v.Verify(ctx, a.token)
			if err == nil {
				t.Fatalf("verified as %+v", id)
			}
			if r := reasonOf(t, err); r != a.reason {
				t.Fatalf("reason %v (%v), want %v", r, err, a.reason)
			}
			if !reflect.DeepEqual(id, oauth.Identity{}) {
				t.Fatalf("refused with a non-zero identity %+v", id)
			}
		})
	}
}

// TestNoTokenInErrorsOrLogs: no error text and no log line (at Debug) holds
// a token or any of its three parts.
func TestNoTokenInErrorsOrLogs(t *testing.T) {
	ctx := context.Background()
	k := newKey(t, "rsa-1", jose.RS256)
	other := newKey(t, "rsa-2", jose.RS256)
	is := newIssuer(t, k)
	var logs bytes.Buffer
	v := newVerifier(t, is, testclock.New(t0), &logs)
	tokens := []string{k.sign(t, claims(is))}
	for _, a := range attacks(t, is, k, other) {
		tokens = append(tokens, a.token)
	}
	var errs []string
	for _, tok := range tokens {
		if _, err := v.Verify(ctx, tok); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) != len(tokens)-1 {
		t.Fatalf("%d refusals for %d attacks", len(errs), len(tokens)-1)
	}
	if !strings.Contains(logs.String(), "token refused") {
		t.Fatalf("refusals were not logged at Debug:\n%s", logs.String())
	}
	for _, tok := range tokens {
		for _, part := range append(strings.Split(tok, "."), tok) {
			if len(part) < 12 {
				continue
			}
			if strings.Contains(logs.String(), part) {
				t.Errorf("the log holds part of a token: %q", part)
			}
			for _, e := range errs {
				if strings.Contains(e, part) {
					t.Errorf("error %q holds part of a token", e)
				}
			}
		}
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	for name, o := range map[string]*oauth.Options{
		"nil":                   nil,
		"no issuer":             {Audience: resource},
		"issuer not a URL":      {Issuer: "idp", Audience: resource},
		"issuer plain http":     {Issuer: "http://idp.example.com", Audience: resource},
		"issuer with fragment":  {Issuer: "https://idp.example.com#x", Audience: resource},
		"issuer with query":     {Issuer: "https://idp.example.com?x=1", Audience: resource},
		"issuer with user info": {Issuer: "https://u@idp.example.com", Audience: resource},
		"no audience":           {Issuer: "https://idp.example.com"},
		"jwks plain http":       {Issuer: "https://idp.example.com", Audience: resource, JWKSURL: "http://idp.example.com/jwks"},
		"negative skew":         {Issuer: "https://idp.example.com", Audience: resource, Skew: -time.Second},
		"negative size":         {Issuer: "https://idp.example.com", Audience: resource, MaxTokenSize: -1},
	} {
		if _, err := oauth.New(o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := oauth.New(&oauth.Options{Issuer: "http://localhost:9/realms/x", Audience: resource}); err != nil {
		t.Errorf("http on localhost refused: %v", err)
	}
}
