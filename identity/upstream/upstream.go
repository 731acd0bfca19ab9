package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/gatehouse-dev/gatehouse/internal/egress"
)

// Fetcher sends the user to an authorization URL and returns the
// authorization response the redirect URI received (code, state and iss).
// hc is the egress guard's client the [Handler] uses: a fetcher that makes
// requests itself (as [Walk] does) makes them with it. An agent's fetcher
// opens a browser or prints the URL and waits for its redirect URI.
type Fetcher func(ctx context.Context, hc *http.Client, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error)

// Options configure a [Handler]. Registration is tried in the go-sdk's
// order: a Client ID Metadata Document when the authorization server
// supports them, then the pre-registered client, then dynamic registration;
// at least one must be set.
type Options struct {
	// ClientIDMetadataURL is the client's Client ID Metadata Document (a
	// non-root https URL), used as its client_id where supported.
	ClientIDMetadataURL string
	// Client is a client registered beforehand with the authorization
	// server (set its Issuer to bind it to that server).
	Client *oauthex.ClientCredentials
	// Registration is the metadata of a dynamic client registration
	// (RFC 7591), the last resort. Its RedirectURIs must hold RedirectURL.
	Registration *oauthex.ClientRegistrationMetadata
	// RedirectURL is where the authorization server sends the user back;
	// with Registration and empty, its first redirect URI.
	RedirectURL string
	// Fetch runs the user's part of the authorization-code grant.
	// Required.
	Fetch Fetcher
	// Scopes, when set, adjusts the scopes learned from the challenge or
	// the resource's metadata before they are requested.
	Scopes func(discovered []string) []string
	// NoRefreshToken does not ask for offline_access (by default it is
	// asked for when the authorization server supports it).
	NoRefreshToken bool
	// AcceptUnadvertisedIss accepts an RFC 9207 iss that matches although
	// the server's metadata does not advertise it (the go-sdk's option).
	AcceptUnadvertisedIss bool
	// MaxStepUps bounds the authorizations one challenged scope set may
	// cause on insufficient_scope (default 2), and 8 times that the step-ups
	// of the handler's life: a server that keeps asking is refused with
	// [ErrStepUpLimit] rather than sending its user through the grant again
	// and again.
	MaxStepUps int

	// Tokens, when set, keeps the token set of (Server, Subject): a new
	// Handler starts from it (no authorization while it can be refreshed),
	// and every new or refreshed token is put back.
	Tokens TokenStore
	// Server and Subject name the token set in Tokens.
	Server, Subject string
	// StoreError, when set, is told of a failed Tokens write (the token is
	// used anyway).
	StoreError func(error)
}

// ErrStepUpLimit is returned by [Handler.Authorize] when a server's
// insufficient_scope challenges go past Options.MaxStepUps.
var ErrStepUpLimit = errors.New("upstream: too many step-up authorizations")

// Handler is an [auth.OAuthHandler] for one upstream MCP server: the
// go-sdk's [auth.AuthorizationCodeHandler] (discovery, registration, PKCE,
// resource, scopes, iss) over the egress guard's HTTP client, with bounded
// step-ups, the authorization URL checked, and a [TokenStore]. Set it as
// the OAuthHandler of a StreamableClientTransport (toolset.Server.OAuth
// does). Its methods are safe for concurrent use.
type Handler struct {
	inner *auth.AuthorizationCodeHandler
	opts  Options
	hc    *http.Client

	mu       sync.Mutex
	loaded   bool               // a set read from Tokens (none found is not remembered)
	stored   oauth2.TokenSource // from Tokens, until an authorization replaces it
	stepUps  map[string]int     // by challenged scope set
	stepUpsN int
}

var _ auth.OAuthHandler = (*Handler)(nil)

// New returns a Handler whose every request (metadata, registration, token
// and refresh) goes through hc, which must be the egress guard's client for
// the server (toolset.Server.OAuth hands it over).
func New(hc *http.Client, opts *Options) (*Handler, error) {
	if hc == nil {
		return nil, errors.New("upstream: an HTTP client (the egress guard's) is required")
	}
	if opts == nil || opts.Fetch == nil {
		return nil, errors.New("upstream: Options.Fetch is required")
	}
	if opts.MaxStepUps < 0 {
		return nil, fmt.Errorf("upstream: MaxStepUps %d is negative", opts.MaxStepUps)
	}
	if opts.Tokens != nil && opts.Server == "" {
		return nil, errors.New("upstream: Options.Server is required with Tokens")
	}
	h := &Handler{opts: *opts, hc: hc, stepUps: map[string]int{}}
	if h.opts.MaxStepUps == 0 {
		h.opts.MaxStepUps = 2
	}
	cfg := &auth.AuthorizationCodeHandlerConfig{
		PreregisteredClient:      opts.Client,
		RedirectURL:              opts.RedirectURL,
		AuthorizationCodeFetcher: h.fetch,
		ScopeFilter:              opts.Scopes,
		RequestRefreshToken:      !opts.NoRefreshToken,
		AcceptUnadvertisedIss:    opts.AcceptUnadvertisedIss,
		Client:                   hc,
		NewTokenSource:           h.newTokenSource,
	}
	if opts.ClientIDMetadataURL != "" {
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: opts.ClientIDMetadataURL}
	}
	if opts.Registration != nil {
		md := *opts.Registration
		md.RedirectURIs = slices.Clone(md.RedirectURIs)
		cfg.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{Metadata: &md}
	}
	inner, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return nil, fmt.Errorf("upstream: %w", err)
	}
	h.inner = inner
	return h, nil
}

