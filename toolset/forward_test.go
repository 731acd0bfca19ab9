package toolset

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// routedServer is a real go-sdk server with one tool, the given resources
// (each read answers "<name>:<uri>"), one template and one prompt.
type routedServer struct {
	srv    *mcp.Server
	mu     sync.Mutex
	unsubs []string
}

func newRoutedServer(name string, uris ...string) *routedServer {
	rs := &routedServer{}
	rs.srv = mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(_ context.Context, r *mcp.UnsubscribeRequest) error {
			rs.mu.Lock()
			rs.unsubs = append(rs.unsubs, r.Params.URI)
			rs.mu.Unlock()
			return nil
		},
	})
	mcp.AddTool(rs.srv, &mcp.Tool{Name: "noop_" + name}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
	})
	read := func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: name + ":" + r.Params.URI}}}, nil
	}
	for _, u := range uris {
		rs.srv.AddResource(&mcp.Resource{URI: u, Name: u}, read)
	}
	rs.srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: name + "://item/{id}", Name: "item"}, read)
	rs.srv.AddPrompt(&mcp.Prompt{Name: "greet"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "from " + name}}}}, nil
	})
	return rs
}

func (rs *routedServer) unsubscribed() []string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return append([]string(nil), rs.unsubs...)
}

func readText(t *testing.T, ts *Toolset, uri string, allow ServerFilter) (string, error) {
	t.Helper()
	res, err := ts.ReadResource(ctxT(t), nil, &mcp.ReadResourceParams{URI: uri}, allow)
	if err != nil {
		return "", err
	}
	return res.Contents[0].Text, nil
}

func TestForwardRouting(t *testing.T) {
	a := newRoutedServer("a", "x://only-a", "x://both")
	b := newRoutedServer("b", "x://only-b", "x://both")
	ts := open(t, []Server{inMemory("a", a.srv), inMemory("b", b.srv)}, nil)
	ctx := ctxT(t)

	rs, err := ts.ListResources(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range rs {
		uris = append(uris, r.URI)
	}
	// x://both is published by two servers: withheld from both.
	if got := strings.Join(uris, ","); got != "x://only-a,x://only-b" {
		t.Fatalf("resources = %s", got)
	}
	for uri, want := range map[string]string{"x://only-a": "a:x://only-a", "x://only-b": "b:x://only-b", "a://item/5": "a:a://item/5", "b://item/6": "b:b://item/6"} {
		if got, err := readText(t, ts, uri, nil); err != nil || got != want {
			t.Errorf("read %s = %q, %v; want %q", uri, got, err, want)
		}
	}
	for _, uri := range []string{"x://both", "x://nowhere", "c://item/1"} {
		if got, err := readText(t, ts, uri, nil); err == nil {
			t.Errorf("read %s = %q, want resource-not-found", uri, got)
		}
	}

	// Authorization: a caller allowed only b neither lists nor reads a's.
	onlyB := ServerFilter(func(s string) bool { return s == "b" })
	rs, err = ts.ListResources(ctx, nil, onlyB)
	if err != nil || len(rs) != 1 || rs[0].URI != "x://only-b" {
		t.Fatalf("resources for b only = %v, %v", rs, err)
	}
	for _, uri := range []string{"x://only-a", "a://item/1"} {
		if _, err := readText(t, ts, uri, onlyB); err == nil {
			t.Errorf("read %s through a filter hiding a succeeded", uri)
		}
	}
	tl, err := ts.ListResourceTemplates(ctx, nil, onlyB)
	if err != nil || len(tl) != 1 || tl[0].URITemplate != "b://item/{id}" {
		t.Fatalf("templates for b only = %v, %v", tl, err)
	}

	// Prompts are projected like tools and routed back to their server.
	ps, err := ts.ListPrompts(ctx, nil, nil)
	if err != nil || len(ps) != 2 || ps[0].Name != "a__greet" || ps[1].Name != "b__greet" {
		t.Fatalf("prompts = %v, %v", ps, err)
	}
	gp, err := ts.GetPrompt(ctx, nil, &mcp.GetPromptParams{Name: "b__greet"}, nil)
	if err != nil || gp.Messages[0].Content.(*mcp.TextContent).Text != "from b" {
		t.Fatalf("get b__greet = %v, %v", gp, err)
	}
	if _, err := ts.GetPrompt(ctx, nil, &mcp.GetPromptParams{Name: "b__greet"}, ServerFilter(func(s string) bool { return s == "a" })); err == nil {
		t.Fatal("got a hidden server's prompt")
	}
	if _, err := ts.GetPrompt(ctx, nil, &mcp.GetPromptParams{Name: "greet"}, nil); err == nil {
		t.Fatal("got a prompt by its remote name")
	}
}

func TestForwardPromptCollisionWithheld(t *testing.T) {
	empty := ""
	a, b := inMemory("a", newRoutedServer("a").srv), inMemory("b", newRoutedServer("b").srv)
	a.Prefix = &empty
	ts := open(t, []Server{a, b}, nil)
	ps, err := ts.ListPrompts(ctxT(t), nil, nil)
	// a's "greet" alone (prefix ""), b's as b__greet.
	if err != nil || len(ps) != 2 || ps[0].Name != "b__greet" || ps[1].Name != "greet" {
		t.Fatalf("prompts = %v, %v", names(ps), err)
	}

	b.Prefix = &empty
	ts = open(t, []Server{a, b}, nil)
	ps, err = ts.ListPrompts(ctxT(t), nil, nil)
	// Both project "greet": withheld from both.
	if err != nil || len(ps) != 0 {
		t.Fatalf("colliding prompts listed: %v, %v", names(ps), err)
	}
	if _, err := ts.GetPrompt(ctxT(t), nil, &mcp.GetPromptParams{Name: "greet"}, nil); err == nil {
		t.Fatal("got a colliding prompt")
	}
	// Completion refers to prompts by projected name: withheld too.
	if _, err := ts.Complete(ctxT(t), nil, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "greet"}}, nil); err == nil {
		t.Fatal("completed a colliding prompt")
	}
}

