package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Defaults of [IntrospectorOptions].
const (
	// DefaultIntrospectionCacheTTL bounds how long a positive answer is
	// reused: a token revoked at the authorization server is still accepted
	// for at most this long (and never past its exp).
	DefaultIntrospectionCacheTTL = 5 * time.Minute
	// MaxIntrospectionResponse bounds an introspection response body.
	MaxIntrospectionResponse = 64 << 10
)

// IntrospectorOptions configure an [Introspector]. URL, ClientID,
// ClientSecret, Issuer and Audience are required; every other zero field
// takes its default.
type IntrospectorOptions struct {
	// URL is the authorization server's introspection endpoint (RFC 7662
	// §2). It must be an https URL, or http on a loopback host.
	URL string
	// ClientID and ClientSecret are the resource server's credentials at the
	// authorization server, sent as client_secret_basic (RFC 6749 §2.3.1).
	ClientID, ClientSecret string
	// Issuer is the authorization server's issuer identifier: the prefix of
	// every Subject, and what an answer's iss, when present, must equal.
	Issuer string
	// Audience is this resource's canonical URL (RFC 8707); an answer's aud,
	// when present, must contain it.
	Audience string
	// Skew is the clock skew tolerated on exp, nbf and iat. Default 60s.
	Skew time.Duration
	// CacheTTL bounds how long a positive answer is reused without asking
	// again; an answer is never reused past the token's exp. Default
	// [DefaultIntrospectionCacheTTL].
	CacheTTL time.Duration
	// Cache bounds how many positive answers are remembered (by the token's
	// SHA-256, never the token), least recently used evicted first. Default
	// [DefaultVerifiedCache]; negative disables the cache. Negative answers
	// are never cached.
	Cache int
	// MaxTokenSize bounds a token's length in bytes; a longer one is refused
	// without being sent. Default 16 KiB.
	MaxTokenSize int
	// Timeout bounds one introspection request. Default 10s.
	Timeout time.Duration
	// HTTPClient posts to the endpoint. Default: a client on
	// http.DefaultTransport that follows no redirect (the token and the
	// credentials go to URL and nowhere else).
	HTTPClient *http.Client
	// Logger receives failed introspections (Warn) and refusals (Debug). It
	// never receives a token or the secret. Default: discard.
	Logger *slog.Logger
	// Now is the clock (tests). Default time.Now.
	Now func() time.Time
}

// An Introspector checks opaque access tokens by asking the authorization
// server's introspection endpoint (RFC 7662), and remembers the answers that
// were positive. It is safe for concurrent use and starts no goroutines.
type Introspector struct {
	url, clientID, secret string
	issuer, audience      string
	skew, ttl, timeout    time.Duration
	maxSize               int
	client                *http.Client
	log                   *slog.Logger
	now                   func() time.Time
	cache                 *verifiedCache // nil when disabled
}

