package egress_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"sync"
	"testing"

	"github.com/gatehouse-dev/gatehouse/diag"
	"github.com/gatehouse-dev/gatehouse/internal/egress"
)

// A made-up name that resolves to 127.0.0.1 and was not allowed is refused at
// dial time: the server never sees a request and nothing is dialed.
func TestNameResolvingToLoopbackIsRefused(t *testing.T) {
	srv := newServer(t, nil)
	res := newResolver().set("evil.test", "127.0.0.1")
	d := newDialer(t)
	g := egress.New(&egress.Options{LookupIP: res.lookup, Transport: d.transport()})
	u := "http://evil.test:" + srv.port() + "/mcp"
	if err := g.CheckURL(u); err != nil {
		t.Fatalf("CheckURL without a host list: %v", err)
	}
	c := client(t, g, u, nil, nil)
	_, err := get(c, u)
	e := wantRule(t, err, diag.UnsafeAddress)
	if e.Host != "evil.test" || e.Addr != netip.MustParseAddr("127.0.0.1") {
		t.Errorf("error names host %q addr %v, want evil.test 127.0.0.1", e.Host, e.Addr)
	}
	if n := srv.requests.Load(); n != 0 {
		t.Errorf("server saw %d requests, want 0", n)
	}
	if got := d.dials(); len(got) != 0 {
		t.Errorf("dialed %v, want nothing", got)
	}
	if res.count("evil.test") == 0 {
		t.Error("the guard did not resolve the name itself")
	}
}

// The same name, listed in AllowedHosts (any case), is trusted: it reaches the
// loopback server on the URL's port.
func TestListedNameResolvingToLoopbackWorks(t *testing.T) {
	srv := newServer(t, nil)
	res := newResolver().set("internal.test", "127.0.0.1")
	d := newDialer(t)
	g := egress.New(&egress.Options{AllowedHosts: []string{"Internal.TEST"}, LookupIP: res.lookup, Transport: d.transport()})
	u := "http://INTERNAL.test:" + srv.port() + "/mcp"
	c := client(t, g, u, nil, nil)
	body, err := get(c, u)
	if err != nil || body != "ok" {
		t.Fatalf("GET = %q, %v; want ok", body, err)
	}
	if n := srv.requests.Load(); n != 1 {
		t.Errorf("server saw %d requests, want 1", n)
	}
	if got, want := d.dials(), []string{"127.0.0.1:" + srv.port()}; !slices.Equal(got, want) {
		t.Errorf("dialed %v, want %v", got, want)
	}
}

// A loopback IP literal needs no host list: the operator wrote an address.
func TestLoopbackLiteralWorksWithoutList(t *testing.T) {
	srv := newServer(t, nil)
	res := newResolver()
	d := newDialer(t)
	g := egress.New(&egress.Options{LookupIP: res.lookup, Transport: d.transport()})
	u := srv.URL + "/mcp"
	body, err := get(client(t, g, u, nil, nil), u)
	if err != nil || body != "ok" {
		t.Fatalf("GET %s = %q, %v; want ok", u, body, err)
	}
	if srv.requests.Load() != 1 {
		t.Errorf("server saw %d requests, want 1", srv.requests.Load())
	}
}

// Literals other than plain loopback are refused before any dial: a loopback
// literal does not unlock private ranges, and odd spellings of loopback (the
// IPv4-mapped form) are not loopback literals.
func TestUnsafeLiteralsAreRefused(t *testing.T) {
	srv := newServer(t, nil)
	d := newDialer(t)
	g := egress.New(&egress.Options{LookupIP: newResolver().lookup, Transport: d.transport()})
	for _, host := range []string{
		"10.0.0.1", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.100.100.200",
		"0.0.0.0", "100.64.0.1", "[::ffff:127.0.0.1]", "[::ffff:169.254.169.254]", "[::ffff:10.0.0.1]",
		"[fd00:ec2::254]", "[fe80::1]", "[::]", "[64:ff9b::7f00:1]", "[2002:7f00:1::]",
	} {
		u := "http://" + host + ":" + srv.port() + "/"
		_, err := get(client(t, g, u, nil, nil), u)
		e := wantRule(t, err, diag.UnsafeAddress)
		if !e.Addr.IsValid() {
			t.Errorf("%s: error has no address", host)
		}
	}
	if got := d.dials(); len(got) != 0 {
		t.Errorf("dialed %v, want nothing", got)
	}
	if srv.requests.Load() != 0 {
		t.Errorf("server saw %d requests", srv.requests.Load())
	}
}

