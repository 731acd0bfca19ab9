package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Defaults of [Options].
const (
	DefaultSkew            = 60 * time.Second
	DefaultRefreshInterval = 10 * time.Second
	DefaultMaxCacheLife    = time.Hour
	DefaultMaxTokenSize    = 16 << 10
	DefaultFetchTimeout    = 10 * time.Second
	DefaultSubjectClaim    = "sub"
	DefaultScopesClaim     = "scope"
)

// maxDocument bounds a metadata or JWKS response body.
const maxDocument = 1 << 20

// allowedAlgs is the signature allow-list: asymmetric only, so neither none
// nor any HMAC (and so no HMAC keyed with a public key) can ever verify.
var allowedAlgs = []jose.SignatureAlgorithm{jose.RS256, jose.PS256, jose.ES256, jose.EdDSA}

// Options configure a [Verifier]. Issuer and Audience are required; every
// other zero field takes its default.
type Options struct {
	// Issuer is the authorization server's issuer identifier; a token's iss
	// must equal it exactly, and so must the issuer of its metadata. It must
	// be an https URL, or http on a loopback host (tests, local development).
	Issuer string
	// JWKSURL is where the issuer's keys are. If empty it is discovered from
	// the issuer's RFC 8414 metadata (/.well-known/oauth-authorization-server,
	// inserted before the issuer's path) and, failing that, its OpenID
	// metadata (/.well-known/openid-configuration, appended).
	JWKSURL string
	// Audience is this resource's canonical URL (RFC 8707); a token's aud must
	// contain it exactly.
	Audience string
	// Skew is the clock skew tolerated on exp, nbf and iat. Default 60s.
	Skew time.Duration
	// SubjectClaim names the claim whose string value is the subject within
	// the issuer. Default "sub".
	SubjectClaim string
	// ScopesClaim names the claim holding the scopes: a space-separated
	// string ("scope", RFC 9068) or an array of strings ("scp"). Either shape
	// is accepted under any name. Default "scope".
	ScopesClaim string
	// RefreshInterval is the least time between two fetches of the key set
	// (an unknown kid, an expired cache, or an issuer that is down trigger at
	// most one per interval). Default 10s.
	RefreshInterval time.Duration
	// MaxCacheLife bounds how long a fetched key set is used before it is
	// refreshed; the JWKS response's Cache-Control max-age shortens it.
	// Default 1h. A key set that cannot be refreshed is still used.
	MaxCacheLife time.Duration
	// MaxTokenSize bounds a token's length in bytes; a longer one is refused
	// before it is parsed. Default 16 KiB.
	MaxTokenSize int
	// FetchTimeout bounds one discovery or key set fetch. Default 10s.
	FetchTimeout time.Duration
	// HTTPClient fetches metadata and keys. Default: a client on
	// http.DefaultTransport.
	HTTPClient *http.Client
	// Logger receives key set refreshes (Info), failed fetches and skipped
	// keys (Warn) and refusals (Debug). It never receives a token. Default:
	// discard.
	Logger *slog.Logger
	// VerifiedCache bounds how many verified tokens the Verifier remembers
	// (by their SHA-256, never the token), so that the same token presented
	// again is answered without checking its signature. Default
	// [DefaultVerifiedCache]; negative disables the cache. See the package
	// doc for what a remembered token still has to pass.
	VerifiedCache int
	// Now is the clock (tests). Default time.Now.
	Now func() time.Time
}

// Identity is who a verified token speaks for.
type Identity struct {
	// Subject is the issuer, "#", and the subject claim's value, exactly:
	// "https://idp.example.com#248289761001". The issuer never contains '#'
	// (it has no fragment), so two issuers never share a Subject.
	Subject string
	// Scopes are the token's scopes in their order (nil when it has none).
	Scopes []string
	// Expiry is the token's exp.
	Expiry time.Time
}

// A Verifier verifies JWT access tokens issued by one authorization server
// for one resource. It is safe for concurrent use and starts no goroutines.
type Verifier struct {
	issuer, audience   string
	subjectClaim       string
	scopesClaim        string
	skew, interval     time.Duration
	maxLife, timeout   time.Duration
	maxSize            int
	client             *http.Client
	log                *slog.Logger
	now                func() time.Time
	expected           jwt.Audience
	configuredJWKSURL  string
	discoveryEndpoints []string
	verified           *verifiedCache // nil when disabled

	signatureChecks atomic.Int64 // how many signatures were checked (tests)

	mu          sync.Mutex
	set         *keySet   // nil until a fetch succeeds
	expires     time.Time // when set is due for a refresh
	attempted   bool
	lastAttempt time.Time
	lastErr     *Error
	flight      *flight
	gen         uint64 // how many key sets were fetched
	jwksURL     string // given or discovered; written only by a flight's leader
}

