package gateway

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/config"
	"github.com/gatehouse-dev/gatehouse/server"
)

// getReadyz GETs url with token ("" for none); a token with a space is
// sent as the whole Authorization header.
func getReadyz(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case strings.Contains(token, " "):
		req.Header.Set("Authorization", token)
	case token != "":
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// TestReadyzDetailNeedsAToken: /readyz without a valid token says ready or
// not and nothing more (no server name, no plugin directory); a token
// holder and the metrics listener get the detail.
func TestReadyzDetailNeedsAToken(t *testing.T) {
	up := newRawUpstream(t)
	g, mcpURL := rawGateway(t, up, "plugins: [./secret-plugin-dir]\n")
	url := strings.TrimSuffix(mcpURL, "/mcp") + "/readyz"
	for _, tok := range []string{"", "not-a-token", "alice-token-", "Basic alice-token", "Bearer ", "Bearer  alice-token",
		"Token alice-token", "alice-token Bearer"} { // (net/http trims a header's trailing spaces)
		status, body := getReadyz(t, url, tok)
		if status != http.StatusOK || body != "{\"ready\":true}\n" {
			t.Errorf("token %q: %d %q, want 200 {\"ready\":true} alone", tok, status, body)
		}
	}
	if _, body := getReadyz(t, url, "bearer alice-token"); !strings.Contains(body, `"name":"up"`) {
		t.Errorf("the scheme is case-insensitive (RFC 7235): %s", body)
	}
	status, body := getReadyz(t, url, "bob-token")
	if status != http.StatusOK || !strings.Contains(body, `"name":"up"`) || !strings.Contains(body, "secret-plugin-dir") {
		t.Errorf("with a token: %d %s, want the servers and plugins", status, body)
	}
	ms := httptest.NewServer(g.MetricsHandler())
	defer ms.Close()
	status, body = getReadyz(t, ms.URL+"/readyz", "")
	if status != http.StatusOK || !strings.Contains(body, `"name":"up"`) || !strings.Contains(body, "secret-plugin-dir") {
		t.Errorf("metrics listener: %d %s, want the detail", status, body)
	}
	if status, _ := getReadyz(t, ms.URL+"/metrics", ""); status != http.StatusOK {
		t.Errorf("metrics listener /metrics: %d", status)
	}
}

// connectAs opens a go-sdk client session on url with token, without
// listing anything.
func connectAs(url, token string) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	return c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: withBearer{token}}}, statefulSession())
}

// refusedInit connects with token and returns the JSON-RPC error the
// initialize was refused with (nil when it was not: the session is closed).
func refusedInit(t *testing.T, url, token string) (*jsonrpc.Error, error) {
	t.Helper()
	cs, err := connectAs(url, token)
	if err == nil {
		_ = cs.Close()
		return nil, errors.New("the session opened")
	}
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) {
		return nil, err
	}
	return rpc, err
}

// TestSessionsPerSubject: a token holder opening sessions in a loop gets
// 16; the 17th initialize is refused with a JSON-RPC error its go-sdk
// client reports with the reason; the 16 keep working, another subject is
// not affected, and closing one (DELETE) frees a slot at once.
func TestSessionsPerSubject(t *testing.T) {
	up := newRawUpstream(t)
	_, url := rawGateway(t, up, "")
	var open []*mcp.ClientSession
	t.Cleanup(func() {
		for _, cs := range open {
			_ = cs.Close()
		}
	})
	for i := range config.DefaultMaxSessionsPerSubject {
		cs, err := connectAs(url, "alice-token")
		if err != nil {
			t.Fatalf("session %d: %v", i+1, err)
		}
		open = append(open, cs)
	}
	rpc, err := refusedInit(t, url, "alice-token")
	if rpc == nil || rpc.Code != server.CodeSessionLimit || !strings.Contains(rpc.Message, "too many open sessions") {
		t.Fatalf("17th session: %v, want a JSON-RPC error %d saying why", err, server.CodeSessionLimit)
	}
	if !strings.Contains(err.Error(), "too many open sessions") {
		t.Errorf("the client's error does not carry the reason: %v", err)
	}
	for _, cs := range []*mcp.ClientSession{open[0], open[len(open)-1]} {
		r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "still here"}})
		if err != nil || r.IsError || r.Content[0].(*mcp.TextContent).Text != "still here" {
			t.Fatalf("an open session stopped working: %+v %v", r, err)
		}
	}
	bob, err := connectAs(url, "bob-token")
	if err != nil {
		t.Fatalf("another subject is refused: %v", err)
	}
	_ = bob.Close()
	if err := open[3].Close(); err != nil {
		t.Fatal(err)
	}
	open = slices.Delete(open, 3, 4)
	cs, err := connectAs(url, "alice-token")
	if err != nil {
		t.Fatalf("closing a session did not free its slot: %v", err)
	}
	open = append(open, cs)
}

