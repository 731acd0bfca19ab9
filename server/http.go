package server

import (
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/store"
)

// defaultMaxBodyBytes bounds a request body when HTTPOptions.MaxBodyBytes
// is zero.
const defaultMaxBodyBytes = 4 << 20

// DefaultIdleTimeout closes a stateful session that has received no request
// for this long, when HTTPOptions.IdleTimeout is zero.
const DefaultIdleTimeout = 10 * time.Minute

// HTTPOptions configure [Server.Handler].
type HTTPOptions struct {
	// Stateless serves without sessions (the 2026-07-28 revision; each
	// request stands alone, server-to-client requests are refused).
	// Otherwise the handler keeps sessions (2025-11-25 and earlier) and
	// closes idle ones.
	Stateless bool
	// IdleTimeout closes a stateful session after this long without a
	// request. Zero means DefaultIdleTimeout; negative means never.
	IdleTimeout time.Duration
	// Verifier checks each request's bearer token (auth.RequireBearerToken);
	// its TokenInfo reaches Options.Identify. A request without a valid
	// token gets 401 with WWW-Authenticate. Nil serves without
	// authentication (logged as a warning).
	Verifier auth.TokenVerifier
	// Bearer are options of auth.RequireBearerToken (resource metadata URL,
	// required scopes, expiry handling). Nil means defaults.
	Bearer *auth.RequireBearerTokenOptions
	// MaxBodyBytes bounds a request body; a larger one gets 413. Zero means
	// 4 MiB.
	MaxBodyBytes int64
	// JSONResponse answers with application/json rather than an SSE
	// stream where the protocol allows it.
	JSONResponse bool
	// AllowedHosts, when not empty, is the exact, case-insensitive list of
	// Host header names (port ignored) the handler answers; any other gets
	// 403. Requests arriving on a loopback address are always refused a
	// non-loopback Host (the go-sdk's DNS-rebinding protection).
	AllowedHosts []string
	// TrustedOrigins are origins ("https://app.example.com") whose browser
	// requests are accepted cross-origin. Other cross-origin browser
	// requests get 403 (http.CrossOriginProtection).
	TrustedOrigins []string
	// Sessions, when set, keeps each stateful session in a store that the
	// replicas of one deployment share, so that any replica serves any
	// session, and a session outlives the process that opened it: a
	// request for a session this process does not hold rebuilds it from
	// its row (the caller's user, initialize parameters, revision, log
	// level and subscriptions; never a token). A request with another
	// user's token is refused (403) on every replica; a DELETE ends the
	// session on every replica (on the others by their first request after
	// 5 seconds). The replica serving the caller's standalone stream (its
	// GET) holds the session's subscriptions and sends what the stream
	// carries; with a store that is a [store.Messenger], other replicas
	// pass it what only they produce (a log message outside a request).
	// Sessions this process rebuilt answer with event streams even with
	// JSONResponse. Ignored when Stateless.
	Sessions store.SessionStore
	// Inner, when set, wraps the go-sdk's handler inside every check above
	// (Host, cross-origin, body bound, bearer token): a request it passes
	// to next reaches the go-sdk unchanged. The gateway serves its raw
	// tools/call path here.
	Inner func(next http.Handler) http.Handler
}

