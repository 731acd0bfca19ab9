package egress

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/diag"
)

// Options configures a Guard. The zero value is usable.
type Options struct {
	// AllowedHosts is an exact, case-insensitive hostname list (no wildcards,
	// no ports). nil means no host list: any host passes CheckURL, but the
	// dialer still refuses unsafe addresses. A non-nil empty list allows no
	// host at all. One trailing dot is ignored on both sides ("api.test." is
	// "api.test"); IP literals are compared in canonical form ("0:0::1" is
	// "::1"). An entry that is not a valid hostname or IP literal (one with a
	// port, a wildcard, a scheme) matches nothing.
	AllowedHosts []string
	// LookupIP resolves a hostname; nil uses
	// net.DefaultResolver.LookupNetIP(ctx, "ip", host). Tests use it to map
	// made-up hostnames to 127.0.0.1 (that is how DNS rebinding and private
	// resolutions are simulated).
	LookupIP func(ctx context.Context, host string) ([]netip.Addr, error)
	// Transport is cloned as the base; nil clones http.DefaultTransport. Its
	// Proxy is always cleared (a proxy would bypass the dial check), and so
	// are DialTLSContext, DialTLS and Dial (they would too). Its DialContext,
	// if set, is kept as the inner dialer: the guard calls it only with an
	// "ip:port" address it has already checked.
	Transport *http.Transport
}

// Guard decides which hosts and addresses Gatehouse may contact for URLs it
// does not trust, and builds HTTP clients that enforce those decisions. A
// Guard is immutable after New and safe for concurrent use.
type Guard struct {
	list      map[string]struct{} // normalized hosts; nil when there is no list
	lookup    func(ctx context.Context, host string) ([]netip.Addr, error)
	base      *http.Transport // never modified after New; cloned per Client
	innerDial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// defaultIdlePerHost is the least number of idle connections kept per host.
const defaultIdlePerHost = 64

// New returns a Guard configured by opts (nil means the zero Options).
func New(opts *Options) *Guard {
	if opts == nil {
		opts = &Options{}
	}
	g := &Guard{lookup: opts.LookupIP}
	if opts.AllowedHosts != nil {
		g.list = make(map[string]struct{}, len(opts.AllowedHosts))
		for _, h := range opts.AllowedHosts {
			if n, ok := normHost(h); ok {
				g.list[n] = struct{}{}
			}
		}
	}
	if g.lookup == nil {
		g.lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	if opts.Transport != nil {
		g.base = opts.Transport.Clone()
	} else {
		g.base = http.DefaultTransport.(*http.Transport).Clone()
	}
	// One MCP server is one host that sees many concurrent requests; Go's
	// default of 2 idle connections per host makes a busy client dial (and
	// close) a connection for most calls.
	if g.base.MaxIdleConnsPerHost < defaultIdlePerHost {
		g.base.MaxIdleConnsPerHost = defaultIdlePerHost
	}
	if g.base.MaxIdleConns != 0 && g.base.MaxIdleConns < defaultIdlePerHost {
		g.base.MaxIdleConns = defaultIdlePerHost
	}
	g.innerDial = g.base.DialContext
	if g.innerDial == nil {
		d := &net.Dialer{Timeout: dialTimeout, KeepAlive: dialTimeout}
		g.innerDial = d.DialContext
	}
	g.base.Proxy = nil
	g.base.DialContext = nil
	g.base.DialTLSContext = nil
	// The deprecated hooks are cleared on purpose: either would bypass the check.
	//lint:ignore SA1019 cleared, not used
	g.base.DialTLS = nil
	//lint:ignore SA1019 cleared, not used
	g.base.Dial = nil
	g.base.GetProxyConnectHeader = nil
	g.base.ProxyConnectHeader = nil
	return g
}

const dialTimeout = 30 * time.Second // as http.DefaultTransport

// Error is returned (wrapped) by CheckURL and Client, and by the dials and
// redirects that the guard refuses. Branch on Rule:
//
//   - diag.HostNotAllowed: a host list is set and the host is not on it;
//   - diag.UnsafeAddress: a dial refused because the address is loopback,
//     private, link-local, metadata or otherwise not public (Addr says which);
//   - diag.InvalidURL: the URL is not an absolute http(s) URL with a host, has
//     user information, a bad port or a non-ASCII host;
//   - diag.InvalidHeader: a configured header name or value is not valid HTTP;
//   - diag.ConnectionFailure: a redirect refused (too many, a scheme
//     downgrade from https to http).
type Error struct {
	// Rule is the diagnostic rule the refusal falls under.
	Rule diag.Rule
	// Host is the URL host concerned, as written (without port).
	Host string
	// Addr is the address refused at dial time; invalid (zero) otherwise.
	Addr netip.Addr
	// Reason says why, in a few words.
	Reason string
}

// Error returns "egress: HOST[ (ADDR)]: REASON [RULE]".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("egress: ")
	if e.Host != "" {
		b.WriteString(strconv.Quote(e.Host))
		if e.Addr.IsValid() {
			b.WriteString(" (")
			b.WriteString(e.Addr.String())
			b.WriteString(")")
		}
		b.WriteString(": ")
	}
	b.WriteString(e.Reason)
	b.WriteString(" [")
	b.WriteString(string(e.Rule))
	b.WriteString("]")
	return b.String()
}

// CheckURL reports whether the URL's host may be contacted at all. It does no
// I/O (no DNS): the address check happens when a connection is dialed.
//
// It returns an *Error with Rule diag.InvalidURL when rawURL is not an
// absolute http or https URL with a host (or carries user information, a port
// outside 1-65535 or a non-ASCII host), and with Rule diag.HostNotAllowed
// when a host list is set and the host is not on it. A host list is a host
// list: with a list set, only listed hosts pass, loopback literals included.
func (g *Guard) CheckURL(rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return &Error{Rule: diag.InvalidURL, Reason: fmt.Sprintf("not a URL: %v", unwrapURLError(err))}
	}
	return g.checkURL(u)
}

