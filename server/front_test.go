package server

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestFrontServesAClient: a go-sdk client's session (initialize, calls,
// the end) is served by the front, with the effects counted once each.
func TestFrontServesAClient(t *testing.T) {
	eff := &effects{}
	s, err := New(Options{Tools: testTools(eff, nil), Identify: identify, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	url, _, hs := serveLimited(t, s, nil)
	cs := connect(t, url, "tok-alice")
	for i := range 20 {
		res := callTool(t, cs, "charge", map[string]any{"account": "a", "amount": i}, nil)
		if got := structured(t, res)["subject"]; got != "alice" {
			t.Fatalf("call %d: subject %v", i, got)
		}
	}
	if n := eff.total(); n != 20 {
		t.Errorf("%d effects, want 20", n)
	}
	if n := hs.front.Served(); n < 22 { // initialize, initialized, 20 calls
		t.Errorf("the front served %d requests, want at least 22", n)
	}
}

// TestFrontHandsTLSOn: a TLS connection (ALPN may agree on HTTP/2 in its
// handshake) is net/http's to serve whole; its requests are answered.
func TestFrontHandsTLSOn(t *testing.T) {
	ts := httptest.NewUnstartedServer(http.NotFoundHandler())
	ts.StartTLS() // only for its certificate and a client that trusts it
	defer ts.Close()
	hs, err := NewHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "over tls")
	}), nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := ts.TLS.Clone()
	cfg.NextProtos = []string{"http/1.1"}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(tls.NewListener(ln, cfg)) }()
	defer func() {
		_ = hs.Close()
		<-done
	}()
	c := ts.Client()
	defer c.CloseIdleConnections()
	for range 2 {
		resp, err := c.Post("https://"+ln.Addr().String()+"/mcp", "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "over tls" {
			t.Fatalf("answer %q", body)
		}
	}
	if hs.front.Served() != 0 || hs.front.Handed() != 1 {
		t.Errorf("served %d, handed %d: want the one TLS connection handed on", hs.front.Served(), hs.front.Handed())
	}
}