func names(ps []*mcp.Prompt) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

// TestForwardCallerIsolation: a resource update reaches the callers that
// subscribed, not the others; a released caller is forgotten and its last
// subscription is ended upstream; a dedicated caller's upstream session
// closes on release.
func TestForwardCallerIsolation(t *testing.T) {
	a := newRoutedServer("a", "x://r")
	ts := open(t, []Server{inMemory("a", a.srv)}, nil)
	ctx := ctxT(t)

	got := map[string]chan string{}
	caller := func(id string, dedicated bool) *Caller {
		ch := make(chan string, 4)
		got[id] = ch
		return &Caller{ID: id, Dedicated: dedicated, Capabilities: &mcp.ClientCapabilities{},
			Handlers: CallerHandlers{ResourceUpdated: func(_ context.Context, p *mcp.ResourceUpdatedNotificationParams) { ch <- p.URI }}}
	}
	c1, c2 := caller("c1", false), caller("c2", false)
	if err := ts.Subscribe(ctx, c1, "x://r", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.ReadResource(ctx, c2, &mcp.ReadResourceParams{URI: "x://r"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := a.srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "x://r"}); err != nil {
		t.Fatal(err)
	}
	select {
	case u := <-got["c1"]:
		if u != "x://r" {
			t.Fatalf("c1 got %q", u)
		}
	case <-ctx.Done():
		t.Fatal("the subscriber got no update")
	}
	if len(got["c2"]) != 0 {
		t.Fatal("a caller that did not subscribe got the update")
	}

	// A dedicated caller has an upstream session of its own.
	sessions := func() int {
		n := 0
		for range a.srv.Sessions() {
			n++
		}
		return n
	}
	before := sessions()
	d := caller("d", true)
	if _, err := ts.ReadResource(ctx, d, &mcp.ReadResourceParams{URI: "x://r"}, nil); err != nil {
		t.Fatal(err)
	}
	if n := sessions(); n != before+1 {
		t.Fatalf("upstream sessions = %d after a dedicated caller's read, want %d", n, before+1)
	}

	ts.Release("c1")
	ts.Release("c2")
	ts.Release("d")
	ts.Release("unknown") // ignored
	// In memory the go-sdk negotiates 2026-07-28: the subscription is a
	// subscriptions/listen stream, ended asynchronously.
	deadline := time.Now().Add(10 * time.Second)
	for u := a.unsubscribed(); len(u) != 1 || u[0] != "x://r"; u = a.unsubscribed() {
		if time.Now().After(deadline) {
			t.Fatalf("upstream unsubscribes after the last subscriber left = %v", u)
		}
		time.Sleep(10 * time.Millisecond)
	}
	ts.fwd.mu.Lock()
	left := len(ts.fwd.callers) + len(ts.fwd.subs) + len(ts.fwd.owners) + len(ts.fwd.progress)
	ts.fwd.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d entries of released callers remain", left)
	}
	deadline = time.Now().Add(10 * time.Second)
	for sessions() != before {
		if time.Now().After(deadline) {
			t.Fatalf("upstream sessions = %d after release, want %d", sessions(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A released caller cannot come back through its dedicated path.
	var te *Error
	if _, err := ts.ReadResource(ctx, d, &mcp.ReadResourceParams{URI: "x://r"}, nil); !errors.As(err, &te) || te.Code != CodeConnectionFailed {
		t.Fatalf("read by a released dedicated caller: %v, want a connection_failed error", err)
	}
	// A released shared caller's late request is served and registers
	// nothing.
	if err := ts.Subscribe(ctx, c2, "x://r", nil); err != nil {
		t.Fatal(err)
	}
	ts.fwd.mu.Lock()
	left = len(ts.fwd.callers) + len(ts.fwd.subs)
	ts.fwd.mu.Unlock()
	if left != 0 {
		t.Fatalf("a released caller's late request registered %d entries", left)
	}
}

// TestSubscribeRacesLastUnsubscribe: the last subscriber leaving while
// another arrives never leaves the upstream unsubscribed with a
// subscriber registered (the unsubscribe and the subscribe take turns).
func TestSubscribeRacesLastUnsubscribe(t *testing.T) {
	var subscribed atomic.Bool
	s := mcp.NewServer(&mcp.Implementation{Name: "subs", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(context.Context, *mcp.SubscribeRequest) error { subscribed.Store(true); return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error {
			// A slow unsubscribe: a subscribe sent meanwhile would be
			// undone by it.
			time.Sleep(2 * time.Millisecond)
			subscribed.Store(false)
			return nil
		},
	})
	s.AddResource(&mcp.Resource{URI: "x://r", Name: "r"}, func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "r"}}}, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(hs.Close)
	ts := open(t, []Server{remote("s", hs.URL+"/mcp", plugin.TransportStreamableHTTP)}, nil)
	ctx := ctxT(t)
	a, b := &Caller{ID: "a"}, &Caller{ID: "b"}
	if err := ts.Subscribe(ctx, a, "x://r", nil); err != nil {
		t.Fatal(err)
	}
	for round := range 40 {
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); _ = ts.Unsubscribe(ctx, a, "x://r", nil) }()
		go func() { defer wg.Done(); _ = ts.Subscribe(ctx, b, "x://r", nil) }()
		wg.Wait()
		if !subscribed.Load() {
			t.Fatalf("round %d: b is subscribed, the upstream is not", round)
		}
		if err := ts.Unsubscribe(ctx, b, "x://r", nil); err != nil || subscribed.Load() {
			t.Fatalf("round %d: unsubscribing the last: %v, upstream subscribed %v", round, err, subscribed.Load())
		}
		if err := ts.Subscribe(ctx, a, "x://r", nil); err != nil {
			t.Fatal(err)
		}
	}
}