// Factory returns a function that makes a Handler with opts for the HTTP
// client it is given: the shape of toolset.Server.OAuth.
func Factory(opts *Options) func(hc *http.Client) (auth.OAuthHandler, error) {
	return func(hc *http.Client) (auth.OAuthHandler, error) { return New(hc, opts) }
}

// TokenSource implements [auth.OAuthHandler]: the source of the last
// authorization, else the token set in Options.Tokens (refreshed through
// the egress guard when it has expired), else nil (the request goes
// without a token and its 401 starts the authorization).
func (h *Handler) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	if ts, err := h.inner.TokenSource(ctx); ts != nil || err != nil {
		return ts, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.loaded || h.opts.Tokens == nil {
		return h.stored, nil
	}
	set, err := h.opts.Tokens.Token(ctx, h.opts.Server, h.opts.Subject)
	if err != nil {
		return nil, fmt.Errorf("upstream: reading the token of %q: %w", h.opts.Server, err)
	}
	if set == nil {
		// Not remembered: a set stored later (`gatehouse connect`) is
		// read by the next request.
		return nil, nil
	}
	h.loaded = true
	cfg := &oauth2.Config{ClientID: set.ClientID, ClientSecret: set.ClientSecret, Scopes: set.Scopes,
		Endpoint: oauth2.Endpoint{TokenURL: set.TokenURL, AuthStyle: set.AuthStyle}}
	tok := &oauth2.Token{AccessToken: set.AccessToken, TokenType: set.TokenType, RefreshToken: set.RefreshToken, Expiry: set.Expiry}
	h.stored = h.persisting(cfg, h.source(h.refreshContext(), cfg, tok), set.AccessToken)
	return h.stored, nil
}

// Authorize implements [auth.OAuthHandler]: the go-sdk's authorization,
// after the step-up bound. It closes resp's body.
func (h *Handler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	if resp.StatusCode == http.StatusForbidden {
		if key, ok := insufficientScope(resp.Header.Values("WWW-Authenticate")); ok {
			h.mu.Lock()
			h.stepUps[key]++
			h.stepUpsN++
			over := h.stepUps[key] > h.opts.MaxStepUps || h.stepUpsN > 8*h.opts.MaxStepUps
			h.mu.Unlock()
			if over {
				resp.Body.Close()
				return fmt.Errorf("%w (scope %q)", ErrStepUpLimit, key)
			}
		}
	}
	return h.inner.Authorize(ctx, req, resp)
}

// insufficientScope reports a Bearer insufficient_scope challenge and its
// scopes, sorted and space-separated.
func insufficientScope(headers []string) (string, bool) {
	cs, err := oauthex.ParseWWWAuthenticate(headers)
	if err != nil {
		return "", false
	}
	for _, c := range cs {
		if c.Scheme == "bearer" && c.Params["error"] == "insufficient_scope" {
			sc := strings.Fields(c.Params["scope"])
			slices.Sort(sc)
			return strings.Join(slices.Compact(sc), " "), true
		}
	}
	return "", false
}

// fetch checks the authorization URL and hands it to Options.Fetch.
func (h *Handler) fetch(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	if err := checkAuthorizationURL(args.URL); err != nil {
		return nil, err
	}
	return h.opts.Fetch(ctx, h.hc, args)
}

// checkAuthorizationURL refuses an authorization endpoint on an address
// literal egress would not dial (private, link-local, metadata...): the
// user's browser is sent there, and a fetcher may request it. A loopback
// literal passes (a local authorization server); names are checked when
// dialed (Walk dials through the guard).
func checkAuthorizationURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("upstream: authorization URL: %w", err)
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return fmt.Errorf("upstream: authorization URL %q: scheme %q", u.Redacted(), u.Scheme)
	}
	if a, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err == nil {
		if c := egress.Classify(a.Unmap()); c != egress.Public && c != egress.Loopback {
			return fmt.Errorf("upstream: authorization endpoint %s is a %s address", u.Host, c)
		}
	}
	return nil
}

