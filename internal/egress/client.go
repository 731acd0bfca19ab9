package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gatehouse-dev/gatehouse/diag"
)

// MaxRedirects is the number of redirects a client follows before it gives up.
const MaxRedirects = 10

// Client returns an *http.Client for one server whose configured origin is
// the origin (scheme://host:port, default ports normalized, host compared
// case-insensitively) of endpoint. It fails with an *Error when endpoint does
// not pass CheckURL or a header is not valid HTTP (or two names differ only
// in case).
//
// headers are the configured headers. The client's transport adds them per
// request, and only to requests whose own URL has the configured origin, so
// they never follow a redirect or a legacy SSE endpoint event to another
// origin; they are never set on the request the caller builds (Go's redirect
// code cannot copy them). A configured header does not replace a header the
// request already carries (headers the client generates to implement HTTP or
// MCP win, as Agent Plugins §7.2.1 requires). Any header named in headers is
// removed from requests to another origin, even if the caller set it.
//
// dynamic, if non-nil, is called once per request to the configured origin
// (never for another origin) with the outgoing copy of the request; the
// headers it returns (e.g. Authorization from an auth resolver) replace
// headers of the same case-insensitive name, configured or not.
//
// The client follows at most MaxRedirects redirects; each new URL must pass
// CheckURL, and a redirect to a scheme other than http/https, or from https
// to http, is refused. Every connection is dialed through the guard (see the
// package doc). Client.Timeout is zero: MCP streams are long-lived, bound
// calls with a context.
//
// Each client owns its connection pool; call its CloseIdleConnections when
// the server is closed.
func (g *Guard) Client(endpoint string, headers map[string]string, dynamic func(*http.Request) http.Header) (*http.Client, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, &Error{Rule: diag.InvalidURL, Reason: fmt.Sprintf("not a URL: %v", unwrapURLError(err))}
	}
	if err := g.checkURL(u); err != nil {
		return nil, err
	}
	conf := make(http.Header, len(headers))
	for k, v := range headers {
		if !validHeaderName(k) {
			return nil, &Error{Rule: diag.InvalidHeader, Host: u.Hostname(), Reason: fmt.Sprintf("header name %q is not a valid HTTP field name", k)}
		}
		if !validHeaderValue(v) {
			return nil, &Error{Rule: diag.InvalidHeader, Host: u.Hostname(), Reason: fmt.Sprintf("value of header %q is not a valid HTTP field value", k)}
		}
		ck := http.CanonicalHeaderKey(k)
		if _, dup := conf[ck]; dup {
			return nil, &Error{Rule: diag.InvalidHeader, Host: u.Hostname(), Reason: fmt.Sprintf("header %q is configured more than once under different casing", ck)}
		}
		conf[ck] = []string{v}
	}
	t := g.base.Clone()
	// A loopback literal is dialed without a list only by a client made
	// for one: the operator wrote a local address. A client made for any
	// other endpoint does not reach loopback through a URL it was not made
	// for (a redirect, an SSE endpoint event, a token endpoint learnt from
	// metadata and requested through it).
	_, local := loopbackLiteral(u.Hostname())
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		return g.dialContext(ctx, network, addr, local)
	}
	rt := &roundTripper{
		t:       t,
		conns:   newConns(t, t.DialContext),
		origin:  originOf(u),
		headers: conf,
		dynamic: dynamic,
	}
	return &http.Client{Transport: rt, CheckRedirect: g.checkRedirect}, nil
}

// WithHeaders returns a copy of ctx whose requests, made with a client of
// Client to that client's configured origin, carry h: per-request headers
// such as the W3C trace context (traceparent, tracestate) of the call a
// request belongs to. Like the configured headers they never reach another
// origin (a redirect elsewhere does not carry them); they replace a
// configured header of the same name, and a dynamic header (an
// Authorization from an auth resolver) replaces them. h is read, never
// modified.
func WithHeaders(ctx context.Context, h http.Header) context.Context {
	return context.WithValue(ctx, headersKey{}, h)
}

// headersKey carries WithHeaders's headers.
type headersKey struct{}

// roundTripper injects the configured and dynamic headers into requests to
// the configured origin, and strips configured header names from all others.
type roundTripper struct {
	t       *http.Transport
	conns   *conns // plain-HTTP requests (nil: all go to t)
	origin  string
	headers http.Header // canonical names
	dynamic func(*http.Request) http.Header
}

