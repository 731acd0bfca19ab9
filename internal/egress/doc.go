// Package egress is the outbound HTTP guard Gatehouse uses for every
// connection to a URL it does not trust: the MCP endpoints plugins declare.
//
//	g := egress.New(&egress.Options{AllowedHosts: []string{"mcp.example.com"}})
//	hc, err := g.Client("https://mcp.example.com/mcp", map[string]string{"X-Api-Key": key}, nil)
//	defer hc.CloseIdleConnections()
//	t := &mcp.StreamableClientTransport{Endpoint: "https://mcp.example.com/mcp", HTTPClient: hc}
//
// A [Guard] is built once from [Options] (an optional host list, a resolver,
// a base transport) and hands out one *http.Client per server with
// [Guard.Client]. The go-sdk's StreamableClientTransport and
// SSEClientTransport take that client as their HTTPClient.
//
// # What is promised
//
// Host list. With Options.AllowedHosts set, a URL whose host is not on the
// list is refused by [Guard.CheckURL] and by [Guard.Client] (an [*Error] with
// Rule diag.HostNotAllowed), on every redirect, and again at dial time (which
// covers a legacy SSE endpoint event naming another host). Matching is exact
// and case-insensitive: no wildcards, no suffix matching, no ports; one
// trailing dot is ignored ("API.test." matches "api.test"); IP literals match
// in canonical form. A host list is a host list: with one set, loopback
// literals pass only if listed. Hosts must be ASCII (write IDNs in punycode).
//
// Addresses. Every connection is dialed by the guard: it resolves the URL's
// host itself (Options.LookupIP), checks every address it got, and dials
// only checked "ip:port" addresses. The check runs at dial time, on each new
// connection, so a name that resolved to a public address once and to a
// private one later (DNS rebinding) is refused when it matters. If any
// address of a name is refused, the whole name is refused and nothing is
// dialed. Refusals are an [*Error] with Rule diag.UnsafeAddress, wrapped by
// net/http (use errors.As). See [Classify] for the ranges:
//
//   - public addresses are dialed;
//   - loopback, private, link-local, CGNAT and reserved addresses are dialed
//     only when the URL's host is explicitly on the host list (the operator
//     named it: it is trusted to resolve anywhere local), or, for loopback
//     only, when the URL's host is itself a loopback IP literal such as
//     http://127.0.0.1:8080 (no DNS involved) and so is the endpoint the
//     client was made for: the operator wrote a local address. A client
//     made for any other endpoint never dials an unlisted loopback literal
//     (a redirect to one, an SSE endpoint event, a token endpoint learnt
//     from metadata and requested through it are refused). A loopback
//     literal does not unlock any other range; "localhost" is a name, not
//     a literal, so it must be listed; IPv4-mapped, NAT64 and 6to4
//     spellings of a loopback address (::ffff:127.0.0.1, 64:ff9b::7f00:1)
//     are not loopback literals;
//   - cloud-metadata, unspecified (0.0.0.0/8, ::), multicast and broadcast
//     addresses are never dialed, even for a listed host;
//   - IPv4-mapped IPv6 addresses are checked as the IPv4 address they carry;
//     NAT64 and 6to4 addresses as the IPv4 address they embed.
//
// Redirects. At most [MaxRedirects]; each target must pass CheckURL; a
// redirect to a scheme other than http or https, or from https to http
// anywhere in the chain, is refused. The dial check then covers the address.
//
// Headers. Configured headers (and the dynamic ones, e.g. a bearer token)
// are added inside the client's RoundTripper, per request, only when the
// request's own URL has the configured origin (scheme, host, port; default
// ports normalized). They are never set on the caller's request, so neither
// a redirect nor an SSE endpoint event can carry them to another origin, and
// any header with a configured name is removed from requests to another
// origin. Client-generated headers win over configured ones; dynamic ones
// win over both.
//
// Proxies. The base transport's Proxy (and HTTP_PROXY and friends) is
// ignored: a proxy would dial on our behalf, unchecked.
//
// Plain HTTP. A client sends its http:// requests on connections it keeps
// itself, written with net/http's Request.Write and read with
// http.ReadResponse on the caller's goroutine, rather than through the
// Transport, which hands every request and answer between two goroutines
// per connection (a fifth of a gateway's CPU per small call, and its
// latency with few callers). The dial goes through the guard either way;
// connections are reused as the Transport reuses them (an answer read to
// its end, no Connection: close, idle at most IdleConnTimeout, at most
// MaxIdleConnsPerHost per host); an idle one the server closed is found by
// a peek at its socket before it is used; a request that met a closed
// connection is sent again only when the server cannot have acted on it,
// or it is replayable (GET, HEAD, OPTIONS, TRACE). https, upgrades, and a
// base transport with keep-alives off or a response header timeout go
// through the Transport, as does every request on a platform without the
// peek (not unix). Unlike the Transport it does not ask for gzip. On
// Linux, a dialed TCP connection is read and written (and peeked at) with
// raw system calls on its socket (package rawio): the same calls, without
// waking the runtime's monitor thread on each.
//
// # What is not promised
//
//   - The guard does not stop a trusted, listed host from being hostile; it
//     only decides where connections go. It does not inspect bodies.
//   - It does not pin certificates or prevent a listed host's DNS from being
//     pointed at another public address.
//   - Headers the caller itself puts on requests to the configured origin are
//     the caller's business; dynamic headers are not stripped from requests
//     to other origins unless the caller set them under a configured name
//     (the guard never asks the resolver for another origin).
//   - Connections already pooled are reused without a new check; the check
//     is per dial. Each client owns its pool: close it with
//     http.Client.CloseIdleConnections when the server goes away.
//   - errors.As reaches the [*Error] through net/http and through the
//     go-sdk's streamable client; the go-sdk's legacy SSE client flattens
//     errors from its POSTs to text, so there only the message (which ends
//     in "[rule]") says why. A resolver failure is a plain wrapped error.
//   - Non-TCP egress (stdio servers, UDP) is out of scope.
//
// The package has no package-level mutable state.
package egress
