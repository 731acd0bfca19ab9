package toolset

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gatehouse-dev/gatehouse/diag"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/testserver"
	"github.com/gatehouse-dev/gatehouse/plugin"
)

// loopbackDNS maps every name to 127.0.0.1, as a rebinding attacker would.
func loopbackDNS(context.Context, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

func TestStreamableHTTPAndSSE(t *testing.T) {
	st := startHTTP(t, "127.0.0.1:0", "-tools", "echo")
	sse := startHTTP(t, "127.0.0.1:0", "-tools", "echo", "-sse")
	ts := open(t, []Server{
		remote("st", st.URL(""), plugin.TransportStreamableHTTP),
		remote("old", sse.URL(""), plugin.TransportSSE),
	}, nil)
	if got := call(t, ts, "st__echo", map[string]any{"text": "a"}); got != "a" {
		t.Errorf("streamable: %q", got)
	}
	if got := call(t, ts, "old__echo", map[string]any{"text": "b"}); got != "b" {
		t.Errorf("sse: %q", got)
	}
	if ds := ts.Diagnostics(); len(ds) != 0 {
		t.Errorf("diagnostics %v", ds)
	}
}

func TestLazy(t *testing.T) {
	var n atomic.Int64
	fx := testserver.New(testserver.Config{Tools: []string{"echo"}})
	srv := httptest.NewServer(fx.Handler(false, func(testserver.Request) { n.Add(1) }))
	defer srv.Close()
	ts := open(t, []Server{remote("fx", srv.URL+"/mcp", plugin.TransportStreamableHTTP)}, nil)
	if got := n.Load(); got != 0 {
		t.Fatalf("Open made %d requests", got)
	}
	if ds := ts.Diagnostics(); len(ds) != 0 {
		t.Fatalf("diagnostics before use: %v", ds)
	}
	if got := call(t, ts, "fx__echo", map[string]any{"text": "x"}); got != "x" {
		t.Errorf("echo %q", got)
	}
	if n.Load() == 0 {
		t.Error("no request after use")
	}
	if err := ts.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestHostList(t *testing.T) {
	fx := startHTTP(t, "127.0.0.1:0", "-tools", "echo")

	// Not on the list: skipped with host-not-allowed, nothing dialed.
	ts := open(t, []Server{remote("fx", fx.URL("fixture.test"), plugin.TransportStreamableHTTP)},
		&Options{AllowedHosts: []string{"other.test"}, LookupIP: loopbackDNS})
	if m := tools(t, ts); len(m) != 0 {
		t.Errorf("tools %v", keys(m))
	}
	if ds := ts.Diagnostics(); len(ds) != 1 || ds[0].Rule != diag.HostNotAllowed || ds[0].Origin != "fx" {
		t.Errorf("diagnostics %v", ds)
	}
	if r := fx.Requests(); len(r) != 0 {
		t.Errorf("a blocked host was contacted: %v", r)
	}

	// No list, a made-up name that resolves to 127.0.0.1: the dialer refuses.
	ts = open(t, []Server{remote("fx", fx.URL("rebind.test"), plugin.TransportStreamableHTTP)},
		&Options{LookupIP: loopbackDNS})
	if m := tools(t, ts); len(m) != 0 {
		t.Errorf("tools %v", keys(m))
	}
	ds := ts.Diagnostics()
	if len(ds) != 1 || ds[0].Rule != diag.UnsafeAddress || ds[0].Origin != "fx" || !strings.Contains(ds[0].Message, "127.0.0.1") {
		t.Errorf("diagnostics %v", ds)
	}
	if r := fx.Requests(); len(r) != 0 {
		t.Errorf("an unsafe address was contacted: %v", r)
	}
	// The same over SSE: the rule survives the SSE transport's errors.
	ts = open(t, []Server{remote("fx", fx.URL("rebind.test"), plugin.TransportSSE)},
		&Options{LookupIP: loopbackDNS})
	if m := tools(t, ts); len(m) != 0 {
		t.Errorf("tools %v", keys(m))
	}
	if ds := ts.Diagnostics(); len(ds) != 1 || ds[0].Rule != diag.UnsafeAddress {
		t.Errorf("SSE diagnostics %v", ds)
	}

	// Explicitly allowed (case-insensitively): the same name works.
	ts = open(t, []Server{remote("fx", fx.URL("rebind.test"), plugin.TransportStreamableHTTP)},
		&Options{AllowedHosts: []string{"REBIND.test"}, LookupIP: loopbackDNS})
	if got := call(t, ts, "fx__echo", map[string]any{"text": "ok"}); got != "ok" {
		t.Errorf("echo %q", got)
	}

	// A per-session resolver.
	ts = open(t, []Server{remote("fx", fx.URL("rebind.test"), plugin.TransportStreamableHTTP)},
		&Options{Session: "s1", AllowedHostsFunc: func(s string) []string {
			if s == "s1" {
				return nil // this session may reach nothing listed
			}
			return []string{"rebind.test"}
		}, LookupIP: loopbackDNS})
	tools(t, ts)
	if !diag.Has(ts.Diagnostics(), diag.HostNotAllowed) {
		t.Errorf("resolver ignored: %v", ts.Diagnostics())
	}
}

// TestRedirects: a redirect to an address that is not allowed is refused,
// and configured headers do not follow a redirect to another origin.
func TestRedirects(t *testing.T) {
	fx := startHTTP(t, "127.0.0.1:0", "-tools", "echo")
	_, port, _ := net.SplitHostPort(fx.Addr())
	redirectTo := func(host string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://"+host+":"+port+"/mcp", http.StatusTemporaryRedirect)
		}))
	}
	hop := func(srv *httptest.Server, host string) string {
		_, p, _ := net.SplitHostPort(srv.Listener.Addr().String())
		return "http://" + host + ":" + p + "/mcp"
	}

	// Redirect from an allowed host to a private one that is not allowed.
	r1 := redirectTo("internal.test")
	defer r1.Close()
	ts := open(t, []Server{remote("fx", hop(r1, "front.test"), plugin.TransportStreamableHTTP)},
		&Options{AllowedHosts: []string{"front.test"}, LookupIP: loopbackDNS})
	tools(t, ts)
	// The guard's rule for the refused redirect, not connection-failure.
	if ds := ts.Diagnostics(); len(ds) != 1 || ds[0].Rule != diag.HostNotAllowed {
		t.Errorf("diagnostics %v", ds)
	}
	if r := fx.Requests(); len(r) != 0 {
		t.Errorf("redirect target contacted: %v", r)
	}

	// Redirect to another allowed origin: the call works but the configured
	// header stays behind.
	r2 := redirectTo("back.test")
	defer r2.Close()
	s := remote("fx", hop(r2, "front.test"), plugin.TransportStreamableHTTP)
	s.Config.Headers = map[string]string{"X-Tenant": "secret-tenant"}
	ts = open(t, []Server{s}, &Options{AllowedHosts: []string{"front.test", "back.test"}, LookupIP: loopbackDNS})
	if got := call(t, ts, "fx__echo", map[string]any{"text": "via"}); got != "via" {
		t.Errorf("echo %q", got)
	}
	reqs := fx.Requests()
	if len(reqs) == 0 {
		t.Fatal("no request reached the target")
	}
	for _, r := range reqs {
		if r.Tenant != "" {
			t.Errorf("configured header followed the redirect: %+v", r)
		}
	}

	// Direct to the origin: the configured header is sent.
	s = remote("fx", fx.URL("back.test"), plugin.TransportStreamableHTTP)
	s.Config.Headers = map[string]string{"X-Tenant": "t1"}
	before := len(fx.Requests())
	ts = open(t, []Server{s}, &Options{AllowedHosts: []string{"back.test"}, LookupIP: loopbackDNS})
	call(t, ts, "fx__echo", nil)
	for _, r := range fx.Requests()[before:] {
		if r.Tenant != "t1" {
			t.Errorf("configured header missing: %+v", r)
		}
	}
}

