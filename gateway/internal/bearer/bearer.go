// Package bearer is the gateway's bearer-token checks and the HTTP side of
// the gateway as an OAuth 2.1 resource server. An [Authenticator] checks a
// token: static ones against their configured SHA-256 in constant time,
// OAuth access tokens through identity/oauth (JWTs by their signature,
// opaque tokens by introspection); it knows what each caller's scopes let
// it see. Below it: the challenges a verifier cannot give through the
// go-sdk's bearer middleware (403 with error="insufficient_scope", 503 when
// the issuer is down), the URL and the mux paths of the Protected Resource
// Metadata (RFC 9728), and the shape test that sends a token to the JWT
// verifier or to introspection.
//
//	au, err := bearer.NewAuthenticator(cfg.Auth, log, time.Now)
//	ho.Verifier = au.Verify                       // the go-sdk's bearer middleware
//	h = bearer.Challenges(h, au.Insufficient())   // around the MCP endpoint
//	visible := au.Allows(subject, info.TokenInfo, "github__create_issue")
package bearer

import (
	"context"
	"net/http"
	"net/url"
	"strings"
)

// WellKnownProtectedResource is the path of the Protected Resource
// Metadata (RFC 9728 §3).
const WellKnownProtectedResource = "/.well-known/oauth-protected-resource"

// State is what the verifier found about one request that the status
// alone does not say.
type State struct {
	// Insufficient: the token lacks a required scope (a 403 gets
	// WWW-Authenticate with error="insufficient_scope").
	Insufficient bool
	// Unavailable: the token could not be checked because the issuer is
	// down (the 500 becomes a 503 with Retry-After).
	Unavailable bool
}

type stateKey struct{}

// Mark records f's finding on the request's State, when the request went
// through Challenges (otherwise it does nothing).
func Mark(r *http.Request, f func(*State)) {
	if r == nil {
		return
	}
	if s, ok := r.Context().Value(stateKey{}).(*State); ok {
		f(s)
	}
}

// Challenges wraps the MCP endpoint: a 403 for a missing required scope
// carries insufficient as its WWW-Authenticate (RFC 6750 §3.1), and a
// token that could not be checked because the issuer is down gets 503.
func Challenges(h http.Handler, insufficient string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := &State{}
		r = r.WithContext(context.WithValue(r.Context(), stateKey{}, st))
		h.ServeHTTP(&writer{ResponseWriter: w, st: st, insufficient: insufficient}, r)
	})
}

type writer struct {
	http.ResponseWriter
	st           *State
	insufficient string
}

func (w *writer) WriteHeader(code int) {
	switch {
	case code == http.StatusForbidden && w.st.Insufficient:
		w.Header().Set("WWW-Authenticate", w.insufficient)
	case code == http.StatusInternalServerError && w.st.Unavailable:
		code = http.StatusServiceUnavailable
		w.Header().Set("Retry-After", "10")
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the real writer (flushing SSE).
func (w *writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush flushes the underlying writer, if it can.
func (w *writer) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// MetadataURL is the URL of the Protected Resource Metadata of resource
// (RFC 9728 §3.1): the well-known path inserted between its host and its
// path ("" when resource is not a URL).
func MetadataURL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host + WellKnownProtectedResource + strings.TrimSuffix(u.EscapedPath(), "/")
}

// MetadataPaths are the mux paths that serve resource's metadata: the
// well-known path, it followed by /mcp, and the path MetadataURL names
// when a ServeMux can take it as it is.
func MetadataPaths(resource string) []string {
	paths := []string{WellKnownProtectedResource, WellKnownProtectedResource + "/mcp"}
	if u, err := url.Parse(MetadataURL(resource)); err == nil && plainPath(u.Path) {
		for _, p := range paths {
			if p == u.Path {
				return paths
			}
		}
		paths = append(paths, u.Path)
	}
	return paths
}

// plainPath reports whether p can be a ServeMux pattern as it is (no
// wildcard braces, no space, no percent-encoding).
func plainPath(p string) bool {
	for i := 0; i < len(p); i++ {
		c := p[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("/._~-", c) >= 0) {
			return false
		}
	}
	return strings.HasPrefix(p, "/")
}

// LooksLikeJWS reports whether token has the shape of a compact JWS: three
// non-empty base64url parts. Such a token goes to the JWT verifier; any
// other to introspection (an opaque token, or a JWE, which only the
// authorization server can read).
func LooksLikeJWS(token string) bool {
	if strings.Count(token, ".") != 2 {
		return false
	}
	n := 0
	for i := 0; i < len(token); i++ {
		c := token[i]
		if c == '.' {
			if n == 0 {
				return false
			}
			n = 0
			continue
		}
		if c >= 128 || b64urlMask[c>>6]>>(c&63)&1 == 0 {
			return false
		}
		n++
	}
	return n > 0
}

// b64urlMask has bit c set for each byte c of the base64url alphabet
// (A-Z a-z 0-9 - _), in two 64-bit words.
var b64urlMask = [2]uint64{
	0x03ff_2000_0000_0000, // '-' (45), '0'-'9' (48-57)
	0x07ff_fffe_87ff_fffe, // 'A'-'Z' (65-90), '_' (95), 'a'-'z' (97-122)
}