// NewIntrospector returns an Introspector, or an error naming the option
// that is wrong. It does no I/O.
func NewIntrospector(opts *IntrospectorOptions) (*Introspector, error) {
	if opts == nil {
		return nil, errors.New("oauth: introspector options are required (URL, ClientID, ClientSecret, Issuer, Audience)")
	}
	for _, f := range []struct{ name, v string }{{"URL", opts.URL}, {"ClientID", opts.ClientID},
		{"ClientSecret", opts.ClientSecret}, {"Issuer", opts.Issuer}, {"Audience", opts.Audience}} {
		if f.v == "" {
			return nil, fmt.Errorf("oauth: introspector %s is required", f.name)
		}
	}
	if _, err := checkURL(opts.URL); err != nil {
		return nil, fmt.Errorf("oauth: introspector URL: %w", err)
	}
	iss, err := checkURL(opts.Issuer)
	if err != nil {
		return nil, fmt.Errorf("oauth: introspector Issuer: %w", err)
	}
	if iss.RawQuery != "" {
		return nil, fmt.Errorf("oauth: introspector Issuer %q has a query; an issuer identifier has none (RFC 8414)", opts.Issuer)
	}
	for name, d := range map[string]time.Duration{"Skew": opts.Skew, "CacheTTL": opts.CacheTTL, "Timeout": opts.Timeout} {
		if d < 0 {
			return nil, fmt.Errorf("oauth: introspector %s is negative (%v)", name, d)
		}
	}
	if opts.MaxTokenSize < 0 {
		return nil, fmt.Errorf("oauth: introspector MaxTokenSize is negative (%d)", opts.MaxTokenSize)
	}
	in := &Introspector{
		url: opts.URL, clientID: opts.ClientID, secret: opts.ClientSecret,
		issuer: opts.Issuer, audience: opts.Audience,
		skew:    or(opts.Skew, DefaultSkew),
		ttl:     or(opts.CacheTTL, DefaultIntrospectionCacheTTL),
		timeout: or(opts.Timeout, DefaultFetchTimeout),
		maxSize: or(opts.MaxTokenSize, DefaultMaxTokenSize),
		client:  opts.HTTPClient,
		log:     opts.Logger,
		now:     opts.Now,
	}
	switch {
	case opts.Cache == 0:
		in.cache = newVerifiedCache(DefaultVerifiedCache)
	case opts.Cache > 0:
		in.cache = newVerifiedCache(opts.Cache)
	}
	if in.client == nil {
		in.client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if in.log == nil {
		in.log = slog.New(slog.DiscardHandler)
	}
	if in.now == nil {
		in.now = time.Now
	}
	return in, nil
}

// Introspect checks token (the bearer token, without "Bearer ") and returns
// the identity it speaks for. A positive answer remembered from before is
// reused until the token's exp or [IntrospectorOptions.CacheTTL] after it
// was given, whichever is first; otherwise the token is posted to the
// endpoint. Every refusal is an [*Error]; its text never contains the token.
func (in *Introspector) Introspect(ctx context.Context, token string) (Identity, error) {
	id, e := in.introspect(ctx, token)
	if e != nil {
		in.log.Debug("oauth: token refused", "reason", e.Reason.String(), "detail", e.Detail)
		return Identity{}, e
	}
	return id, nil
}

func (in *Introspector) introspect(ctx context.Context, token string) (Identity, *Error) {
	if len(token) > in.maxSize {
		return Identity{}, refuse(ReasonTooLarge, nil, "token is %d bytes, more than %d", len(token), in.maxSize)
	}
	if token == "" {
		return Identity{}, refuse(ReasonMalformed, nil, "token is empty")
	}
	var hash [32]byte
	if in.cache != nil {
		hash = tokenHash(token)
		if ent, ok := in.cache.get(hash); ok {
			now := in.now()
			if now.Before(ent.until) {
				if e := timeRefusal(now, in.skew, ent.id.Expiry, ent.nbf, ent.iat); e != nil {
					in.cache.remove(hash)
					return Identity{}, e
				}
				id := ent.id
				id.Scopes = slices.Clip(slices.Clone(id.Scopes)) // the caller may change its copy
				return id, nil
			}
			in.cache.remove(hash)
		}
	}
	body, e := in.post(ctx, token)
	if e != nil {
		return Identity{}, e
	}
	ans, e := parseIntrospection(body)
	if e != nil {
		return Identity{}, e
	}
	now := in.now()
	if ans.iss != "" && ans.iss != in.issuer {
		return Identity{}, refuse(ReasonIssuer, nil, "iss is not %s", in.issuer)
	}
	if ans.aud != nil && !slices.Contains(ans.aud, in.audience) {
		return Identity{}, refuse(ReasonAudience, nil, "aud does not contain %s", in.audience)
	}
	if e := timeRefusal(now, in.skew, ans.exp, ans.nbf, ans.iat); e != nil {
		return Identity{}, e
	}
	id := Identity{Subject: in.issuer + "#" + ans.sub, Scopes: ans.scopes, Expiry: ans.exp.UTC()}
	if in.cache != nil {
		until := now.Add(in.ttl)
		if ans.exp.Before(until) {
			until = ans.exp
		}
		ent := &verified{hash: hash, id: id, nbf: ans.nbf, iat: ans.iat, until: until}
		ent.id.Scopes = slices.Clone(ans.scopes)
		in.cache.put(ent)
	}
	return id, nil
}

// post sends token to the endpoint and returns the body of a 200 answer.
func (in *Introspector) post(ctx context.Context, token string) ([]byte, *Error) {
	ctx, cancel := context.WithTimeout(ctx, in.timeout)
	defer cancel()
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.url, strings.NewReader(form))
	if err != nil {
		return nil, refuse(ReasonIntrospection, nil, "request to %s cannot be made", in.url)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	// RFC 6749 §2.3.1: both form-urlencoded, then HTTP Basic.
	req.SetBasicAuth(url.QueryEscape(in.clientID), url.QueryEscape(in.secret))
	resp, err := in.client.Do(req)
	if err != nil {
		// A *url.Error names the URL and the cause; the token is in the body,
		// never in it.
		in.log.Warn("oauth: introspection failed", "url", in.url, "err", err)
		return nil, refuse(ReasonIntrospection, unwrapURL(err), "endpoint %s unreachable", in.url)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxIntrospectionResponse+1))
	if err != nil {
		in.log.Warn("oauth: introspection failed", "url", in.url, "err", err)
		return nil, refuse(ReasonIntrospection, nil, "reading the answer of %s failed", in.url)
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		in.log.Warn("oauth: introspection endpoint refused the resource server's credentials", "url", in.url, "status", resp.StatusCode)
		return nil, refuse(ReasonIntrospection, nil, "endpoint %s answered %d: it refused client %s", in.url, resp.StatusCode, short(in.clientID))
	case resp.StatusCode != http.StatusOK:
		in.log.Warn("oauth: introspection failed", "url", in.url, "status", resp.StatusCode)
		return nil, refuse(ReasonIntrospection, nil, "endpoint %s answered %d", in.url, resp.StatusCode)
	case len(body) > MaxIntrospectionResponse:
		in.log.Warn("oauth: introspection answer too large", "url", in.url)
		return nil, refuse(ReasonIntrospection, nil, "answer of %s is larger than %d bytes", in.url, MaxIntrospectionResponse)
	}
	return body, nil
}