// refreshContext is the context refreshes run in: not a request's (the
// source outlives it), carrying the guarded client.
func (h *Handler) refreshContext() context.Context {
	return context.WithValue(context.Background(), oauth2.HTTPClient, h.hc)
}

// newTokenSource is the go-sdk's hook after a code exchange: the token set
// is stored, and the source puts back every new token.
func (h *Handler) newTokenSource(ctx context.Context, cfg *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
	p := h.persisting(cfg, h.source(ctx, cfg, tok), "")
	h.mu.Lock()
	h.stored = nil // an authorization replaces what the store had
	h.loaded = true
	h.mu.Unlock()
	p.save(tok)
	return p, nil
}

// source is the refreshing token source of tok: one shared with the other
// replicas through the store's refresh lock when Options.Tokens is a
// [RefreshLocker], else oauth2's own.
func (h *Handler) source(ctx context.Context, cfg *oauth2.Config, tok *oauth2.Token) oauth2.TokenSource {
	if l, ok := h.opts.Tokens.(RefreshLocker); ok {
		return newSharedSource(h, cfg, l, tok)
	}
	return cfg.TokenSource(ctx, tok)
}

func (h *Handler) persisting(cfg *oauth2.Config, src oauth2.TokenSource, last string) *persisting {
	p := &persisting{h: h, src: src, last: last, meta: TokenSet{Scopes: slices.Clone(cfg.Scopes),
		TokenURL: cfg.Endpoint.TokenURL, ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, AuthStyle: cfg.Endpoint.AuthStyle}}
	if s, ok := src.(*sharedSource); ok {
		s.save = p.saveAs // written back before the lock is released
	}
	return p
}

// persisting is a token source that puts every new token in
// Options.Tokens, and deletes the set when its refresh token is refused.
type persisting struct {
	h    *Handler
	src  oauth2.TokenSource
	meta TokenSet

	mu   sync.Mutex
	last string // the access token last stored
}

// Token implements oauth2.TokenSource.
func (p *persisting) Token() (*oauth2.Token, error) {
	tok, err := p.src.Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.ErrorCode == "invalid_grant" && p.h.opts.Tokens != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if derr := p.h.opts.Tokens.DeleteToken(ctx, p.h.opts.Server, p.h.opts.Subject); derr != nil && p.h.opts.StoreError != nil {
				p.h.opts.StoreError(derr)
			}
		}
		return nil, err
	}
	if _, shared := p.src.(*sharedSource); !shared {
		// A shared source wrote it back under the lock, or read it from
		// the store. Here: a new token over one that was stored, whose row
		// is gone since, was revoked; it is not brought back (nor used).
		if p.revoked(tok) {
			return nil, fmt.Errorf("%w (%q)", ErrTokenGone, p.h.opts.Server)
		}
		p.save(tok)
	}
	return tok, nil
}

// revoked reports whether tok replaces a stored token set that has been
// deleted since (a revoke): only then is the store read.
func (p *persisting) revoked(tok *oauth2.Token) bool {
	p.mu.Lock()
	last := p.last
	p.mu.Unlock()
	if p.h.opts.Tokens == nil || last == "" || tok.AccessToken == last {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	set, err := p.h.opts.Tokens.Token(ctx, p.h.opts.Server, p.h.opts.Subject)
	return err == nil && set == nil
}

func (p *persisting) save(tok *oauth2.Token) { p.saveAs(nil, tok) }

// saveAs stores tok with the client and endpoint of cfg (nil: those the
// source started with).
func (p *persisting) saveAs(cfg *oauth2.Config, tok *oauth2.Token) {
	if p.h.opts.Tokens == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if tok.AccessToken == p.last {
		return
	}
	set := p.meta
	if cfg != nil {
		set = TokenSet{Scopes: cfg.Scopes, TokenURL: cfg.Endpoint.TokenURL, ClientID: cfg.ClientID,
			ClientSecret: cfg.ClientSecret, AuthStyle: cfg.Endpoint.AuthStyle}
	}
	set.Scopes = slices.Clone(set.Scopes)
	set.AccessToken, set.TokenType, set.RefreshToken, set.Expiry = tok.AccessToken, tok.TokenType, tok.RefreshToken, tok.Expiry
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.h.opts.Tokens.PutToken(ctx, p.h.opts.Server, p.h.opts.Subject, &set); err != nil {
		if p.h.opts.StoreError != nil {
			p.h.opts.StoreError(fmt.Errorf("upstream: storing the token of %q: %w", p.h.opts.Server, err))
		}
		return
	}
	p.last = tok.AccessToken
}
