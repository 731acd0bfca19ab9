package upauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
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
	tok, err := ExchangeToken(ctx, hc, s.TokenURL, s.ClientID, s.ClientSecret, callerToken, s.Audience, s.Resource, s.Scopes)
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

// ExchangeToken makes one RFC 8693 token exchange at tokenURL with hc (the
// egress guard's client): the subject token, an access token, for an
// access token with audience and resource, as client (authenticated as
// golang.org/x/oauth2 finds the server accepts: HTTP Basic, then the
// body). The go-sdk's oauthex.ExchangeToken is SEP-990's (ID-JAG, client
// credentials in the body only).
func ExchangeToken(ctx context.Context, hc *http.Client, tokenURL, clientID, clientSecret, subjectToken, audience, resource string, scopes []string) (*oauth2.Token, error) {
	cfg := &oauth2.Config{ClientID: clientID, ClientSecret: clientSecret, Endpoint: oauth2.Endpoint{TokenURL: tokenURL}}
	opts := []oauth2.AuthCodeOption{
		oauth2.SetAuthURLParam("grant_type", "urn:ietf:params:oauth:grant-type:token-exchange"),
		oauth2.SetAuthURLParam("requested_token_type", TokenTypeAccessToken),
		oauth2.SetAuthURLParam("subject_token", subjectToken),
		oauth2.SetAuthURLParam("subject_token_type", TokenTypeAccessToken),
		oauth2.SetAuthURLParam("audience", audience),
		oauth2.SetAuthURLParam("resource", resource),
	}
	if len(scopes) > 0 {
		opts = append(opts, oauth2.SetAuthURLParam("scope", strings.Join(scopes, " ")))
	}
	return cfg.Exchange(context.WithValue(ctx, oauth2.HTTPClient, hc), "", opts...)
}

// gatewayCredentials is the OAuth handler of an exchange server's shared
// session (its catalog, drift, resources): the gateway's own token, by the
// client_credentials grant of the exchange's client at its token endpoint,
// for the server's audience and resource. Nobody's token is exchanged for
// it.
type gatewayCredentials struct {
	src oauth2.TokenSource
}

func (g *gatewayCredentials) TokenSource(context.Context) (oauth2.TokenSource, error) {
	return g.src, nil
}

func (g *gatewayCredentials) Authorize(_ context.Context, _ *http.Request, resp *http.Response) error {
	resp.Body.Close()
	return fmt.Errorf("upauth: the server refused the gateway's own token (%s)", resp.Status)
}

func (m *Manager) exchangeListing(s *Server) func(hc *http.Client) (auth.OAuthHandler, error) {
	return func(hc *http.Client) (auth.OAuthHandler, error) {
		th, err := m.guard.Client(s.TokenURL, nil, nil)
		if err != nil {
			return nil, err
		}
		cc := &clientcredentials.Config{ClientID: s.ClientID, ClientSecret: s.ClientSecret, TokenURL: s.TokenURL, Scopes: s.Scopes,
			EndpointParams: url.Values{"resource": {s.Resource}, "audience": {s.Audience}}}
		return &gatewayCredentials{src: cc.TokenSource(context.WithValue(context.Background(), oauth2.HTTPClient, th))}, nil
	}
}

// bearerKey carries, in a call's context, the exchanged token of that call.
type bearerKey struct{}

// withBearer returns ctx carrying bearer, the token exchanged for the
// caller's own token: the requests of a call made with it (the tools/call
// POST, a resumption of its stream) carry that token, whatever token
// another call of the same subject on the same session was exchanged for.
func withBearer(ctx context.Context, bearer string) context.Context {
	if bearer == "" {
		return ctx
	}
	return context.WithValue(ctx, bearerKey{}, bearer)
}

// exchangedHeader is the dynamic header of an exchange server's
// per-subject session: the Authorization of the call a request belongs to
// (its context, [withBearer]); for a request of no call (the session's
// notifications, a background listing, its closing DELETE), the token the
// subject's last call was exchanged for.
func (ss *subjectSession) exchangedHeader(r *http.Request) http.Header {
	b, _ := r.Context().Value(bearerKey{}).(string)
	if b == "" {
		if p := ss.bearer.Load(); p != nil {
			b = *p
		}
	}
	if b == "" {
		return nil
	}
	return http.Header{"Authorization": {"Bearer " + b}}
}
