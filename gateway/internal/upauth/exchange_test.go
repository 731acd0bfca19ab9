package upauth

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/identity/upstream"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/authserver"
	"github.com/gatehouse-dev/gatehouse/internal/identity/oauth"
)

// recordingUpstream is a real go-sdk MCP server over streamable HTTP on
// 127.0.0.1 that requires a JWT of issuer whose audience is its URL, and
// records, for each tools/call of its tool who, the caller label the call
// names and the bearer token the request carried.
type recordingUpstream struct {
	url  string
	mu   sync.Mutex
	seen map[string]map[string]int // label -> bearer -> calls
}

func startRecording(t *testing.T, issuer string) *recordingUpstream {
	t.Helper()
	u := &recordingUpstream{seen: map[string]map[string]int{}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "recording", Version: "1"}, nil)
	type in struct {
		Label string `json:"label"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "who"}, func(_ context.Context, req *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		tok, _ := strings.CutPrefix(req.Extra.Header.Get("Authorization"), "Bearer ")
		u.mu.Lock()
		if u.seen[a.Label] == nil {
			u.seen[a.Label] = map[string]int{}
		}
		u.seen[a.Label][tok]++
		u.mu.Unlock()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
	})
	ts := httptest.NewUnstartedServer(nil)
	u.url = "http://" + ts.Listener.Addr().String() + "/mcp"
	v, err := oauth.New(&oauth.Options{Issuer: issuer, Audience: u.url})
	if err != nil {
		t.Fatal(err)
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if _, err := v.Verify(r.Context(), tok); err != nil {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
	ts.Start()
	t.Cleanup(func() {
		ts.Close()
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
	})
	return u
}

// TestExchangedTokenPerCall: one subject calls an exchange server with two
// caller tokens at once (the same client, one narrowly and one broadly
// scoped, so two exchanged tokens on the subject's one upstream session).
// Every tools/call reaches the upstream with the token exchanged for its
// own caller token, never the other call's: the exchanged token travels
// with the call, not in the session it shares.
func TestExchangedTokenPerCall(t *testing.T) {
	as := authserver.Start(t, authserver.Options{Clients: []authserver.Client{
		{ID: "agent", Secret: "s3cret", Subject: "agent-7"},
		{ID: "gw", Secret: "gw-secret", Exchange: true},
	}})
	up := startRecording(t, as.Issuer())
	m, err := New(&Options{Servers: []Server{{Name: "up", URL: up.url, Mode: Exchange, TokenURL: as.TokenURL(),
		ClientID: "gw", ClientSecret: "gw-secret", Scopes: []string{"mcp"}}}, Tokens: &upstream.MemoryTokens{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	ctx := context.Background()
	callers := map[string]string{}
	for label, scopes := range map[string][]string{"narrow": {"mcp", "read"}, "broad": {"mcp", "read", "write", "admin"}} {
		tok, err := as.Token(ctx, "agent", "s3cret", "http://gateway.test/mcp", scopes...)
		if err != nil {
			t.Fatal(err)
		}
		callers[label] = tok
	}
	// One call each first: the exchanges are made (and cached) one at a
	// time, so that every later call of a caller is sent with one token.
	for label, tok := range callers {
		if _, err := m.CallTool(ctx, "up", "agent-7", tok, &mcp.CallToolParams{Name: "who", Arguments: map[string]any{"label": label}}); err != nil {
			t.Fatal(err)
		}
	}
	const perCaller = 60
	var wg sync.WaitGroup
	errs := make(chan error, 2*perCaller)
	for i := range perCaller {
		for label, tok := range callers {
			wg.Go(func() {
				res, err := m.CallTool(ctx, "up", "agent-7", tok, &mcp.CallToolParams{Name: "who", Arguments: map[string]any{"label": label}})
				if err == nil && res.IsError {
					err = fmt.Errorf("tool error: %+v", res.Content)
				}
				if err != nil {
					errs <- fmt.Errorf("%s call %d: %w", label, i, err)
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	s := m.servers["up"]
	up.mu.Lock()
	defer up.mu.Unlock()
	for label, tok := range callers {
		want, err := m.exchange(ctx, s, "agent-7", tok) // from the cache: the token its calls were sent with
		if err != nil {
			t.Fatal(err)
		}
		if len(up.seen[label]) != 1 || up.seen[label][want] != perCaller+1 {
			wrong := 0
			for b, n := range up.seen[label] {
				if b != want {
					wrong += n
				}
			}
			t.Errorf("%s: %d of %d calls reached the upstream with another token than the one exchanged for their caller's", label, wrong, perCaller+1)
		}
	}
	if as.Exchanges() != 2 {
		t.Errorf("exchanges: %d, want 2 (one per caller token)", as.Exchanges())
	}
}