// IPv4-mapped IPv6 answers are unmapped before the check: refused when not
// allowed, and dialed as the plain IPv4 address when the host is listed.
func TestIPv4MappedAnswers(t *testing.T) {
	srv := newServer(t, nil)
	res := newResolver().
		set("mapped.test", "::ffff:127.0.0.1").
		set("mapped-meta.test", "::ffff:169.254.169.254").
		set("listed.test", "::ffff:127.0.0.1")
	d := newDialer(t)
	g := egress.New(&egress.Options{LookupIP: res.lookup, Transport: d.transport()})
	for name, want := range map[string]string{"mapped.test": "::ffff:127.0.0.1", "mapped-meta.test": "::ffff:169.254.169.254"} {
		u := "http://" + name + ":" + srv.port() + "/"
		_, err := get(client(t, g, u, nil, nil), u)
		if e := wantRule(t, err, diag.UnsafeAddress); e.Addr.String() != want {
			t.Errorf("%s: refused addr %v, want %s", name, e.Addr, want)
		}
	}
	if len(d.dials()) != 0 || srv.requests.Load() != 0 {
		t.Fatalf("dials %v, requests %d; want none", d.dials(), srv.requests.Load())
	}

	gl := egress.New(&egress.Options{AllowedHosts: []string{"listed.test"}, LookupIP: res.lookup, Transport: d.transport()})
	u := "http://listed.test:" + srv.port() + "/"
	if body, err := get(client(t, gl, u, nil, nil), u); err != nil || body != "ok" {
		t.Fatalf("listed mapped name: %q, %v", body, err)
	}
	if got, want := d.dials(), []string{"127.0.0.1:" + srv.port()}; !slices.Equal(got, want) {
		t.Errorf("dialed %v, want %v (unmapped)", got, want)
	}
}

// Metadata, unspecified and multicast addresses are refused even for a
// listed host; the listing unlocks only local-network ranges.
func TestListedHostNeverReachesMetadata(t *testing.T) {
	res := newResolver().
		set("meta.test", "169.254.169.254").
		set("zero.test", "0.0.0.0").
		set("ecs.test", "169.254.170.2").
		set("v6meta.test", "fd00:ec2::254").
		set("mcast.test", "224.0.0.1").
		set("private.test", "10.1.2.3")
	d := newDialer(t)
	g := egress.New(&egress.Options{
		AllowedHosts: []string{"meta.test", "zero.test", "ecs.test", "v6meta.test", "mcast.test", "private.test"},
		LookupIP:     res.lookup, Transport: d.transport(),
	})
	for _, name := range []string{"meta.test", "zero.test", "ecs.test", "v6meta.test", "mcast.test"} {
		u := "http://" + name + ":8080/"
		_, err := get(client(t, g, u, nil, nil), u)
		wantRule(t, err, diag.UnsafeAddress)
	}
	if got := d.dials(); len(got) != 0 {
		t.Errorf("dialed %v, want nothing", got)
	}
	// The listed private name is let through to the inner dialer (which, in
	// this test, refuses anything but 127.0.0.1 and would fail the test), so
	// check the decision with a dialer that only records.
	rec := &recordOnly{}
	g2 := egress.New(&egress.Options{AllowedHosts: []string{"private.test"}, LookupIP: res.lookup, Transport: &http.Transport{DialContext: rec.dial}})
	_, err := get(client(t, g2, "http://private.test:8080/", nil, nil), "http://private.test:8080/")
	if err == nil || !slices.Equal(rec.addrs(), []string{"10.1.2.3:8080"}) {
		t.Errorf("listed private name: err %v, inner dials %v; want one dial to 10.1.2.3:8080", err, rec.addrs())
	}
}

