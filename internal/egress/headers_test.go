package egress_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gatehouse-dev/gatehouse/diag"
	"github.com/gatehouse-dev/gatehouse/internal/egress"
)

func bearer(token string, calls *atomic.Int32) func(*http.Request) http.Header {
	return func(*http.Request) http.Header {
		calls.Add(1)
		return http.Header{"Authorization": {"Bearer " + token}}
	}
}

// A server redirects to another origin (same host, another port). The first
// origin receives the configured and dynamic headers on the wire; the second
// receives neither, and the resolver is not even asked for it.
func TestHeadersDoNotFollowRedirectToAnotherOrigin(t *testing.T) {
	srvB := newServer(t, nil)
	srvA := newServer(t, redirector(srvB.URL+"/landing"))
	var calls atomic.Int32
	g := egress.New(nil)
	c := client(t, g, srvA.URL+"/mcp", map[string]string{"X-Api-Key": "k-123", "x-tenant": "acme"}, bearer("dyn-456", &calls))
	req, _ := http.NewRequestWithContext(context.Background(), "GET", srvA.URL+"/mcp", nil)
	req.Header.Set("X-Caller", "c-789")
	if body, err := do(c, req); err != nil || body != "ok" {
		t.Fatalf("GET = %q, %v", body, err)
	}
	a, b := srvA.wire(), srvB.wire()
	for _, want := range []string{"\r\nX-Api-Key: k-123\r\n", "\r\nX-Tenant: acme\r\n", "\r\nAuthorization: Bearer dyn-456\r\n", "\r\nX-Caller: c-789\r\n"} {
		if !strings.Contains(a, want) {
			t.Errorf("origin A did not get %q; wire:\n%s", strings.TrimSpace(want), a)
		}
	}
	if !strings.HasPrefix(b, "GET /landing ") {
		t.Fatalf("origin B did not get the redirected request; wire:\n%s", b)
	}
	for _, secret := range []string{"k-123", "acme", "dyn-456", "X-Api-Key", "X-Tenant", "Authorization"} {
		if strings.Contains(b, secret) {
			t.Errorf("origin B got %q; wire:\n%s", secret, b)
		}
	}
	if !strings.Contains(b, "\r\nX-Caller: c-789\r\n") {
		t.Errorf("the caller's own header should follow the redirect; wire:\n%s", b)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("dynamic called %d times, want 1 (origin A only)", n)
	}
	if req.Header.Get("X-Api-Key") != "" || req.Header.Get("Authorization") != "" {
		t.Errorf("the caller's request was modified: %v", req.Header)
	}
}

// A caller that sets a configured header name on a request to another origin
// has it stripped; a request to the configured origin with default-port
// spelling differences still gets the headers.
func TestConfiguredNamesStrippedFromOtherOrigins(t *testing.T) {
	srvA := newServer(t, nil)
	srvB := newServer(t, nil)
	g := egress.New(nil)
	c := client(t, g, srvA.URL+"/mcp", map[string]string{"X-Api-Key": "k-123"}, nil)
	req, _ := http.NewRequestWithContext(context.Background(), "POST", srvB.URL+"/messages", strings.NewReader("{}"))
	req.Header.Set("x-api-key", "k-123")
	req.Header.Set("Content-Type", "application/json")
	if _, err := do(c, req); err != nil {
		t.Fatal(err)
	}
	b := srvB.wire()
	if strings.Contains(b, "k-123") || !strings.Contains(b, "Content-Type: application/json") {
		t.Errorf("origin B wire:\n%s", b)
	}
	// The configured origin spelled differently (host case, trailing dot) is
	// the same origin and gets the headers.
	res := newResolver().set("api.test", "127.0.0.1").set("api.test.", "127.0.0.1")
	gl := egress.New(&egress.Options{AllowedHosts: []string{"api.test"}, LookupIP: res.lookup})
	cl := client(t, gl, "http://api.test:"+srvA.port()+"/mcp", map[string]string{"X-Api-Key": "k-abc"}, nil)
	if _, err := get(cl, "http://API.Test.:"+srvA.port()+"/x"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(srvA.wire(), "\r\nX-Api-Key: k-abc\r\n") {
		t.Errorf("origin A did not get the header; wire:\n%s", srvA.wire())
	}
}

// Dynamic headers win over configured ones of the same case-insensitive
// name; headers the client itself sets win over configured ones.
func TestHeaderPrecedence(t *testing.T) {
	srv := newServer(t, nil)
	var calls atomic.Int32
	g := egress.New(nil)
	c := client(t, g, srv.URL, map[string]string{
		"authorization": "Bearer static-config",
		"Accept":        "text/evil",
		"X-Other":       "o",
	}, bearer("dyn", &calls))
	req, _ := http.NewRequestWithContext(context.Background(), "GET", srv.URL+"/", nil)
	req.Header.Set("Accept", "application/json, text/event-stream")
	if _, err := do(c, req); err != nil {
		t.Fatal(err)
	}
	w := srv.wire()
	if strings.Count(w, "Authorization:") != 1 || !strings.Contains(w, "\r\nAuthorization: Bearer dyn\r\n") || strings.Contains(w, "static-config") {
		t.Errorf("dynamic Authorization should replace the configured one; wire:\n%s", w)
	}
	if strings.Contains(w, "text/evil") || !strings.Contains(w, "\r\nAccept: application/json, text/event-stream\r\n") {
		t.Errorf("client-generated Accept should win; wire:\n%s", w)
	}
	if !strings.Contains(w, "\r\nX-Other: o\r\n") {
		t.Errorf("configured X-Other missing; wire:\n%s", w)
	}
}

// Client refuses bad configuration up front.
func TestClientRefusesBadConfig(t *testing.T) {
	g := egress.New(&egress.Options{AllowedHosts: []string{"ok.test"}})
	cases := []struct {
		url     string
		headers map[string]string
		rule    diag.Rule
	}{
		{"http://other.test/", nil, diag.HostNotAllowed},
		{"ftp://ok.test/", nil, diag.InvalidURL},
		{"http://ok.test/", map[string]string{"Bad Name": "v"}, diag.InvalidHeader},
		{"http://ok.test/", map[string]string{"": "v"}, diag.InvalidHeader},
		{"http://ok.test/", map[string]string{"X-A": "v\r\nX-Injected: 1"}, diag.InvalidHeader},
		{"http://ok.test/", map[string]string{"X-A": "v\x00"}, diag.InvalidHeader},
		{"http://ok.test/", map[string]string{"X-A": "1", "x-a": "2"}, diag.InvalidHeader},
		{"%zz", nil, diag.InvalidURL},
	}
	for _, tc := range cases {
		c, err := g.Client(tc.url, tc.headers, nil)
		if c != nil {
			t.Errorf("%s %v: got a client", tc.url, tc.headers)
		}
		wantRule(t, err, tc.rule)
	}
}