func unwrapURLError(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}

func (g *Guard) checkURL(u *url.URL) error {
	host := u.Hostname()
	if u.Scheme != "http" && u.Scheme != "https" {
		return &Error{Rule: diag.InvalidURL, Host: host, Reason: fmt.Sprintf("scheme %q is not http or https", u.Scheme)}
	}
	if u.Opaque != "" || host == "" {
		return &Error{Rule: diag.InvalidURL, Host: host, Reason: "URL has no host"}
	}
	if u.User != nil {
		return &Error{Rule: diag.InvalidURL, Host: host, Reason: "URL carries user information"}
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return &Error{Rule: diag.InvalidURL, Host: host, Reason: fmt.Sprintf("port %q is out of range", p)}
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return &Error{Rule: diag.InvalidURL, Host: host, Reason: "empty port"}
	}
	n, ok := normHost(host)
	if !ok {
		return &Error{Rule: diag.InvalidURL, Host: host, Reason: "host is not an ASCII hostname or an IP literal"}
	}
	if g.list != nil {
		if _, listed := g.list[n]; !listed {
			return &Error{Rule: diag.HostNotAllowed, Host: host, Reason: "host is not in allowedHosts"}
		}
	}
	return nil
}

// listed reports whether a host list is set and host is on it.
func (g *Guard) listed(host string) bool {
	if g.list == nil {
		return false
	}
	n, ok := normHost(host)
	if !ok {
		return false
	}
	_, listed := g.list[n]
	return listed
}

// normHost returns the form of host used for list comparisons: an IP literal
// in canonical form (zone kept), or an ASCII hostname in lower case without
// one trailing dot. ok is false for an empty or non-ASCII host, or one with
// characters no hostname has.
func normHost(host string) (string, bool) {
	if a, err := netip.ParseAddr(host); err == nil {
		return a.String(), true
	}
	h := strings.TrimSuffix(host, ".")
	if h == "" || len(h) > 253 {
		return "", false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '.', c == '_':
		case 'A' <= c && c <= 'Z':
		default:
			return "", false
		}
	}
	if strings.Contains(h, "..") || h[0] == '.' || h[len(h)-1] == '.' {
		return "", false
	}
	return strings.ToLower(h), true
}

// loopbackLiteral reports whether host is an IP literal in a loopback range,
// written plainly: 127.0.0.0/8 or ::1, with no zone, not in IPv4-mapped,
// NAT64 or 6to4 form.
func loopbackLiteral(host string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(host)
	if err != nil || a.Zone() != "" || a.Is4In6() {
		return netip.Addr{}, false
	}
	// Only 127.0.0.0/8 and ::1 themselves: not a NAT64 or 6to4 address that
	// embeds 127.x, which Classify also calls loopback.
	return a, a.IsLoopback()
}