// unwrapURL drops the *url.Error wrapper (it repeats the method and URL).
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// introspection is what an active answer says.
type introspection struct {
	sub           string
	iss           string
	aud           []string // nil when absent
	scopes        []string
	exp, nbf, iat time.Time // nbf and iat zero when absent
}

// parseIntrospection reads an RFC 7662 §2.2 answer: a JSON object whose
// active is a boolean. Member names are matched exactly (not in any case, as
// encoding/json would) and a name given twice is refused, so no member can
// be read other than the way the authorization server meant it. An active
// answer must carry exp and sub; iss, aud, scope, nbf and iat are checked
// for their type when present. Other members are ignored.
func parseIntrospection(body []byte) (introspection, *Error) {
	m, e := members(body)
	if e != nil {
		return introspection{}, e
	}
	var active bool
	if raw, ok := m["active"]; !ok || json.Unmarshal(raw, &active) != nil || string(raw) == "null" {
		return introspection{}, refuse(ReasonIntrospection, nil, "answer has no boolean active")
	}
	if !active {
		return introspection{}, refuse(ReasonInactive, nil, "the authorization server says the token is not active")
	}
	var ans introspection
	var e2 *Error
	if ans.sub, e2 = stringMember("sub", m["sub"]); e2 != nil {
		return introspection{}, e2
	}
	if ans.sub == "" {
		return introspection{}, refuse(ReasonMalformed, nil, "active answer has no sub")
	}
	if ans.iss, e2 = stringMember("iss", m["iss"]); e2 != nil {
		return introspection{}, e2
	}
	if ans.aud, e2 = audMember(m["aud"]); e2 != nil {
		return introspection{}, e2
	}
	scope, e2 := stringMember("scope", m["scope"])
	if e2 != nil {
		return introspection{}, e2
	}
	if f := strings.Fields(scope); len(f) > 0 {
		ans.scopes = f
	}
	if ans.exp, e2 = timeMember("exp", m["exp"]); e2 != nil {
		return introspection{}, e2
	}
	if ans.exp.IsZero() {
		return introspection{}, refuse(ReasonMalformed, nil, "active answer has no exp")
	}
	if ans.nbf, e2 = timeMember("nbf", m["nbf"]); e2 != nil {
		return introspection{}, e2
	}
	if ans.iat, e2 = timeMember("iat", m["iat"]); e2 != nil {
		return introspection{}, e2
	}
	return ans, nil
}

// members splits a JSON object into its members by their exact names,
// refusing anything else, trailing data, and a name given twice.
func members(body []byte) (map[string]json.RawMessage, *Error) {
	bad := func(what string) (map[string]json.RawMessage, *Error) {
		return nil, refuse(ReasonIntrospection, nil, "answer is not an RFC 7662 JSON object: %s", what)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return bad("it does not start with {")
	}
	m := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return bad("invalid JSON")
		}
		name, _ := tok.(string)
		if _, dup := m[name]; dup {
			return bad("member " + short(name) + " is given twice")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return bad("invalid JSON")
		}
		m[name] = v
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return bad("invalid JSON")
	}
	if _, err := dec.Token(); err != io.EOF {
		return bad("data after the object")
	}
	return m, nil
}

func stringMember(name string, raw json.RawMessage) (string, *Error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", refuse(ReasonMalformed, nil, "%s is not a string", name)
	}
	return s, nil
}

// audMember reads aud: a string or an array of strings (nil when absent).
func audMember(raw json.RawMessage) ([]string, *Error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, refuse(ReasonMalformed, nil, "aud is not a string")
		}
		return []string{s}, nil
	}
	var a []string
	if json.Unmarshal(raw, &a) != nil {
		return nil, refuse(ReasonMalformed, nil, "aud is neither a string nor an array of strings")
	}
	if a == nil {
		a = []string{}
	}
	return a, nil
}

// timeMember reads a NumericDate (seconds since the epoch; a fraction is
// dropped); zero when absent.
func timeMember(name string, raw json.RawMessage) (time.Time, *Error) {
	if len(raw) == 0 || string(raw) == "null" {
		return time.Time{}, nil
	}
	var f float64
	if json.Unmarshal(raw, &f) != nil || f <= 0 || f > math.MaxInt32*16 || math.IsNaN(f) {
		return time.Time{}, refuse(ReasonMalformed, nil, "%s is not a positive NumericDate", name)
	}
	return time.Unix(int64(f), 0), nil
}
