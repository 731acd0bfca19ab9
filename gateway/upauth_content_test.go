package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/gatehouse-dev/gatehouse/identity/upstream"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/authserver"
	"github.com/gatehouse-dev/gatehouse/internal/identity/oauth"
)

// contentUpstream is a real go-sdk MCP server over streamable HTTP on
// 127.0.0.1 that requires a JWT of the authorization server issued for its
// URL, like protectedUpstream, and whose content is each account's own:
// the resource doc://private/x, the resource template repo://{name}, the
// prompt whoami and the completions of its argument and of the template's
// name all answer with the sub of the token the request carried. It
// records the method and that sub of every request that reached it.
type contentUpstream struct {
	url  string
	srv  *mcp.Server
	mu   sync.Mutex
	seen []contentRequest
}

type contentRequest struct{ method, sub string }

// sub is the sub claim of an identity the verifier returned (its Subject
// is "ISSUER#sub").
func subOf(ti *auth.TokenInfo) string {
	if ti == nil {
		return "(none)"
	}
	_, sub, _ := strings.Cut(ti.UserID, "#")
	return sub
}

func startContent(t *testing.T, issuer string) *contentUpstream {
	t.Helper()
	p := &contentUpstream{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "content", Version: "1"}, &mcp.ServerOptions{
		CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{"for-" + subOf(req.Extra.TokenInfo)}}}, nil
		},
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	p.srv = srv
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echoed"}}}, nil, nil
		})
	srv.AddResource(&mcp.Resource{URI: "doc://private/x", Name: "x"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "doc of " + subOf(req.Extra.TokenInfo)}}}, nil
	})
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "repo://{name}", Name: "repo"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: req.Params.URI + " of " + subOf(req.Extra.TokenInfo)}}}, nil
	})
	srv.AddPrompt(&mcp.Prompt{Name: "whoami", Arguments: []*mcp.PromptArgument{{Name: "topic"}}}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "prompt of " + subOf(req.Extra.TokenInfo)}}}}, nil
	})
	ts := httptest.NewUnstartedServer(nil)
	base := "http://" + ts.Listener.Addr().String()
	p.url = base + "/mcp"
	v, err := oauth.New(&oauth.Options{Issuer: issuer, Audience: p.url})
	if err != nil {
		t.Fatal(err)
	}
	verify := func(ctx context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		id, err := v.Verify(ctx, tok)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
		}
		return &auth.TokenInfo{UserID: id.Subject, Scopes: id.Scopes, Expiration: id.Expiry}, nil
	}
	metaURL := base + "/.well-known/oauth-protected-resource/mcp"
	mux := http.NewServeMux()
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(
		&oauthex.ProtectedResourceMetadata{Resource: p.url, AuthorizationServers: []string{issuer}, ScopesSupported: []string{"mcp"}}))
	h := auth.RequireBearerToken(verify, nil)(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		var ti *auth.TokenInfo
		var err error // the request's own: requests run at once
		if ok {
			ti, err = verify(r.Context(), tok, r)
		}
		if !ok || err != nil {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata=%q, scope="mcp"`, metaURL))
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(body, &msg) == nil && msg.Method != "" {
			p.mu.Lock()
			p.seen = append(p.seen, contentRequest{method: msg.Method, sub: subOf(ti)})
			p.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	ts.Config.Handler = mux
	ts.Start()
	t.Cleanup(func() {
		ts.Close()
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
	})
	return p
}

// contentMethods are the requests whose answer is an account's content.
var contentMethods = []string{"resources/read", "resources/subscribe", "prompts/get", "completion/complete"}

// subsOf returns the subs of the content requests that reached p, by
// method.
func (p *contentUpstream) subsOf() map[string][]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string][]string{}
	for _, r := range p.seen {
		if slices.Contains(contentMethods, r.method) {
			out[r.method] = append(out[r.method], r.sub)
		}
	}
	return out
}

// contentSession is a caller's MCP session with the gateway.
type contentSession struct {
	t  *testing.T
	cs *mcp.ClientSession
}

func openContent(t *testing.T, url, token string) *contentSession {
	t.Helper()
	cs, err := connectAs(url+"/mcp", token)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return &contentSession{t: t, cs: cs}
}

func tctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// read reads uri: its text, or the error.
func (c *contentSession) read(uri string) (string, error) {
	res, err := c.cs.ReadResource(tctx(c.t), &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return "", err
	}
	if len(res.Contents) != 1 {
		return "", fmt.Errorf("%d contents", len(res.Contents))
	}
	return res.Contents[0].Text, nil
}

func (c *contentSession) prompt() (string, error) {
	res, err := c.cs.GetPrompt(tctx(c.t), &mcp.GetPromptParams{Name: "up__whoami", Arguments: map[string]string{"topic": "x"}})
	if err != nil {
		return "", err
	}
	if len(res.Messages) != 1 {
		return "", fmt.Errorf("%d messages", len(res.Messages))
	}
	tc, _ := res.Messages[0].Content.(*mcp.TextContent)
	if tc == nil {
		return "", errors.New("not text")
	}
	return tc.Text, nil
}

// complete completes the prompt's argument (prompt) or the template's
// name.
func (c *contentSession) complete(prompt bool) (string, error) {
	ref := &mcp.CompleteReference{Type: "ref/resource", URI: "repo://{name}"}
	arg := mcp.CompleteParamsArgument{Name: "name", Value: "r"}
	if prompt {
		ref = &mcp.CompleteReference{Type: "ref/prompt", Name: "up__whoami"}
		arg.Name = "topic"
	}
	res, err := c.cs.Complete(tctx(c.t), &mcp.CompleteParams{Ref: ref, Argument: arg})
	if err != nil {
		return "", err
	}
	return strings.Join(res.Completion.Values, ","), nil
}

func (c *contentSession) subscribe(uri string) error {
	return c.cs.Subscribe(tctx(c.t), &mcp.SubscribeParams{URI: uri})
}

// all runs every content request of the server as this caller: the
// answers, or the errors, in order (read, template read, prompt, prompt
// completion, template completion).
func (c *contentSession) all() []result {
	var out []result
	add := func(s string, err error) { out = append(out, result{s, err}) }
	add(c.read("doc://private/x"))
	add(c.read("repo://gatehouse"))
	add(c.prompt())
	add(c.complete(true))
	add(c.complete(false))
	return out
}

type result struct {
	text string
	err  error
}

// refusedRPC returns the refusal a JSON-RPC error carries in its data
// (failing the test for another error).
func refusedRPC(t *testing.T, err error) (code, connect string) {
	t.Helper()
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) {
		t.Fatalf("want a JSON-RPC error carrying a refusal, got %v", err)
	}
	var data struct {
		Code       string `json:"code"`
		ConnectURL string `json:"connectURL"`
	}
	if rpc.Code != codeRefusedRPC || json.Unmarshal(rpc.Data, &data) != nil || !strings.HasPrefix(rpc.Message, "["+data.Code+"]") {
		t.Fatalf("want code %d with the refusal as data, got %d %q %s", codeRefusedRPC, rpc.Code, rpc.Message, rpc.Data)
	}
	return data.Code, data.ConnectURL
}

// wantAuthRequired checks that every answer is auth_required with a
// connect URL of the gateway, and returns the last URL.
func wantAuthRequired(t *testing.T, gw string, rs []result) string {
	t.Helper()
	var u string
	for i, r := range rs {
		if r.err == nil {
			t.Fatalf("request %d answered %q, want auth_required", i, r.text)
		}
		code, cu := refusedRPC(t, r.err)
		if code != "auth_required" || !strings.HasPrefix(cu, gw+"/connect/up?flow=") {
			t.Fatalf("request %d: %s %s", i, code, cu)
		}
		u = cu
	}
	return u
}

// wantOwn checks that every answer is sub's.
func wantOwn(t *testing.T, sub string, rs []result) {
	t.Helper()
	want := []string{"doc of " + sub, "repo://gatehouse of " + sub, "prompt of " + sub, "for-" + sub, "for-" + sub}
	for i, r := range rs {
		if r.err != nil || r.text != want[i] {
			t.Fatalf("request %d: %q %v, want %q", i, r.text, r.err, want[i])
		}
	}
}

// startContentGateway starts the authorization server, the content
// upstream, its service connection (the account "operator") and a
// gateway with the server up in auth: user mode (extra: more of its
// entry) on a SQLite store, the token sets in tokens.
func startContentGateway(t *testing.T, tokens upstream.TokenStore, extra string) (gw string, as *authserver.Server, up *contentUpstream) {
	t.Helper()
	t.Setenv("GW_UP_SECRET", "gw-secret")
	gs := httptest.NewUnstartedServer(nil)
	gw = "http://" + gs.Listener.Addr().String()
	as = authserver.Start(t, authserver.Options{Clients: []authserver.Client{
		{ID: "gw", Secret: "gw-secret", RedirectURIs: []string{gw + "/connect/callback", serviceCallback}},
	}})
	up = startContent(t, as.Issuer())
	as.SetUser("operator")
	connectService(t, tokens, "up", up.url)
	dir := t.TempDir()
	serveAt(t, gs, dir, userConfig(dir, "sqlite:"+filepath.Join(dir, "g.db"), gw, up.url)+extra, &Options{UpstreamTokens: tokens})
	return gw, as, up
}

// TestUserModeContentPerSubject: a server with auth: user publishes a
// resource, a resource template, a prompt and completions whose answers
// are the asking account's (a real upstream reports the sub of the token
// each request carried). A caller without a connection gets auth_required
// (a JSON-RPC error whose data carries the refusal and the connect URL)
// on resources/read, prompts/get and completion/complete, and nothing of
// it reaches the upstream (not with the service connection's token);
// resources/subscribe is refused. Once alice connects, her reads, prompt
// and completions carry her own token; bob, unconnected, is still refused,
// then gets his own; the catalog (lists) still comes from the service
// connection; the service account answers no content request; after a
// revoke, alice is refused again.
func TestUserModeContentPerSubject(t *testing.T) {
	tokens := &upstream.MemoryTokens{}
	gw, as, up := startContentGateway(t, tokens, "")
	alice := openContent(t, gw, aliceToken)

	// The catalog is listed (through the service connection).
	rl, err := alice.cs.ListResources(tctx(t), nil)
	if err != nil || len(rl.Resources) != 1 || rl.Resources[0].URI != "doc://private/x" {
		t.Fatalf("resources/list: %v %v", rl, err)
	}
	pl, err := alice.cs.ListPrompts(tctx(t), nil)
	if err != nil || len(pl.Prompts) != 1 || pl.Prompts[0].Name != "up__whoami" {
		t.Fatalf("prompts/list: %v %v", pl, err)
	}

	u := wantAuthRequired(t, gw, alice.all())
	if err := alice.subscribe("doc://private/x"); err == nil || !strings.Contains(err.Error(), "sharedContent") {
		t.Fatalf("subscribe on a per-subject server: %v", err)
	}
	if seen := up.subsOf(); len(seen) != 0 {
		t.Fatalf("refused content requests reached the upstream: %v", seen)
	}

	as.SetUser("alice")
	if code := browse(t, u, aliceToken); code != http.StatusOK {
		t.Fatalf("walking alice's connect URL: %d", code)
	}
	wantOwn(t, "alice", alice.all())
	// Another session of alice's: hers too.
	wantOwn(t, "alice", openContent(t, gw, aliceToken).all())

	bob := openContent(t, gw, bobToken)
	u = wantAuthRequired(t, gw, bob.all())
	as.SetUser("bob")
	if code := browse(t, u, bobToken); code != http.StatusOK {
		t.Fatalf("walking bob's connect URL: %d", code)
	}
	wantOwn(t, "bob", bob.all())
	wantOwn(t, "alice", alice.all())
	if err := bob.subscribe("doc://private/x"); err == nil {
		t.Fatal("a connected subject's subscribe was not refused")
	}

	seen := up.subsOf()
	for _, m := range contentMethods {
		for _, sub := range seen[m] {
			if sub != "alice" && sub != "bob" {
				t.Fatalf("%s reached the upstream as %s: %v", m, sub, seen)
			}
		}
	}
	if len(seen["resources/read"]) != 8 || len(seen["resources/subscribe"]) != 0 {
		t.Fatalf("content requests upstream: %v", seen)
	}

	// Revoked: refused again, nothing sent.
	if err := tokens.DeleteToken(context.Background(), "up", "alice"); err != nil {
		t.Fatal(err)
	}
	wantAuthRequired(t, gw, alice.all())
	if n := len(up.subsOf()["resources/read"]); n != 8 {
		t.Fatalf("reads upstream after the revoke: %d", n)
	}
}

// TestUserModeSharedContent: with servers.up.sharedContent, the server's
// content is read through the service connection, for connected and
// unconnected callers alike (the operator's account answers), and
// subscriptions are held there.
func TestUserModeSharedContent(t *testing.T) {
	gw, _, up := startContentGateway(t, &upstream.MemoryTokens{}, "    sharedContent: true\n")
	alice := openContent(t, gw, aliceToken)
	wantOwn(t, "operator", alice.all())
	if err := alice.subscribe("doc://private/x"); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	seen := up.subsOf()
	if len(seen["resources/read"]) != 2 || len(seen["resources/subscribe"]) != 1 || seen["resources/subscribe"][0] != "operator" {
		t.Fatalf("content requests upstream: %v", seen)
	}
	// Tool calls stay per subject.
	res, err := alice.cs.CallTool(tctx(t), &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	connectURL(t, res)
}

// TestExchangeModeContent: a server with auth: exchange answers a caller's
// resources/read, prompts/get and completion/complete with the caller's
// exchanged token (the upstream reports the caller's sub, not the
// gateway's client), never with the gateway's own client-credentials
// token; a caller with a static token (nothing to exchange) is refused
// denied, as a JSON-RPC error, and nothing reaches the upstream.
func TestExchangeModeContent(t *testing.T) {
	t.Setenv("GW_EX_SECRET", "gw-secret")
	gs := httptest.NewUnstartedServer(nil)
	resource := "http://" + gs.Listener.Addr().String() + "/mcp"
	as := authserver.Start(t, authserver.Options{Clients: []authserver.Client{
		{ID: "agent", Secret: "s3cret", Subject: "agent-7"},
		{ID: "gw", Secret: "gw-secret", Exchange: true},
	}})
	up := startContent(t, as.Issuer())
	dir := t.TempDir()
	serveAt(t, gs, dir, fmt.Sprintf(`listen: 127.0.0.1:0
store: sqlite:%s
drift: {recheck: 0}
auth:
  resource: %s
  oauth: {issuer: %q, requiredScopes: [mcp]}
  tokens: [{sha256: %s, subject: bob}]
servers:
  up:
    type: streamable-http
    url: %q
    auth: exchange
    exchange: {tokenURL: %q, clientID: gw, clientSecretEnv: GW_EX_SECRET, scopes: [mcp]}
`, filepath.Join(dir, "g.db"), resource, as.Issuer(), sum(bobToken), up.url, as.TokenURL()), nil)
	gw := strings.TrimSuffix(resource, "/mcp")

	bob := openContent(t, gw, bobToken)
	for i, r := range bob.all() {
		if r.err == nil {
			t.Fatalf("request %d of a static token answered %q", i, r.text)
		}
		if code, _ := refusedRPC(t, r.err); code != "denied" {
			t.Fatalf("request %d: %s", i, code)
		}
	}
	if seen := up.subsOf(); len(seen) != 0 {
		t.Fatalf("refused content requests reached the upstream: %v", seen)
	}

	caller, err := as.Token(context.Background(), "agent", "s3cret", resource, "mcp", "tool:*")
	if err != nil {
		t.Fatal(err)
	}
	wantOwn(t, "agent-7", openContent(t, gw, caller).all())
	for m, subs := range up.subsOf() {
		for _, sub := range subs {
			if sub != "agent-7" {
				t.Fatalf("%s reached the upstream as %s", m, sub)
			}
		}
	}
}
