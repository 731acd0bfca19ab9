package bearer

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/config"
	"github.com/gatehouse-dev/gatehouse/gateway/internal/scopes"
	"github.com/gatehouse-dev/gatehouse/internal/identity/oauth"
)

// Authenticator checks bearer tokens: static ones against their
// configured SHA-256 (each subject's tool scopes known from the config),
// and, with auth.oauth, access tokens through identity/oauth: JWTs by their
// signature, opaque tokens by introspection when it is configured (their
// tool scopes carried by the request's TokenInfo).
type Authenticator struct {
	// on is false without auth: every tool is in scope.
	on     bool
	tokens []tokenEntry
	// scopes maps a static subject to what its scopes let it see.
	scopes map[string]*scopes.Set
	all    *scopes.Set // sees everything
	// oauth verifies access tokens (nil without auth.oauth).
	oauth *oauthAuth
}

type tokenEntry struct {
	sum     [sha256.Size]byte
	subject string
	scopes  []string
}

// NewAuthenticator returns the checks of a (nil: no auth, every caller
// sees every tool). now is identity/oauth's clock.
func NewAuthenticator(a *config.Auth, log *slog.Logger, now func() time.Time) (*Authenticator, error) {
	au := &Authenticator{scopes: map[string]*scopes.Set{}, all: scopes.All()}
	if a == nil {
		return au, nil
	}
	au.on = true
	for _, t := range a.Tokens {
		var e tokenEntry
		b, _ := hex.DecodeString(t.SHA256) // validated by the config
		copy(e.sum[:], b)
		e.subject, e.scopes = t.Subject, t.Scopes
		au.tokens = append(au.tokens, e)
		if t.Scopes == nil {
			au.scopes[t.Subject] = au.all
			continue
		}
		au.scopes[t.Subject] = scopes.Parse(t.Scopes, false)
	}
	if a.OAuth != nil {
		o, err := newOAuthAuth(a, log, now)
		if err != nil {
			return nil, err
		}
		au.oauth = o
		// Static tokens are exempt from requiredScopes (they are the
		// operator's own): their TokenInfo carries them.
		for i := range au.tokens {
			au.tokens[i].scopes = append(slices.Clip(au.tokens[i].scopes), o.required...)
		}
	}
	return au, nil
}

// farFuture is the expiry of a static token (they do not expire; the
// go-sdk's middleware requires one).
var farFuture = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// Verify is the auth.TokenVerifier of the MCP endpoint: the token's SHA-256
// is compared with every configured hash in constant time (no early exit,
// so timing tells nothing about which, or whether, one matched); a token
// that is none of them goes to auth.oauth when it is configured.
func (au *Authenticator) Verify(ctx context.Context, token string, r *http.Request) (*auth.TokenInfo, error) {
	sum := sha256.Sum256([]byte(token))
	match := -1
	for i := range au.tokens {
		if subtle.ConstantTimeCompare(sum[:], au.tokens[i].sum[:]) == 1 {
			match = i
		}
	}
	if match < 0 {
		if au.oauth != nil {
			return au.oauth.verify(ctx, token, r)
		}
		return nil, auth.ErrInvalidToken
	}
	t := au.tokens[match]
	return &auth.TokenInfo{UserID: t.subject, Scopes: append([]string(nil), t.scopes...), Expiration: farFuture}, nil
}

// Allows reports whether the caller of a request may see tool by its
// scopes: an OAuth token's own (carried by its TokenInfo, so two tokens of one
// subject see what each allows), else the static subject's. Without auth
// every tool is in scope.
func (au *Authenticator) Allows(subject string, ti *auth.TokenInfo, tool string) bool {
	return au.ScopesOf(subject, ti).Tool(tool)
}

// AllowsSkill reports whether the caller of a request may see the served
// skill whose prompt is projected as name, by the same scopes as Allows
// ("skill:NAME", "skill:*").
func (au *Authenticator) AllowsSkill(subject string, ti *auth.TokenInfo, name string) bool {
	return au.ScopesOf(subject, ti).Skill(name)
}

// ScopesOf returns what the caller of a request may see (nil: nothing),
// given the request's verified token.
func (au *Authenticator) ScopesOf(subject string, ti *auth.TokenInfo) *scopes.Set {
	if !au.on {
		return au.all
	}
	if ti != nil && ti.Extra != nil {
		if ss, ok := ti.Extra[ScopesKey].(*scopes.Set); ok {
			return ss
		}
	}
	return au.scopes[subject]
}

// ScopesKey keys what an OAuth token's scopes let it see (a *scopes.Set,
// where a kind with no scope at all means every name of that kind) in its
// auth.TokenInfo.Extra.
const ScopesKey = "gatehouse.scopes"

// oauthAuth verifies the access tokens of auth.oauth and writes the
// challenges of a refused one.
type oauthAuth struct {
	v *oauth.Verifier
	// in checks the tokens that are not JWSs (nil without
	// auth.oauth.introspection: they are refused).
	in       *oauth.Introspector
	required []string
	log      *slog.Logger
	// insufficient is the WWW-Authenticate of a 403 (a verified token
	// missing a required scope).
	insufficient string
}