// Handler returns the streamable HTTP handler of the MCP endpoint. From the
// outside in: Host check, cross-origin check, body bound, bearer token,
// then the go-sdk's handler (with its own localhost DNS-rebinding
// protection).
func (s *Server) Handler(opts *HTTPOptions) (http.Handler, error) {
	var o HTTPOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = defaultMaxBodyBytes
	}
	idle := o.IdleTimeout
	switch {
	case o.Stateless:
		idle = 0
	case idle == 0:
		idle = DefaultIdleTimeout
	case idle < 0:
		idle = 0
	}
	var sdk http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.remote }, &mcp.StreamableHTTPOptions{
		Stateless:           o.Stateless,
		JSONResponse:        o.JSONResponse,
		SessionTimeout:      idle,
		MaxRequestBodyBytes: o.MaxBodyBytes,
		Logger:              s.opts.Logger,
		// A 2026-07-28 request lives as long as its POST: a caller that
		// goes away cancels the handler (and whatever it called).
		PropagateRequestCancellation: true,
	})
	var shared *sharedSessions
	if o.Sessions != nil && !o.Stateless {
		clock := s.opts.Clock
		if clock == nil {
			clock = time.Now
		}
		// Handlers of one server share one table (and must share the
		// store): a session is the server's, whichever handler opened it.
		s.shared.CompareAndSwap(nil, newSharedSessions(o.Sessions, s.remote, idle, clock, s.logger))
		if shared = s.shared.Load(); shared.st != o.Sessions {
			return nil, fmt.Errorf("%w: HTTPOptions.Sessions: another handler of this server keeps its sessions in another store", ErrInvalidOptions)
		}
		sdk = shared.dispatch(sdk)
		shared.setInner(sdk)
		if shared.bus != nil {
			shared.listening.Do(func() { shared.listenErr = shared.listen(s.life) })
			if shared.listenErr != nil {
				return nil, fmt.Errorf("server: listening for other replicas' messages: %w", shared.listenErr)
			}
		}
	}
	h := sdk
	if o.Inner != nil {
		h = o.Inner(h)
	}
	if shared != nil {
		h = shared.gate(h)
	}
	// A request that gets here passed the token check: its connection
	// is kept open as an authenticated one (NewHTTPServer).
	h = markConn(h)
	if o.Verifier != nil {
		h = withWWWAuthenticate(auth.RequireBearerToken(o.Verifier, o.Bearer)(h))
	} else if !s.opts.OwnWarnings {
		s.logger.Warn("server: not protected: HTTP credentials (HTTPOptions.Verifier is not set): requests carry no verified token; serve on loopback only")
	}
	h = limitBody(h, o.MaxBodyBytes)
	cop := http.NewCrossOriginProtection()
	for _, origin := range o.TrustedOrigins {
		if err := cop.AddTrustedOrigin(origin); err != nil {
			return nil, err
		}
	}
	h = cop.Handler(h)
	if len(o.AllowedHosts) > 0 {
		h = allowHosts(h, o.AllowedHosts)
	}
	return h, nil
}

// markConn marks the connection of every request it serves as
// authenticated.
func markConn(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		markAuthenticated(r.Context())
		h.ServeHTTP(w, r)
	})
}

// limitBody refuses bodies over max with 413 before anything reads them
// (when Content-Length says so) and bounds the read otherwise.
func limitBody(h http.Handler, max int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > max {
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			return
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, max)
		}
		h.ServeHTTP(w, r)
	})
}

// allowHosts answers 403 to a Host header not in hosts.
func allowHosts(h http.Handler, hosts []string) http.Handler {
	allowed := make([]string, len(hosts))
	for i, x := range hosts {
		allowed[i] = strings.ToLower(x)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if hh, _, err := net.SplitHostPort(host); err == nil {
			host = hh
		}
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
		if !slices.Contains(allowed, strings.ToLower(host)) {
			http.Error(w, "Forbidden: host not allowed", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// withWWWAuthenticate makes sure a 401 carries WWW-Authenticate: the
// go-sdk's middleware only sets it when resource metadata or scopes are
// configured.
func withWWWAuthenticate(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&authWriter{ResponseWriter: w}, r)
	})
}

type authWriter struct {
	http.ResponseWriter
}

func (w *authWriter) WriteHeader(code int) {
	if code == http.StatusUnauthorized && w.Header().Get("WWW-Authenticate") == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="mcp"`)
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the real writer (flushing SSE).
func (w *authWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush flushes the underlying writer, if it can.
func (w *authWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