// TestSessionSlotFreedByIdleTimeout: a session closed by the idle timeout
// frees its slot (sessions.maxPerSubject: 1).
func TestSessionSlotFreedByIdleTimeout(t *testing.T) {
	up := newRawUpstream(t)
	_, url := rawGateway(t, up, "sessions: {maxPerSubject: 1}\n", func(g *Gateway) { g.idle = time.Second })
	first, err := connectAs(url, "alice-token")
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if rpc, err := refusedInit(t, url, "alice-token"); rpc == nil || rpc.Code != server.CodeSessionLimit {
		t.Fatalf("second session: %v, want the session limit", err)
	}
	var rpc *jsonrpc.Error
	// The first session idles out; then a new one gets its slot.
	deadline := time.Now().Add(20 * time.Second)
	for {
		cs, err := connectAs(url, "alice-token")
		if err == nil {
			_ = cs.Close()
			return
		}
		// A new session that itself idles out before its initialized
		// (a machine stalled for the idle timeout) is tried again.
		again := errors.As(err, &rpc) && rpc.Code == server.CodeSessionLimit || strings.Contains(err.Error(), "session not found")
		if !again || time.Now().After(deadline) {
			t.Fatalf("the idle session's slot was not freed: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestInitializeSpendsTheRateLimit: every initialize spends one call of
// the subject's rate limit; past it, initialize is refused as rate_limited
// (a JSON-RPC error with the refusal's fields) and calls are too.
func TestInitializeSpendsTheRateLimit(t *testing.T) {
	up := newRawUpstream(t)
	_, url := rawGateway(t, up, "rateLimit: {maxCalls: 3, window: 1h}\n")
	for i := range 3 {
		cs, err := connectAs(url, "alice-token")
		if err != nil {
			t.Fatalf("session %d: %v", i+1, err)
		}
		defer cs.Close()
	}
	rpc, err := refusedInit(t, url, "alice-token")
	if rpc == nil || rpc.Code != codeRateLimitedRPC || !strings.Contains(string(rpc.Data), `"code":"rate_limited"`) {
		t.Fatalf("4th initialize: %v, want rate_limited", err)
	}
	bob, err := connectAs(url, "bob-token")
	if err != nil {
		t.Fatalf("bob shares no quota with alice: %v", err)
	}
	_ = bob.Close()
}

// TestSessionsConfig: sessions.maxPerSubject defaults to 16 with auth and
// to no cap without it (every loopback caller is the one subject "local"),
// where an explicit one applies; a negative one, or a negative HTTP limit,
// is a config error naming the key.
func TestSessionsConfig(t *testing.T) {
	c, err := ParseConfig([]byte("listen: 127.0.0.1:0\nauth: {tokens: [{sha256: "+hashOf("t0ken")+", subject: alice}]}\n"), "g.yaml", t.TempDir())
	if err != nil || c.Sessions.MaxPerSubject != 16 {
		t.Fatalf("default with auth: %+v %v", c.Sessions, err)
	}
	c, err = ParseConfig([]byte("listen: 127.0.0.1:0\n"), "g.yaml", t.TempDir())
	if err != nil || c.Sessions.MaxPerSubject != 0 {
		t.Fatalf("default without auth: %+v %v", c.Sessions, err)
	}
	c, err = ParseConfig([]byte("listen: 127.0.0.1:0\nsessions: {maxPerSubject: 4}\n"), "g.yaml", t.TempDir())
	if err != nil || c.Sessions.MaxPerSubject != 4 {
		t.Fatalf("explicit without auth: %+v %v", c.Sessions, err)
	}
	_, err = ParseConfig([]byte("sessions: {maxPerSubject: -1}\n"), "g.yaml", t.TempDir())
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "sessions.maxPerSubject" {
		t.Fatalf("negative: %v", err)
	}
	if _, err = ParseConfig([]byte("sessions: {maxPerSubjet: 3}\n"), "g.yaml", t.TempDir()); err == nil {
		t.Fatal("a misspelt key was accepted")
	}
	for _, key := range []string{"readTimeout: -1s", "writeTimeout: -1s", "connIdleTimeout: -1s", "maxConnections: -1"} {
		_, err = ParseConfig([]byte("http: {"+key+"}\n"), "g.yaml", t.TempDir())
		if !errors.As(err, &ce) || ce.Field != "http."+strings.Split(key, ":")[0] {
			t.Errorf("%s: %v", key, err)
		}
	}
	for _, bad := range []string{"http: {readTimeout: soon}\n", "http: {maxConnections: many}\n"} {
		if _, err = ParseConfig([]byte(bad), "g.yaml", t.TempDir()); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}

// TestServeProtectsItself: Serve applies the http limits of the config: a
// client that never finishes its body is cut off (http.readTimeout), an
// idle keep-alive connection that never authenticated is closed, and a
// token holder's session is served throughout.
func TestServeProtectsItself(t *testing.T) {
	up := newRawUpstream(t)
	g, _ := rawGateway(t, up, "http: {readTimeout: 1s, writeTimeout: 1s, connIdleTimeout: 500ms, maxConnections: 8}\n")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx, ln) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	addr := ln.Addr().String()
	closed := func(c net.Conn) bool { // by the server, within a generous bound
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
		_, err := io.Copy(io.Discard, c)
		var ne net.Error
		return !(errors.As(err, &ne) && ne.Timeout())
	}

	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	_, _ = io.WriteString(slow, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer alice-token\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 500\r\n\r\n{")
	if !closed(slow) {
		t.Error("a body never finished kept its connection")
	}

	anon, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	_, _ = io.WriteString(anon, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	_ = anon.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(anon), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	if !closed(anon) {
		t.Error("an idle unauthenticated keep-alive connection was kept open")
	}

	cs := session(t, "http://"+addr+"/mcp", "alice-token")
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "served"}})
	if err != nil || r.IsError {
		t.Fatalf("the token holder was not served: %+v %v", r, err)
	}
	_ = cs.Close()
}

// FuzzVerified: /readyz's detail is given exactly when the Authorization
// header is "Bearer" (any case), one space, and a configured token.
func FuzzVerified(f *testing.F) {
	for _, s := range []string{"Bearer alice-token", "bearer alice-token", "Bearer  alice-token", "Bearer alice-token ",
		"Basic alice-token", "Bearer", "", "Bearer \x00", "BEARER alice-token"} {
		f.Add(s)
	}
	au := staticAuthenticator(&config.Auth{Tokens: []config.Token{{SHA256: hashOf("alice-token"), Subject: "alice"}}})
	f.Fuzz(func(t *testing.T, header string) {
		r := httptest.NewRequest(http.MethodGet, "/readyz", nil)
		r.Header["Authorization"] = []string{header}
		want := len(header) == len("Bearer alice-token") && strings.EqualFold(header[:7], "Bearer ") && header[7:] == "alice-token"
		if got := verified(r, au.Verify, nil); got != want {
			t.Fatalf("verified(%q) = %v, want %v", header, got, want)
		}
	})
}