// New returns a Verifier, or an error naming the option that is wrong. It
// does no I/O: keys are fetched by the first [Verifier.Verify].
func New(opts *Options) (*Verifier, error) {
	if opts == nil {
		return nil, errors.New("oauth: options are required (Issuer, Audience)")
	}
	if opts.Issuer == "" {
		return nil, errors.New("oauth: Issuer is required")
	}
	iss, err := checkURL(opts.Issuer)
	if err != nil {
		return nil, fmt.Errorf("oauth: Issuer: %w", err)
	}
	if iss.RawQuery != "" {
		return nil, fmt.Errorf("oauth: Issuer %q has a query; an issuer identifier has none (RFC 8414)", opts.Issuer)
	}
	if opts.Audience == "" {
		return nil, errors.New("oauth: Audience (the resource's canonical URL) is required")
	}
	if opts.JWKSURL != "" {
		if _, err := checkURL(opts.JWKSURL); err != nil {
			return nil, fmt.Errorf("oauth: JWKSURL: %w", err)
		}
	}
	for name, d := range map[string]time.Duration{"Skew": opts.Skew, "RefreshInterval": opts.RefreshInterval,
		"MaxCacheLife": opts.MaxCacheLife, "FetchTimeout": opts.FetchTimeout} {
		if d < 0 {
			return nil, fmt.Errorf("oauth: %s is negative (%v)", name, d)
		}
	}
	if opts.MaxTokenSize < 0 {
		return nil, fmt.Errorf("oauth: MaxTokenSize is negative (%d)", opts.MaxTokenSize)
	}
	v := &Verifier{
		issuer:            opts.Issuer,
		audience:          opts.Audience,
		expected:          jwt.Audience{opts.Audience},
		subjectClaim:      or(opts.SubjectClaim, DefaultSubjectClaim),
		scopesClaim:       or(opts.ScopesClaim, DefaultScopesClaim),
		skew:              or(opts.Skew, DefaultSkew),
		interval:          or(opts.RefreshInterval, DefaultRefreshInterval),
		maxLife:           or(opts.MaxCacheLife, DefaultMaxCacheLife),
		timeout:           or(opts.FetchTimeout, DefaultFetchTimeout),
		maxSize:           or(opts.MaxTokenSize, DefaultMaxTokenSize),
		client:            opts.HTTPClient,
		log:               opts.Logger,
		now:               opts.Now,
		configuredJWKSURL: opts.JWKSURL,
		jwksURL:           opts.JWKSURL,
	}
	switch {
	case opts.VerifiedCache == 0:
		v.verified = newVerifiedCache(DefaultVerifiedCache)
	case opts.VerifiedCache > 0:
		v.verified = newVerifiedCache(opts.VerifiedCache)
	}
	if v.client == nil {
		v.client = &http.Client{}
	}
	if v.log == nil {
		v.log = slog.New(slog.DiscardHandler)
	}
	if v.now == nil {
		v.now = time.Now
	}
	// RFC 8414 §3.1 inserts the well-known segment between host and path;
	// OpenID Connect Discovery appends it to the issuer.
	path := strings.TrimSuffix(iss.EscapedPath(), "/")
	origin := iss.Scheme + "://" + iss.Host
	v.discoveryEndpoints = []string{
		origin + "/.well-known/oauth-authorization-server" + path,
		origin + path + "/.well-known/openid-configuration",
	}
	return v, nil
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// checkURL accepts an absolute https URL, or http on a loopback host, with
// no user info and no fragment.
func checkURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("not a URL: %w", err)
	}
	if u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("%q is not an absolute http(s) URL", s)
	}
	if u.User != nil || u.Fragment != "" || strings.Contains(s, "#") {
		return nil, fmt.Errorf("%q has user info or a fragment", s)
	}
	if u.Scheme == "http" && !loopback(u.Hostname()) {
		return nil, fmt.Errorf("%q is plain http on a host that is not loopback; use https", s)
	}
	return u, nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Verify checks token (the bearer token, without "Bearer ") and returns the
// identity it speaks for. Every refusal is an [*Error]; its text never
// contains the token. Verify fetches the issuer's keys when it has none, when
// they are due for a refresh, or when the token names a key it does not know
// (each at most once per [Options.RefreshInterval], shared by concurrent
// calls); an issuer that cannot be reached does not fail tokens whose key is
// cached.
func (v *Verifier) Verify(ctx context.Context, token string) (Identity, error) {
	id, e := v.verify(ctx, token)
	if e != nil {
		v.log.Debug("oauth: token refused", "reason", e.Reason.String(), "detail", e.Detail)
		return Identity{}, e
	}
	return id, nil
}