func newOAuthAuth(a *config.Auth, log *slog.Logger, now func() time.Time) (*oauthAuth, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	v, err := oauth.New(&oauth.Options{
		Issuer:       a.OAuth.Issuer,
		JWKSURL:      a.OAuth.JWKSURL,
		Audience:     a.Resource,
		SubjectClaim: a.OAuth.SubjectClaim,
		ScopesClaim:  a.OAuth.ScopesClaim,
		Logger:       log,
		Now:          now,
	})
	if err != nil {
		return nil, err
	}
	o := &oauthAuth{v: v, required: slices.Clip(a.OAuth.RequiredScopes), log: log}
	if c := a.OAuth.Introspection; c != nil {
		secret := os.Getenv(c.ClientSecretEnv)
		if secret == "" {
			return nil, fmt.Errorf("gateway: auth.oauth.introspection.clientSecretEnv names %s, which is unset or empty: set it to the gateway's client secret at the authorization server", c.ClientSecretEnv)
		}
		in, err := oauth.NewIntrospector(&oauth.IntrospectorOptions{
			URL:          c.URL,
			ClientID:     c.ClientID,
			ClientSecret: secret,
			Issuer:       a.OAuth.Issuer,
			Audience:     a.Resource,
			Logger:       log,
			Now:          now,
		})
		if err != nil {
			return nil, err
		}
		o.in = in
	}
	o.insufficient = fmt.Sprintf(`Bearer error="insufficient_scope", scope="%s", resource_metadata="%s"`,
		strings.Join(o.required, " "), MetadataURL(a.Resource))
	return o, nil
}

// ErrIssuerUnavailable refuses a token that could not be checked because
// the issuer's keys, or its introspection endpoint, could not be had: 503,
// not 401 (the token may be fine).
var ErrIssuerUnavailable = errors.New("the authorization server is unavailable; retry later")

// verify checks an access token. A refused token is auth.ErrInvalidToken
// (401), or ErrIssuerUnavailable (503) when the issuer is at fault; its
// reason is logged at Debug, never the token. A verified token missing a
// required scope is marked for the 403 challenge (the go-sdk's middleware
// refuses it with the same Scopes).
func (o *oauthAuth) verify(ctx context.Context, token string, r *http.Request) (*auth.TokenInfo, error) {
	var id oauth.Identity
	var err error
	switch {
	case LooksLikeJWS(token):
		id, err = o.v.Verify(ctx, token)
	case o.in != nil:
		id, err = o.in.Introspect(ctx, token)
	default:
		o.log.Debug("bearer: access token refused: not a JWT, and auth.oauth.introspection is not configured")
		return nil, fmt.Errorf("%w: %s", auth.ErrInvalidToken, oauth.ReasonMalformed)
	}
	if err != nil {
		var oe *oauth.Error
		if errors.As(err, &oe) && (oe.Reason == oauth.ReasonIssuerUnavailable || oe.Reason == oauth.ReasonMetadata ||
			oe.Reason == oauth.ReasonIntrospection) {
			o.log.Warn("bearer: an access token could not be checked", "err", err)
			Mark(r, func(s *State) { s.Unavailable = true })
			return nil, ErrIssuerUnavailable
		}
		o.log.Debug("bearer: access token refused", "err", err)
		return nil, fmt.Errorf("%w: %s", auth.ErrInvalidToken, reasonOf(oe))
	}
	for _, s := range o.required {
		if !slices.Contains(id.Scopes, s) {
			o.log.Debug("bearer: access token lacks a required scope", "subject", id.Subject, "scope", s)
			Mark(r, func(s *State) { s.Insufficient = true })
			break
		}
	}
	// The token itself: auth: exchange exchanges it (RawTokenKey).
	return &auth.TokenInfo{UserID: id.Subject, Scopes: id.Scopes, Expiration: id.Expiry,
		Extra: map[string]any{ScopesKey: scopes.Parse(id.Scopes, true), RawTokenKey: token}}, nil
}

func reasonOf(e *oauth.Error) string {
	if e == nil {
		return "refused"
	}
	return e.Reason.String()
}

// RawTokenKey keys, in an OAuth token's TokenInfo.Extra, the token itself:
// what auth: exchange exchanges (never forwarded, never logged).
const RawTokenKey = "gatehouse.token"

// OAuth reports whether access tokens are checked (auth.oauth).
func (au *Authenticator) OAuth() bool { return au.oauth != nil }

// RequiredScopes are auth.oauth.requiredScopes (nil without auth.oauth):
// every token must hold them (a static one holds them by construction).
func (au *Authenticator) RequiredScopes() []string {
	if au.oauth == nil {
		return nil
	}
	return au.oauth.required
}

// Insufficient is the WWW-Authenticate of a 403 (a verified token missing
// a required scope), for Challenges; "" without auth.oauth.
func (au *Authenticator) Insufficient() string {
	if au.oauth == nil {
		return ""
	}
	return au.oauth.insufficient
}

// ErrNotOAuth refuses VerifyOAuth's token when auth.oauth is not
// configured.
var ErrNotOAuth = errors.New("auth.oauth is not configured: no access token can be verified")

// VerifyOAuth checks token as an access token of auth.oauth only, exactly
// as the MCP endpoint does (issuer, audience auth.resource, signature or
// introspection, expiry): a static token of auth.tokens is not one, and is
// refused like any other unverifiable string. It does not apply
// requiredScopes; the caller checks the scopes it needs. A refusal is
// auth.ErrInvalidToken, ErrIssuerUnavailable, or ErrNotOAuth.
func (au *Authenticator) VerifyOAuth(ctx context.Context, token string) (*auth.TokenInfo, error) {
	if au.oauth == nil {
		return nil, ErrNotOAuth
	}
	return au.oauth.verify(ctx, token, nil)
}
