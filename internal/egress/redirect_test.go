package egress_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gatehouse-dev/gatehouse/diag"
	"github.com/gatehouse-dev/gatehouse/internal/egress"
)

// redirector answers every request with a 307 to target.
func redirector(target string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target, http.StatusTemporaryRedirect)
	}
}

// A hostile server redirects to private and metadata addresses; the guard
// refuses before dialing anything but the loopback server itself.
func TestRedirectToPrivateAddressIsRefused(t *testing.T) {
	res := newResolver().set("metadata.test", "169.254.169.254").set("lan.test", "192.168.0.10")
	for _, target := range []string{
		"http://10.0.0.1/",
		"http://metadata.test/latest/meta-data/iam/",
		"http://lan.test:8080/",
		"http://[::ffff:169.254.169.254]/",
		"http://169.254.169.254/latest/",
	} {
		t.Run(target, func(t *testing.T) {
			srv := newServer(t, redirector(target))
			d := newDialer(t)
			g := egress.New(&egress.Options{LookupIP: res.lookup, Transport: d.transport()})
			before := res.count("metadata.test")
			_, err := get(client(t, g, srv.URL+"/mcp", nil, nil), srv.URL+"/mcp")
			wantRule(t, err, diag.UnsafeAddress)
			if srv.requests.Load() != 1 {
				t.Errorf("redirecting server saw %d requests, want 1", srv.requests.Load())
			}
			for _, a := range d.dials() {
				if !strings.HasPrefix(a, "127.0.0.1:") {
					t.Errorf("dialed %s", a)
				}
			}
			if len(d.dials()) != 1 {
				t.Errorf("dials %v, want exactly the loopback server", d.dials())
			}
			if strings.Contains(target, "metadata.test") && res.count("metadata.test") != before+1 {
				t.Errorf("metadata.test looked up %d times, want 1", res.count("metadata.test")-before)
			}
		})
	}
}

// With a host list, a redirect to an unlisted host is refused by the
// redirect check itself: no lookup, no dial.
func TestRedirectToUnlistedHostIsRefused(t *testing.T) {
	res := newResolver().set("a.test", "127.0.0.1").set("b.test", "127.0.0.1")
	srvB := newServer(t, nil)
	srvA := newServer(t, redirector("http://b.test:"+srvB.port()+"/"))
	d := newDialer(t)
	g := egress.New(&egress.Options{AllowedHosts: []string{"a.test"}, LookupIP: res.lookup, Transport: d.transport()})
	u := "http://a.test:" + srvA.port() + "/"
	_, err := get(client(t, g, u, nil, nil), u)
	if e := wantRule(t, err, diag.HostNotAllowed); e.Host != "b.test" {
		t.Errorf("refused host %q, want b.test", e.Host)
	}
	if res.count("b.test") != 0 || srvB.requests.Load() != 0 || srvA.requests.Load() != 1 {
		t.Errorf("b.test lookups %d, B requests %d, A requests %d; want 0, 0, 1",
			res.count("b.test"), srvB.requests.Load(), srvA.requests.Load())
	}
}

// Redirects to other schemes are refused; so is a downgrade from https to
// http, even to an allowed loopback server.
func TestRedirectSchemes(t *testing.T) {
	for _, target := range []string{"ftp://127.0.0.1/x", "file:///etc/passwd", "gopher://127.0.0.1:70/"} {
		srv := newServer(t, redirector(target))
		g := egress.New(nil)
		_, err := get(client(t, g, srv.URL, nil, nil), srv.URL)
		wantRule(t, err, diag.InvalidURL)
	}

	plain := newServer(t, nil)
	tlsSrv := newTLSServer(t, redirector(plain.URL+"/"))
	base := tlsSrv.Client().Transport.(*http.Transport).Clone()
	// A base DialTLSContext would dial unchecked: the guard must clear it.
	var tlsDials atomic.Int32
	base.DialTLSContext = func(context.Context, string, string) (net.Conn, error) {
		tlsDials.Add(1)
		return nil, errors.New("base DialTLSContext must not be used")
	}
	g := egress.New(&egress.Options{Transport: base})
	_, err := get(client(t, g, tlsSrv.URL, nil, nil), tlsSrv.URL)
	e := wantRule(t, err, diag.ConnectionFailure)
	if !strings.Contains(e.Reason, "downgrade") {
		t.Errorf("reason %q does not mention the downgrade", e.Reason)
	}
	if tlsSrv.requests.Load() != 1 || plain.requests.Load() != 0 {
		t.Errorf("https server %d requests, http server %d; want 1, 0", tlsSrv.requests.Load(), plain.requests.Load())
	}
	if tlsDials.Load() != 0 {
		t.Errorf("base DialTLSContext called %d times; the TLS connection must be dialed by the guard", tlsDials.Load())
	}
}

// A redirect loop stops after MaxRedirects redirects.
func TestRedirectLimit(t *testing.T) {
	var srv *server
	srv = newServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, srv.URL+"/again", http.StatusFound)
	})
	g := egress.New(nil)
	_, err := get(client(t, g, srv.URL, nil, nil), srv.URL)
	e := wantRule(t, err, diag.ConnectionFailure)
	if !strings.Contains(e.Reason, "10 redirects") {
		t.Errorf("reason %q", e.Reason)
	}
	if n := srv.requests.Load(); n != egress.MaxRedirects {
		t.Errorf("server saw %d requests, want %d", n, egress.MaxRedirects)
	}
}