func (v *Verifier) verify(ctx context.Context, token string) (Identity, *Error) {
	if len(token) > v.maxSize {
		return Identity{}, refuse(ReasonTooLarge, nil, "token is %d bytes, more than %d", len(token), v.maxSize)
	}
	if token == "" {
		return Identity{}, refuse(ReasonMalformed, nil, "token is empty")
	}
	var hash [32]byte
	if v.verified != nil {
		hash = tokenHash(token)
		if id, e, ok := v.cached(ctx, hash); ok {
			return id, e
		}
	}
	tok, err := jwt.ParseSigned(token, allowedAlgs)
	if err != nil {
		var alg *jose.ErrUnexpectedSignatureAlgorithm
		if errors.As(err, &alg) {
			return Identity{}, refuse(ReasonAlgorithm, nil, "alg %s is not allowed (RS256, PS256, ES256, EdDSA)", short(string(alg.Got)))
		}
		return Identity{}, refuse(ReasonMalformed, err, "not a compact JWS")
	}
	if len(tok.Headers) != 1 {
		return Identity{}, refuse(ReasonMalformed, nil, "%d signatures, want one", len(tok.Headers))
	}
	h := tok.Headers[0]
	if typ, ok := h.ExtraHeaders[jose.HeaderType]; ok {
		s, _ := typ.(string)
		t := strings.TrimPrefix(strings.ToLower(s), "application/")
		if t != "at+jwt" && t != "jwt" {
			return Identity{}, refuse(ReasonType, nil, "typ %s is neither at+jwt nor JWT", short(fmt.Sprint(typ)))
		}
	}
	key, e := v.key(ctx, h.KeyID, h.Algorithm)
	if e != nil {
		return Identity{}, e
	}
	var std jwt.Claims
	var extra map[string]json.RawMessage
	v.signatureChecks.Add(1)
	if err := tok.Claims(key.Key, &std, &extra); err != nil {
		if errors.Is(err, jose.ErrCryptoFailure) {
			return Identity{}, refuse(ReasonSignature, nil, "signature does not verify with key %s", short(h.KeyID))
		}
		return Identity{}, refuse(ReasonMalformed, err, "claims")
	}
	if std.Expiry == nil {
		return Identity{}, refuse(ReasonMalformed, nil, "token has no exp")
	}
	now := v.now()
	if err := std.ValidateWithLeeway(jwt.Expected{Issuer: v.issuer, AnyAudience: v.expected, Time: now}, v.skew); err != nil {
		switch {
		case errors.Is(err, jwt.ErrInvalidIssuer):
			return Identity{}, refuse(ReasonIssuer, nil, "iss is not %s", v.issuer)
		case errors.Is(err, jwt.ErrInvalidAudience):
			return Identity{}, refuse(ReasonAudience, nil, "aud does not contain %s", v.audience)
		case errors.Is(err, jwt.ErrExpired):
			return Identity{}, refuse(ReasonExpired, nil, "exp is %v past", now.Sub(std.Expiry.Time()).Round(time.Second))
		case errors.Is(err, jwt.ErrNotValidYet):
			return Identity{}, refuse(ReasonNotYetValid, nil, "nbf is %v ahead", std.NotBefore.Time().Sub(now).Round(time.Second))
		case errors.Is(err, jwt.ErrIssuedInTheFuture):
			return Identity{}, refuse(ReasonNotYetValid, nil, "iat is %v ahead", std.IssuedAt.Time().Sub(now).Round(time.Second))
		}
		return Identity{}, refuse(ReasonMalformed, err, "claims")
	}
	sub := std.Subject
	if v.subjectClaim != "sub" {
		sub = ""
		if raw, ok := extra[v.subjectClaim]; ok && json.Unmarshal(raw, &sub) != nil {
			return Identity{}, refuse(ReasonMalformed, nil, "claim %s is not a string", v.subjectClaim)
		}
	}
	if sub == "" {
		return Identity{}, refuse(ReasonMalformed, nil, "token has no %s", v.subjectClaim)
	}
	scopes, e := parseScopes(extra[v.scopesClaim])
	if e != nil {
		e.Detail = "claim " + v.scopesClaim + " " + e.Detail
		return Identity{}, e
	}
	id := Identity{Subject: v.issuer + "#" + sub, Scopes: scopes, Expiry: std.Expiry.Time().UTC()}
	if v.verified != nil {
		ent := &verified{hash: hash, id: id, kid: h.KeyID, alg: h.Algorithm, born: key.born}
		ent.id.Scopes = slices.Clone(scopes) // the caller may change its copy
		if std.NotBefore != nil {
			ent.nbf = std.NotBefore.Time()
		}
		if std.IssuedAt != nil {
			ent.iat = std.IssuedAt.Time()
		}
		v.verified.put(ent)
	}
	return id, nil
}

// parseScopes reads a space-separated string or an array of strings; absent
// or null is no scopes.
func parseScopes(raw json.RawMessage) ([]string, *Error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, refuse(ReasonMalformed, err, "is not a valid string")
		}
		if f := strings.Fields(s); len(f) > 0 {
			return f, nil
		}
		return nil, nil
	case '[':
		var a []string
		if err := json.Unmarshal(raw, &a); err != nil {
			return nil, refuse(ReasonMalformed, nil, "is not an array of strings")
		}
		for _, s := range a {
			if s == "" || strings.ContainsAny(s, " \t\r\n") {
				return nil, refuse(ReasonMalformed, nil, "has an empty scope or one with a space")
			}
		}
		if len(a) == 0 {
			return nil, nil
		}
		return a, nil
	}
	return nil, refuse(ReasonMalformed, nil, "is neither a string nor an array of strings")
}

// short quotes a value read from a token's header for an error or a log line,
// cut to 40 bytes: enough to recognise, never the token.
func short(s string) string {
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return strconv.Quote(s)
}