func TestAuthPerSession(t *testing.T) {
	fx := startHTTP(t, "127.0.0.1:0", "-tools", "whoami")
	var mu sync.Mutex
	calls := map[string]int{}
	auth := func(_ context.Context, server, session string) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if server != "fx" {
			t.Errorf("auth for server %q", server)
		}
		calls[session]++
		return "tok-" + session, nil
	}
	s := remote("fx", fx.URL(""), plugin.TransportStreamableHTTP)
	s.Config.Headers = map[string]string{"Authorization": "Bearer configured"} // ours wins
	a := open(t, []Server{s}, &Options{Session: "a", Auth: auth})
	b := open(t, []Server{s}, &Options{Session: "b", Auth: auth})

	check := func(from int, want string) int {
		t.Helper()
		reqs := fx.Requests()
		if len(reqs) <= from {
			t.Fatalf("no new requests")
		}
		sawInit := false
		for _, r := range reqs[from:] {
			if r.Authorization != "Bearer "+want {
				t.Errorf("request %+v carries %q, want %q", r, r.Authorization, want)
			}
			if r.RPC == "initialize" || r.RPC == "server/discover" {
				sawInit = true
			}
		}
		if !sawInit {
			t.Errorf("handshake not recorded: %+v", reqs[from:])
		}
		return len(reqs)
	}
	if err := a.Connect(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	n := check(0, "tok-a")
	if err := b.Connect(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	check(n, "tok-b")
	mu.Lock()
	if calls["a"] != 1 || calls["b"] != 1 {
		t.Errorf("auth before handshake: %v", calls)
	}
	mu.Unlock()
	for i := 0; i < 2; i++ {
		if got := call(t, a, "fx__whoami", nil); got != "Bearer tok-a" {
			t.Errorf("a saw %q", got)
		}
		if got := call(t, b, "fx__whoami", nil); got != "Bearer tok-b" {
			t.Errorf("b saw %q", got)
		}
	}
	mu.Lock()
	if calls["a"] != 3 || calls["b"] != 3 {
		t.Errorf("auth per call: %v", calls)
	}
	mu.Unlock()

	// A failing resolver fails the call with ErrAuthFailed.
	boom := errors.New("no token")
	c := open(t, []Server{s}, &Options{Session: "c", Auth: func(context.Context, string, string) (string, error) { return "", boom }})
	tools(t, c)
	if ds := c.Diagnostics(); len(ds) != 1 || ds[0].Rule != diag.ConnectionFailure {
		t.Errorf("diagnostics %v", ds)
	}
}

func TestAuthFailsCall(t *testing.T) {
	fx := startHTTP(t, "127.0.0.1:0", "-tools", "whoami")
	var fail atomic.Bool
	boom := errors.New("token expired")
	ts := open(t, []Server{remote("fx", fx.URL(""), plugin.TransportStreamableHTTP)}, &Options{Session: "s",
		Auth: func(context.Context, string, string) (string, error) {
			if fail.Load() {
				return "", boom
			}
			return "t", nil
		}})
	call(t, ts, "fx__whoami", nil)
	fail.Store(true)
	_, err := ts.Call(ctxT(t), "fx__whoami", nil, CallInfo{})
	if !errors.Is(err, ErrAuthFailed) || !errors.Is(err, boom) {
		t.Errorf("got %v", err)
	}
}

func TestReconnectHTTPServerRestarted(t *testing.T) {
	fx := startHTTP(t, "127.0.0.1:0", "-tools", "echo")
	ts := open(t, []Server{remote("fx", fx.URL(""), plugin.TransportStreamableHTTP)}, nil)
	if got := call(t, ts, "fx__echo", map[string]any{"text": "1"}); got != "1" {
		t.Fatalf("echo %q", got)
	}
	fx.Restart() // a new process on the same port: the old session is unknown
	if got := call(t, ts, "fx__echo", map[string]any{"text": "2"}); got != "2" {
		t.Errorf("echo after restart %q", got)
	}
	inits := 0
	for _, r := range fx.Requests() {
		if r.RPC == "initialize" {
			inits++
		}
	}
	if inits != 2 {
		t.Errorf("initialize sent %d times, want 2", inits)
	}
}
