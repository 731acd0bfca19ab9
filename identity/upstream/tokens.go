package upstream

import (
	"context"
	"slices"
	"sync"
	"time"

	"golang.org/x/oauth2"
)

// TokenSet is what a [Handler] keeps of one authorization: the tokens and
// what refreshing them needs (the token endpoint and the client it was
// issued to). It holds secrets: a [TokenStore] must keep it as such
// (encrypted at rest, never logged).
type TokenSet struct {
	// AccessToken, TokenType, RefreshToken and Expiry are the token
	// response's (Expiry zero: the server gave no expires_in).
	AccessToken  string
	TokenType    string
	RefreshToken string
	Expiry       time.Time
	// Scopes are the scopes the authorization asked for.
	Scopes []string
	// TokenURL is the token endpoint the tokens came from, and where a
	// refresh goes (through the egress guard, as every request).
	TokenURL string
	// ClientID and ClientSecret are the client the tokens were issued to
	// (ClientSecret empty for a public client).
	ClientID     string
	ClientSecret string
	// AuthStyle is how the client authenticates at TokenURL.
	AuthStyle oauth2.AuthStyle
}

// TokenStore keeps token sets per (server, subject): the seam a token
// vault fills. Implementations must be safe for concurrent use.
type TokenStore interface {
	// Token returns the token set of (server, subject), or nil and no error
	// when there is none.
	Token(ctx context.Context, server, subject string) (*TokenSet, error)
	// PutToken stores t for (server, subject), replacing any.
	PutToken(ctx context.Context, server, subject string, t *TokenSet) error
	// DeleteToken removes the token set of (server, subject); removing
	// none is not an error.
	DeleteToken(ctx context.Context, server, subject string) error
}

// MemoryTokens is a [TokenStore] in this process's memory, for tests and
// for an agent whose tokens need not outlive it. The zero value is ready.
type MemoryTokens struct {
	mu   sync.Mutex
	sets map[[2]string]TokenSet
}

var _ TokenStore = (*MemoryTokens)(nil)

// Token implements [TokenStore]; it returns a copy.
func (m *MemoryTokens) Token(_ context.Context, server, subject string) (*TokenSet, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.sets[[2]string{server, subject}]
	if !ok {
		return nil, nil
	}
	t.Scopes = slices.Clone(t.Scopes)
	return &t, nil
}

// PutToken implements [TokenStore]; it keeps a copy.
func (m *MemoryTokens) PutToken(_ context.Context, server, subject string, t *TokenSet) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sets == nil {
		m.sets = map[[2]string]TokenSet{}
	}
	cp := *t
	cp.Scopes = slices.Clone(t.Scopes)
	m.sets[[2]string{server, subject}] = cp
	return nil
}

// DeleteToken implements [TokenStore].
func (m *MemoryTokens) DeleteToken(_ context.Context, server, subject string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.sets, [2]string{server, subject})
	return nil
}