// RoundTrip implements http.RoundTripper. It never modifies req.
func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL == nil {
		return nil, errors.New("egress: request has no URL")
	}
	if originOf(req.URL) == rt.origin {
		var dyn http.Header
		if rt.dynamic != nil {
			dyn = rt.dynamic(req)
		}
		ctxh, _ := req.Context().Value(headersKey{}).(http.Header)
		if len(rt.headers) == 0 && len(dyn) == 0 && len(ctxh) == 0 {
			return rt.send(req) // nothing to add: no copy
		}
		out := req.Clone(req.Context())
		if out.Header == nil {
			out.Header = make(http.Header)
		}
		for k, v := range rt.headers {
			if _, set := out.Header[k]; !set {
				out.Header[k] = slices.Clone(v)
			}
		}
		for k, v := range ctxh {
			out.Header[http.CanonicalHeaderKey(k)] = slices.Clone(v)
		}
		for k, v := range dyn {
			out.Header[http.CanonicalHeaderKey(k)] = slices.Clone(v)
		}
		return rt.send(out)
	}
	strip := false
	for k := range rt.headers {
		if _, set := req.Header[k]; set {
			strip = true
		}
	}
	if !strip {
		return rt.send(req)
	}
	out := req.Clone(req.Context())
	for k := range rt.headers {
		out.Header.Del(k)
	}
	return rt.send(out)
}

// send sends a request as it is: a plain-HTTP one on the client's own
// connections, any other through the Transport.
func (rt *roundTripper) send(req *http.Request) (*http.Response, error) {
	if rt.conns.takes(req) {
		return rt.conns.roundTrip(req)
	}
	return rt.t.RoundTrip(req)
}

// CloseIdleConnections closes the idle connections of this client's pool.
// http.Client.CloseIdleConnections calls it.
func (rt *roundTripper) CloseIdleConnections() {
	rt.conns.closeIdle()
	rt.t.CloseIdleConnections()
}

// checkRedirect is the clients' http.Client.CheckRedirect.
func (g *Guard) checkRedirect(req *http.Request, via []*http.Request) error {
	host := req.URL.Hostname()
	if len(via) >= MaxRedirects {
		return &Error{Rule: diag.ConnectionFailure, Host: host, Reason: fmt.Sprintf("stopped after %d redirects", MaxRedirects)}
	}
	if err := g.checkURL(req.URL); err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Reason = "redirect refused: " + e.Reason
		}
		return err
	}
	if req.URL.Scheme == "http" {
		for _, v := range via {
			if v.URL.Scheme == "https" {
				return &Error{Rule: diag.ConnectionFailure, Host: host, Reason: "redirect refused: https to http downgrade"}
			}
		}
	}
	return nil
}

// dialContext is every client's Transport.DialContext. addr is the URL's
// host:port (the transport never has a proxy). local: the client was made
// for a loopback literal, which unlocks loopback literals.
func (g *Guard) dialContext(ctx context.Context, network, addr string, local bool) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("egress: bad dial address %q: %w", addr, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("egress: bad port in dial address %q", addr)
	}
	listed := g.listed(host)
	if g.list != nil && !listed {
		return nil, &Error{Rule: diag.HostNotAllowed, Host: host, Reason: "host is not in allowedHosts"}
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		if lit, ok := loopbackLiteral(host); ok && local {
			return g.dialAddrs(ctx, network, host, []netip.Addr{lit}, uint16(port))
		}
		addrs = []netip.Addr{a}
	} else {
		addrs, err = g.lookup(ctx, strings.ToLower(host))
		if err != nil {
			return nil, fmt.Errorf("egress: resolving %q: %w", host, err)
		}
		if len(addrs) == 0 {
			return nil, fmt.Errorf("egress: %q resolves to no address", host)
		}
	}
	// Every address must pass: a name with one unsafe address is refused
	// outright, so that no ordering of answers can steer the dial.
	for _, a := range addrs {
		c := Classify(a)
		if c == Public || (listed && c.unlockable()) {
			continue
		}
		reason := fmt.Sprintf("%s address refused", c)
		if c.unlockable() {
			reason += " (host not explicitly allowed)"
		}
		return nil, &Error{Rule: diag.UnsafeAddress, Host: host, Addr: a, Reason: reason}
	}
	return g.dialAddrs(ctx, network, host, addrs, uint16(port))
}

// dialAddrs dials the checked addresses in order until one connects. Only
// "ip:port" strings reach the inner dialer, so it resolves nothing.
func (g *Guard) dialAddrs(ctx context.Context, network, host string, addrs []netip.Addr, port uint16) (net.Conn, error) {
	var firstErr error
	tried := false
	for _, a := range addrs {
		if a.Is4In6() {
			a = a.Unmap()
		}
		if (network == "tcp4" && !a.Is4()) || (network == "tcp6" && !a.Is6()) {
			continue
		}
		tried = true
		c, err := g.innerDial(ctx, network, netip.AddrPortFrom(a, port).String())
		if err == nil {
			return c, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	if !tried {
		return nil, fmt.Errorf("egress: %q has no %s address", host, network)
	}
	return nil, firstErr
}

// originOf returns scheme://host:port for u with the scheme and host in lower
// case, one trailing dot dropped, IP literals canonical and the default port
// made explicit.
func originOf(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	host := u.Hostname()
	if n, ok := normHost(host); ok {
		host = n
	} else {
		host = strings.ToLower(host)
	}
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

// validHeaderName reports whether s is an RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// validHeaderValue reports whether s has no control characters other than
// horizontal tab (so no CR, LF or NUL) and no leading or trailing whitespace.
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return strings.TrimSpace(s) == s
}
