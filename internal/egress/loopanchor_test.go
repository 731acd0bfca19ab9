package egress_test

import (
	"testing"

	"github.com/gatehouse-dev/gatehouse/diag"
	"github.com/gatehouse-dev/gatehouse/internal/egress"
)

// TestLoopbackLiteralOnlyForLoopbackClients: without a host list, a loopback
// literal is dialed only by a client made for a loopback literal (the
// operator wrote a local address). A client made for a public server never
// reaches loopback through a URL it did not configure: a redirect to
// http://127.0.0.1:PORT, or a request sent through it to such a URL (an
// authorization server's token endpoint learnt from metadata, a refresh)
// is refused at dial time, and the loopback server sees nothing. A client
// made for a loopback literal still reaches another loopback port.
func TestLoopbackLiteralOnlyForLoopbackClients(t *testing.T) {
	const public = "93.184.216.34" // stands in for a public server; dialed as 127.0.0.1 by the test dialer
	victim := newServer(t, nil)
	hostile := newServer(t, redirector(victim.URL+"/admin"))
	res := newResolver().set("mcp.test", public)
	d := newDialer(t, public)
	g := egress.New(&egress.Options{LookupIP: res.lookup, Transport: d.transport()})
	u := "http://mcp.test:" + hostile.port() + "/mcp"
	c := client(t, g, u, nil, nil)
	_, err := get(c, u)
	if e := wantRule(t, err, diag.UnsafeAddress); e.Addr.String() != "127.0.0.1" {
		t.Errorf("refused addr %v, want 127.0.0.1", e.Addr)
	}
	if hostile.requests.Load() != 1 {
		t.Errorf("the redirecting server saw %d requests, want 1", hostile.requests.Load())
	}
	_, err = get(c, victim.URL+"/token")
	wantRule(t, err, diag.UnsafeAddress)
	if n := victim.requests.Load(); n != 0 {
		t.Fatalf("the loopback server saw %d requests through a public server's client", n)
	}
	// A loopback client: another loopback port (which redirects to a third
	// request's server), and its own.
	lc := client(t, g, victim.URL+"/mcp", nil, nil)
	if body, err := get(lc, hostile.URL+"/x"); err != nil || body != "ok" {
		t.Fatalf("a loopback client to another loopback port: %q %v", body, err)
	}
	if _, err := get(lc, victim.URL+"/mcp"); err != nil {
		t.Fatalf("a loopback client's own server: %v", err)
	}
	if victim.requests.Load() != 2 {
		t.Errorf("the loopback server saw %d requests from the loopback client, want 2", victim.requests.Load())
	}
}
