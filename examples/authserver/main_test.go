package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// syncBuffer is an io.Writer the server's handlers and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestFlags: each way a flag can be wrong exits 2 naming the flag, and an
// address that is not loopback exits 1 before anything listens.
func TestFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-gateway", "127.0.0.1:8080/mcp"}, 2, "-gateway"},
		{[]string{"-gateway", "http://127.0.0.1:8080/mcp#x"}, 2, "-gateway"},
		{[]string{"-gateway", "ftp://127.0.0.1/mcp"}, 2, "-gateway"},
		{[]string{"-redirect", "/callback"}, 2, "-redirect"},
		{[]string{"-user", " "}, 2, "-user"},
		{[]string{"-lifetime", "0s"}, 2, "-lifetime"},
		{[]string{"-lifetime", "soon"}, 2, "-lifetime"},
		{[]string{"extra"}, 2, `"extra"`},
		{[]string{"-nope"}, 2, "-nope"},
		{[]string{"-listen", "0.0.0.0:9400"}, 1, "loopback"},
		{[]string{"-listen", "example.com:9400"}, 1, "loopback"},
	} {
		var out, errb syncBuffer
		code := run(context.Background(), c.args, &out, &errb)
		if code != c.code || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d naming %s", c.args, code, errb.String(), c.code, c.want)
		}
		if out.String() != "" {
			t.Errorf("%v: printed %q", c.args, out.String())
		}
	}
}

// TestServe: the server prints its banner (issuer, both clients, the export
// line, the auth block with the gateway and the issuer), serves its
// discovery document at the issuer, and returns 0 when its context ends.
func TestServe(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb syncBuffer
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"-listen", "127.0.0.1:0", "-gateway", "http://127.0.0.1:18080/mcp", "-secret", "s3cret"}, &out, &errb)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "requiredScopes") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	banner := out.String()
	i := strings.Index(banner, "issuer:  ")
	if i < 0 {
		cancel()
		<-done
		t.Fatalf("no issuer in %q (stderr %q)", banner, errb.String())
	}
	issuer := strings.Fields(banner[i+len("issuer:  "):])[0]
	for _, want := range []string{
		"client ID mcp-agent, secret s3cret",
		"public client ID mcp-cli, redirect URI http://127.0.0.1:8090/callback",
		"export GATEWAY_URL=http://127.0.0.1:18080/mcp ISSUER=" + issuer + " CLIENT_ID=mcp-agent CLIENT_SECRET=s3cret PUBLIC_CLIENT_ID=mcp-cli REDIRECT_URL=http://127.0.0.1:8090/callback\n",
		"auth:\n  resource: http://127.0.0.1:18080/mcp\n  oauth: {issuer: " + issuer + ", requiredScopes: [mcp]}\n",
	} {
		if !strings.Contains(banner, want) {
			t.Errorf("the banner lacks %q:\n%s", want, banner)
		}
	}
	resp, err := http.Get(issuer + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"issuer":"`+issuer+`"`) {
		t.Errorf("discovery: %d %s", resp.StatusCode, b)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d after the context ended, stderr %q", code, errb.String())
	}
}
