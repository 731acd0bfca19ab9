package upauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// TokenTypeAccessToken is RFC 8693's identifier of an OAuth access token:
// what the gateway exchanges and asks for.
const TokenTypeAccessToken = "urn:ietf:params:oauth:token-type:access_token"

// maxExchanged bounds the exchanged tokens kept in memory.
const maxExchanged = 10000

// exchangeKey names an exchanged token: the caller's token by its hash.
type exchangeKey struct{ server, subject, caller string }

type exchanged struct {
	access string
	expiry time.Time
}

// ErrNoCallerToken is returned for a call to an exchange server from a
// caller without a bearer token (a static token or no auth cannot be
// exchanged: the token endpoint would not know it).
var ErrNoCallerToken = errors.New("upauth: the caller has no token to exchange")

// exchange returns an access token for s exchanged (RFC 8693) for the
// caller's token, from the cache until a minute before its expiry. The
// caller's token itself never goes to s.
func (m *Manager) exchange(ctx context.Context, s *Server, subject, callerToken string) (string, error) {
	if callerToken == "" {
		return "", fmt.Errorf("%w (server %s has auth: exchange)", ErrNoCallerToken, s.Name)
	}
	sum := sha256.Sum256([]byte(callerToken))
	k := exchangeKey{s.Name, subject, hex.EncodeToString(sum[:])}
	now := m.now()
	m.mu.Lock()
	if e, ok := m.exch[k]; ok && (e.expiry.IsZero() || now.Add(time.Minute).Before(e.expiry)) {
		m.mu.Unlock()
		return e.access, nil
	}
	m.mu.Unlock()
	hc, err := m.guard.Client(s.TokenURL, nil, nil)
	if err != nil {
		return "", fmt.Errorf("upauth: token endpoint of %s: %w", s.Name, err)
	}
	tok, err := oauthex.ExchangeToken(ctx, s.TokenURL, &oauthex.TokenExchangeRequest{
		RequestedTokenType: TokenTypeAccessToken,
		Audience:           s.Audience,
		Resource:           s.Resource,
		Scope:              s.Scopes,
		SubjectToken:       callerToken,
		SubjectTokenType:   TokenTypeAccessToken,
	}, clientCredentials(s.ClientID, s.ClientSecret), hc)
	if err != nil {
		return "", fmt.Errorf("upauth: exchanging the caller's token for %s: %w", s.Name, err)
	}
	if tok.AccessToken == "" || tok.AccessToken == callerToken {
		return "", fmt.Errorf("upauth: the token endpoint of %s answered no new token", s.Name)
	}
	m.mu.Lock()
	if len(m.exch) >= maxExchanged {
		for ek, e := range m.exch {
			if !e.expiry.IsZero() && !now.Before(e.expiry) {
				delete(m.exch, ek)
			}
		}
		if len(m.exch) >= maxExchanged {
			clear(m.exch)
		}
	}
	m.exch[k] = exchanged{access: tok.AccessToken, expiry: tok.Expiry}
	m.mu.Unlock()
	return tok.AccessToken, nil
}
