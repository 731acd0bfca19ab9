package upstream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/oauth2"
)

// RefreshLocker is an optional interface of a [TokenStore] shared by
// replicas (the gateway's vault): with it, one replica at a time refreshes
// a token set. A Handler whose access token has expired takes the lock,
// re-reads the stored set (another replica may have refreshed it: that one
// is used), and only then refreshes and writes back, before unlocking; a
// Handler that cannot get the lock waits briefly and re-reads. Without it,
// each Handler refreshes on its own (a refresh token that rotates on use
// then breaks all but one).
type RefreshLocker interface {
	// LockRefresh takes the refresh lock of (server, subject): ok false
	// (and no error) when another holder has it. unlock releases it.
	LockRefresh(ctx context.Context, server, subject string) (unlock func(), ok bool, err error)
}

// ErrTokenGone is returned by a shared token source when the stored token
// set disappeared (revoked, or its refresh token refused elsewhere): the
// Handler does not resurrect it with the refresh token it holds.
var ErrTokenGone = errors.New("upstream: the stored token set is gone")

// refreshWait bounds how long a Handler waits for another replica's
// refresh (the vault's lease runs out after 15 seconds by default).
const refreshWait = 20 * time.Second

// sharedSource is the token source of a Handler whose TokenStore is a
// RefreshLocker.
type sharedSource struct {
	h      *Handler
	cfg    *oauth2.Config
	locker RefreshLocker
	save   func(*oauth2.Config, *oauth2.Token) // set by persisting; writes the new token back

	mu  chan struct{} // a one-slot lock that a waiting caller can leave
	tok *oauth2.Token
}

func newSharedSource(h *Handler, cfg *oauth2.Config, locker RefreshLocker, tok *oauth2.Token) *sharedSource {
	return &sharedSource{h: h, cfg: cfg, locker: locker, tok: tok, mu: make(chan struct{}, 1)}
}

// Token implements oauth2.TokenSource.
func (s *sharedSource) Token() (*oauth2.Token, error) {
	ctx, cancel := context.WithTimeout(context.Background(), refreshWait)
	defer cancel()
	select {
	case s.mu <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("upstream: waiting for the refresh of %q: %w", s.h.opts.Server, ctx.Err())
	}
	defer func() { <-s.mu }()
	if s.tok.Valid() {
		return s.tok, nil
	}
	delay := 20 * time.Millisecond
	for {
		// Another replica may have refreshed it already.
		if ok, err := s.reread(ctx); ok || err != nil {
			return s.tok, err
		}
		unlock, ok, err := s.locker.LockRefresh(ctx, s.h.opts.Server, s.h.opts.Subject)
		if err != nil {
			return nil, fmt.Errorf("upstream: the refresh lock of %q: %w", s.h.opts.Server, err)
		}
		if ok {
			return s.refreshLocked(ctx, unlock)
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("upstream: waiting for another replica's refresh of %q: %w", s.h.opts.Server, ctx.Err())
		}
		delay = min(2*delay, 500*time.Millisecond)
	}
}

// reread loads the stored set: true when it holds a valid token (now
// s.tok). A stored set with an expired token replaces s.tok too (its
// refresh token is the latest).
func (s *sharedSource) reread(ctx context.Context) (bool, error) {
	set, err := s.h.opts.Tokens.Token(ctx, s.h.opts.Server, s.h.opts.Subject)
	if err != nil {
		return false, fmt.Errorf("upstream: reading the token of %q: %w", s.h.opts.Server, err)
	}
	if set == nil {
		return false, fmt.Errorf("%w (%q)", ErrTokenGone, s.h.opts.Server)
	}
	s.tok = &oauth2.Token{AccessToken: set.AccessToken, TokenType: set.TokenType, RefreshToken: set.RefreshToken, Expiry: set.Expiry}
	if set.TokenURL != "" {
		// The stored set may come from another authorization (another
		// replica's, another client): refresh it at its own endpoint as
		// its own client.
		s.cfg = &oauth2.Config{ClientID: set.ClientID, ClientSecret: set.ClientSecret, Scopes: set.Scopes,
			Endpoint: oauth2.Endpoint{TokenURL: set.TokenURL, AuthStyle: set.AuthStyle}}
	}
	return s.tok.Valid(), nil
}

// refreshLocked runs under the lock: re-read, refresh if still needed,
// write back, unlock.
func (s *sharedSource) refreshLocked(ctx context.Context, unlock func()) (*oauth2.Token, error) {
	defer unlock()
	if ok, err := s.reread(ctx); ok || err != nil {
		return s.tok, err
	}
	old := *s.tok
	old.Expiry = time.Unix(1, 0) // make the oauth2 source refresh
	tok, err := s.cfg.TokenSource(s.h.refreshContext(), &old).Token()
	if err != nil {
		return nil, err
	}
	s.tok = tok
	if s.save != nil {
		s.save(s.cfg, tok)
	}
	return tok, nil
}