// DNS rebinding: the check runs on every new connection with a fresh lookup,
// so a name that first resolved to a public address and later to loopback is
// refused the second time.
func TestDNSRebindingIsRefusedAtDial(t *testing.T) {
	srv := newServer(t, nil)
	const public = "93.184.216.34" // stands in for a public server; dialed as 127.0.0.1 by the test dialer
	res := newResolver().set("rebind.test", public).set("rebind.test", "127.0.0.1")
	d := newDialer(t, public)
	g := egress.New(&egress.Options{LookupIP: res.lookup, Transport: d.transport()})
	u := "http://rebind.test:" + srv.port() + "/"
	c := client(t, g, u, nil, nil)
	if body, err := get(c, u); err != nil || body != "ok" {
		t.Fatalf("first GET (public answer) = %q, %v", body, err)
	}
	c.CloseIdleConnections() // force a new dial
	_, err := get(c, u)
	if e := wantRule(t, err, diag.UnsafeAddress); e.Addr.String() != "127.0.0.1" {
		t.Errorf("refused addr %v, want 127.0.0.1", e.Addr)
	}
	if n := srv.requests.Load(); n != 1 {
		t.Errorf("server saw %d requests, want 1", n)
	}
	if got, want := d.dials(), []string{public + ":" + srv.port()}; !slices.Equal(got, want) {
		t.Errorf("dialed %v, want %v", got, want)
	}
	if n := res.count("rebind.test"); n != 2 {
		t.Errorf("resolved %d times, want 2", n)
	}
}

// A name with one unsafe address among public ones is refused outright;
// nothing is dialed, not even the public address.
func TestMixedAnswerIsRefusedWhole(t *testing.T) {
	const public = "93.184.216.34"
	res := newResolver().set("mixed.test", public, "10.0.0.7")
	d := newDialer(t, public)
	g := egress.New(&egress.Options{LookupIP: res.lookup, Transport: d.transport()})
	_, err := get(client(t, g, "http://mixed.test:1/", nil, nil), "http://mixed.test:1/")
	if e := wantRule(t, err, diag.UnsafeAddress); e.Addr.String() != "10.0.0.7" {
		t.Errorf("refused addr %v, want 10.0.0.7", e.Addr)
	}
	if got := d.dials(); len(got) != 0 {
		t.Errorf("dialed %v, want nothing", got)
	}
}

// With a host list set, the dialer enforces it too: a request sent through a
// guard client to an unlisted host (as a legacy SSE endpoint event would
// cause, with no redirect involved) is refused without a lookup or a dial.
func TestDialEnforcesHostList(t *testing.T) {
	srv := newServer(t, nil)
	res := newResolver().set("good.test", "127.0.0.1").set("other.test", "127.0.0.1")
	d := newDialer(t)
	g := egress.New(&egress.Options{AllowedHosts: []string{"good.test"}, LookupIP: res.lookup, Transport: d.transport()})
	c := client(t, g, "http://good.test:"+srv.port()+"/", nil, nil)
	for _, u := range []string{srv.URL + "/", "http://other.test:" + srv.port() + "/"} {
		_, err := get(c, u)
		wantRule(t, err, diag.HostNotAllowed)
	}
	if res.count("other.test") != 0 || len(d.dials()) != 0 || srv.requests.Load() != 0 {
		t.Errorf("lookups %d, dials %v, requests %d; want none", res.count("other.test"), d.dials(), srv.requests.Load())
	}
}

// The base transport's proxy is ignored: requests go straight to the target.
func TestProxyIsCleared(t *testing.T) {
	target := newServer(t, nil)
	proxy := newServer(t, nil)
	base := &http.Transport{Proxy: func(*http.Request) (*url.URL, error) { return url.Parse(proxy.URL) }}
	g := egress.New(&egress.Options{Transport: base})
	u := target.URL + "/"
	if body, err := get(client(t, g, u, nil, nil), u); err != nil || body != "ok" {
		t.Fatalf("GET = %q, %v", body, err)
	}
	if target.requests.Load() != 1 || proxy.requests.Load() != 0 {
		t.Errorf("target saw %d, proxy saw %d; want 1 and 0", target.requests.Load(), proxy.requests.Load())
	}
}

// recordOnly is an inner dialer that records and refuses every dial.
type recordOnly struct {
	mu   sync.Mutex
	seen []string
}

func (r *recordOnly) dial(_ context.Context, _, addr string) (net.Conn, error) {
	r.mu.Lock()
	r.seen = append(r.seen, addr)
	r.mu.Unlock()
	return nil, fmt.Errorf("recordOnly: not dialing %s", addr)
}

func (r *recordOnly) addrs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}
