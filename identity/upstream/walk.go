package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// maxWalkHops bounds the redirects Walk follows.
const maxWalkHops = 10

// Walk returns a [Fetcher] that plays the browser without one: it GETs the
// authorization URL with hc (the egress guard's client: every hop is
// checked), follows redirects (at most 10, each also checked by hc's own
// redirect rules), and stops at the first one to redirect, whose origin
// and path are redirect's: the code, state and iss are read from its
// query. It is for authorization servers that approve without a user (the
// tests' local server, the conformance suite's); an error the server
// redirects with (error=...) is returned as such.
func Walk(redirect string) Fetcher {
	return func(ctx context.Context, hc *http.Client, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		want, err := url.Parse(redirect)
		if err != nil {
			return nil, fmt.Errorf("upstream: redirect URL: %w", err)
		}
		c := *hc
		inner := hc.CheckRedirect
		c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
			if sameEndpoint(req.URL, want) {
				return http.ErrUseLastResponse
			}
			if len(via) >= maxWalkHops {
				return fmt.Errorf("upstream: more than %d redirects", maxWalkHops)
			}
			if inner != nil {
				return inner(req, via)
			}
			return nil
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, args.URL, nil)
		if err != nil {
			return nil, fmt.Errorf("upstream: authorization URL: %w", err)
		}
		resp, err := c.Do(req)
		if err != nil {
			return nil, fmt.Errorf("upstream: authorization: %w", err)
		}
		resp.Body.Close()
		loc, err := resp.Location()
		if err != nil {
			return nil, fmt.Errorf("upstream: authorization ended with %s, not a redirect to %s", resp.Status, redirect)
		}
		if !sameEndpoint(loc, want) {
			return nil, fmt.Errorf("upstream: authorization redirected to %s, not to %s", loc.Redacted(), redirect)
		}
		q := loc.Query()
		if e := q.Get("error"); e != "" {
			return nil, &AuthorizationError{Code: e, Description: q.Get("error_description")}
		}
		if q.Get("code") == "" {
			return nil, errors.New("upstream: the authorization response has no code")
		}
		return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
	}
}

// AuthorizationError is an error an authorization server redirected with
// (RFC 6749 section 4.1.2.1).
type AuthorizationError struct {
	// Code is the error parameter (access_denied, invalid_scope, ...).
	Code string
	// Description is error_description, as the server wrote it.
	Description string
}

func (e *AuthorizationError) Error() string {
	if e.Description == "" {
		return "upstream: authorization refused: " + e.Code
	}
	return fmt.Sprintf("upstream: authorization refused: %s (%q)", e.Code, e.Description)
}

func sameEndpoint(a, b *url.URL) bool {
	return a.Scheme == b.Scheme && a.Host == b.Host && a.Path == b.Path
}
