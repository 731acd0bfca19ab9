package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// ErrNotAdmin refuses VerifyAdmin's token: it is not a verified access
// token of auth.oauth holding the admin scope (or auth.oauth is not
// configured). The wrapped error says which, for the log; it never holds
// the token.
var ErrNotAdmin = errors.New("gateway: not an admin access token")

// VerifyAdmin checks token as an operator's credential for the console: an
// access token of auth.oauth, verified exactly as the MCP endpoint verifies
// one (issuer, audience auth.resource, signature or introspection, expiry),
// that holds scope. A static token of auth.tokens is never an admin token.
// It returns the token's subject as the gateway names OAuth subjects
// (issuer#sub) and the token's expiry. Every refusal wraps ErrNotAdmin.
func (g *Gateway) VerifyAdmin(ctx context.Context, token, scope string) (subject string, expires time.Time, err error) {
	if scope == "" {
		return "", time.Time{}, fmt.Errorf("%w: no admin scope is configured", ErrNotAdmin)
	}
	ti, err := g.auth.VerifyOAuth(ctx, token)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%w: %w", ErrNotAdmin, err)
	}
	if !slices.Contains(ti.Scopes, scope) {
		return "", time.Time{}, fmt.Errorf("%w: the token of %s lacks the scope %q", ErrNotAdmin, ti.UserID, scope)
	}
	return ti.UserID, ti.Expiration, nil
}
