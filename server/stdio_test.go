package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioChildEnv makes the test binary serve the test tools over its own
// stdin/stdout.
const stdioChildEnv = "GATEHOUSE_SERVER_TEST_STDIO"

func stdioChildMain() int {
	var eff effects
	s, err := New(Options{
		Tools:        testTools(&eff, nil),
		StdioSubject: "local-operator",
		// Whatever Identify would say, stdio has no caller identity.
		Identify:  func(context.Context, RequestInfo) (Subject, error) { return "", errors.New("never on stdio") },
		AllowTool: testAllow,
		RateLimit: &RateLimit{MaxCalls: 100, Window: time.Minute},
		Logger:    quietLogger(),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := s.ServeStdio(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func TestServeStdioSubprocess(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), stdioChildEnv+"=1")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	r := callTool(t, cs, "whoami", map[string]any{"subject": "bob"}, mcp.Meta{"subject": "bob"})
	if r.IsError || structured(t, r)["subject"] != "local-operator" {
		t.Fatalf("%+v", r.Content)
	}
	// AllowTool applies on stdio too: the local subject is not bob.
	lr, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range lr.Tools {
		if tool.Name == "secret" {
			t.Fatal("secret listed for the stdio subject")
		}
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "secret"}); err == nil {
		t.Fatal("secret callable over stdio")
	}
}

func TestRateLimitFunc(t *testing.T) {
	var eff effects
	var seen []string
	s, _ := newTestServer(t, &eff, nil, func(o *Options) {
		o.RateLimit = nil
		o.RateLimitFunc = func(_ context.Context, subject Subject, tool string) (bool, time.Duration, error) {
			seen = append(seen, string(subject)+"/"+tool)
			return subject != "bob" || tool == "initialize", 1500 * time.Millisecond, nil
		}
	})
	url := serveHTTP(t, s, nil)
	if r := callTool(t, connect(t, url, "tok-alice"), "whoami", nil, nil); r.IsError {
		t.Fatalf("%+v", r.Content)
	}
	r := callTool(t, connect(t, url, "tok-bob"), "whoami", nil, nil)
	if refusalCode(r) != "rate_limited" || structured(t, r)["retryAfterMs"] != float64(1500) {
		t.Fatalf("%+v %v", r.Content, r.StructuredContent)
	}
	if fmt.Sprint(seen) != "[alice/initialize alice/whoami bob/initialize bob/whoami]" {
		t.Fatalf("limiter saw %v", seen)
	}
}

// switchableToken is a RoundTripper whose token can change mid-session.
type switchableToken struct {
	mu    sync.Mutex
	token string
}

func (s *switchableToken) set(tok string) { s.mu.Lock(); s.token = tok; s.mu.Unlock() }

func (s *switchableToken) RoundTrip(r *http.Request) (*http.Response, error) {
	s.mu.Lock()
	tok := s.token
	s.mu.Unlock()
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	return http.DefaultTransport.RoundTrip(r)
}

// TestIdentityIsPerRequest opens a stateful session with an admin token of
// alice and goes on with a plain token of alice (same user, so the go-sdk
// keeps the session): each call is identified by its own request's token,
// never by the one that opened the session.
func TestIdentityIsPerRequest(t *testing.T) {
	var eff effects
	s, _ := newTestServer(t, &eff, nil, func(o *Options) {
		o.Identify = func(ctx context.Context, info RequestInfo) (Subject, error) {
			if info.TokenInfo == nil {
				return "", errUnplaced
			}
			sub := info.TokenInfo.UserID
			if slices.Contains(info.TokenInfo.Scopes, "admin") {
				sub += "+admin"
			}
			return Subject(sub), nil
		}
	})
	h, err := s.Handler(&HTTPOptions{Verifier: func(ctx context.Context, token string, r *http.Request) (*auth.TokenInfo, error) {
		if token == "tok-alice-admin" {
			return &auth.TokenInfo{UserID: "alice", Scopes: []string{"admin"}, Expiration: time.Now().Add(time.Hour)}, nil
		}
		return verifier(ctx, token, r)
	}})
	if err != nil {
		t.Fatal(err)
	}
	url := serveHTTPHandler(t, h)
	tok := &switchableToken{token: "tok-alice-admin"}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: tok}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got := structured(t, callTool(t, cs, "whoami", nil, nil))["subject"]; got != "alice+admin" {
		t.Fatalf("with the admin token: %v", got)
	}
	tok.set("tok-alice")
	if got := structured(t, callTool(t, cs, "whoami", nil, nil))["subject"]; got != "alice" {
		t.Fatalf("after switching to the plain token the tool saw %v", got)
	}
	// Another user cannot ride alice's session (the go-sdk's own check).
	tok.set("tok-bob")
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"}); err == nil {
		t.Fatal("bob's token was accepted on alice's session")
	}
}

// A JSON-RPC error the first call got is what its repeat gets.
func TestReplayedProtocolError(t *testing.T) {
	var eff effects
	s, _ := newTestServer(t, &eff, nil, nil)
	url := serveHTTP(t, s, &HTTPOptions{Stateless: true, JSONResponse: true})
	body := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nope","arguments":{},"_meta":{"idempotencyKey":"k"}}}`
	_, _, first := rawPost(t, url, "tok-alice", body, nil)
	_, _, again := rawPost(t, url, "tok-alice", body, nil)
	if string(first) != string(again) || !strings.Contains(string(first), `unknown tool \"nope\"`) {
		t.Fatalf("first %s\nagain %s", first, again)
	}
}
