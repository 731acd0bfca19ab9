package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/bearer"
	"github.com/gatehouse-dev/gatehouse/gateway/internal/scopes"
	"github.com/gatehouse-dev/gatehouse/identity/oauth"
)

// The gateway as an OAuth 2.1 resource server (auth.resource, auth.oauth):
// access tokens verified by identity/oauth, challenges per RFC 6750 §3 and
// RFC 9728 §5.1, and the Protected Resource Metadata (RFC 9728).

// WellKnownProtectedResource is the path of the Protected Resource
// Metadata (RFC 9728 §3); the metadata of the MCP endpoint is also served
// at this path followed by the endpoint's path (/mcp).
const WellKnownProtectedResource = bearer.WellKnownProtectedResource

// scopesKey keys what an OAuth token's scopes let it see (a *scopes.Set,
// where a kind with no scope at all means every name of that kind) in its
// auth.TokenInfo.Extra.
const scopesKey = "gatehouse.scopes"

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

func newOAuthAuth(a *Auth, log *slog.Logger, now func() time.Time) (*oauthAuth, error) {
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
		strings.Join(o.required, " "), bearer.MetadataURL(a.Resource))
	return o, nil
}

// errIssuerUnavailable refuses a token that could not be checked because
// the issuer's keys, or its introspection endpoint, could not be had: 503,
// not 401 (the token may be fine).
var errIssuerUnavailable = errors.New("the authorization server is unavailable; retry later")

// verify checks an access token. A refused token is auth.ErrInvalidToken
// (401), or errIssuerUnavailable (503) when the issuer is at fault; its
// reason is logged at Debug, never the token. A verified token missing a
// required scope is marked for the 403 challenge (the go-sdk's middleware
// refuses it with the same Scopes).
func (o *oauthAuth) verify(ctx context.Context, token string, r *http.Request) (*auth.TokenInfo, error) {
	var id oauth.Identity
	var err error
	switch {
	case bearer.LooksLikeJWS(token):
		id, err = o.v.Verify(ctx, token)
	case o.in != nil:
		id, err = o.in.Introspect(ctx, token)
	default:
		o.log.Debug("gateway: access token refused: not a JWT, and auth.oauth.introspection is not configured")
		return nil, fmt.Errorf("%w: %s", auth.ErrInvalidToken, oauth.ReasonMalformed)
	}
	if err != nil {
		var oe *oauth.Error
		if errors.As(err, &oe) && (oe.Reason == oauth.ReasonIssuerUnavailable || oe.Reason == oauth.ReasonMetadata ||
			oe.Reason == oauth.ReasonIntrospection) {
			o.log.Warn("gateway: an access token could not be checked", "err", err)
			bearer.Mark(r, func(s *bearer.State) { s.Unavailable = true })
			return nil, errIssuerUnavailable
		}
		o.log.Debug("gateway: access token refused", "err", err)
		return nil, fmt.Errorf("%w: %s", auth.ErrInvalidToken, reasonOf(oe))
	}
	for _, s := range o.required {
		if !slices.Contains(id.Scopes, s) {
			o.log.Debug("gateway: access token lacks a required scope", "subject", id.Subject, "scope", s)
			bearer.Mark(r, func(s *bearer.State) { s.Insufficient = true })
			break
		}
	}
	// The token itself: auth: exchange exchanges it (upauth.go).
	return &auth.TokenInfo{UserID: id.Subject, Scopes: id.Scopes, Expiration: id.Expiry,
		Extra: map[string]any{scopesKey: scopes.Parse(id.Scopes, true), rawTokenKey: token}}, nil
}

func reasonOf(e *oauth.Error) string {
	if e == nil {
		return "refused"
	}
	return e.Reason.String()
}

// serveResourceMetadata serves the Protected Resource Metadata of
// auth.resource on mux, without a token, at the well-known path, at it
// followed by /mcp, and at the path metadataURL names.
func (g *Gateway) serveResourceMetadata(mux *http.ServeMux) {
	a := g.cfg.Auth
	if a == nil || a.Resource == "" {
		return
	}
	md := &oauthex.ProtectedResourceMetadata{
		Resource:               a.Resource,
		BearerMethodsSupported: []string{"header"},
	}
	if a.OAuth != nil {
		md.AuthorizationServers = []string{a.OAuth.Issuer}
		md.ScopesSupported = append(slices.Clip(a.OAuth.RequiredScopes), "tool:*", "skill:*")
	}
	h := auth.ProtectedResourceMetadataHandler(md)
	for _, p := range bearer.MetadataPaths(a.Resource) {
		mux.Handle(p, h)
	}
}
