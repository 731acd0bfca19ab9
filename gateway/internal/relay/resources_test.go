package relay

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/toolset"
)

// routedServer is a real go-sdk server over streamable HTTP on 127.0.0.1
// with one tool, the given resources (each read answers "<name>:<uri>"),
// one template and one prompt.
type routedServer struct {
	srv    *mcp.Server
	url    string
	mu     sync.Mutex
	unsubs []string
}

func newRoutedServer(t *testing.T, name string, uris ...string) *routedServer {
	t.Helper()
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
	rs.url = serveHTTP(t, rs.srv)
	return rs
}

func (rs *routedServer) server(name string) toolset.Server { return remote(name, rs.url) }

func (rs *routedServer) unsubscribed() []string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	out := slices.Clone(rs.unsubs)
	slices.Sort(out)
	return out
}

func readText(t *testing.T, r *Relay, uri string, allow allowFunc) (string, error) {
	t.Helper()
	res, err := r.readResource(ctxT(t), nil, &mcp.ReadResourceParams{URI: uri}, allow, asker{})
	if err != nil {
		return "", err
	}
	return res.Contents[0].Text, nil
}

func names(ps []*mcp.Prompt) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

func TestForwardRouting(t *testing.T) {
	a := newRoutedServer(t, "a", "x://only-a", "x://both")
	b := newRoutedServer(t, "b", "x://only-b", "x://both")
	r := openRelay(t, []toolset.Server{a.server("a"), b.server("b")}, nil, nil)
	ctx := ctxT(t)

	rs, err := r.listResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, res := range rs {
		uris = append(uris, res.URI)
	}
	// x://both is published by two servers: withheld from both.
	if got := strings.Join(uris, ","); got != "x://only-a,x://only-b" {
		t.Fatalf("resources = %s", got)
	}
	for uri, want := range map[string]string{"x://only-a": "a:x://only-a", "x://only-b": "b:x://only-b", "a://item/5": "a:a://item/5", "b://item/6": "b:b://item/6"} {
		if got, err := readText(t, r, uri, nil); err != nil || got != want {
			t.Errorf("read %s = %q, %v; want %q", uri, got, err, want)
		}
	}
	for _, uri := range []string{"x://both", "x://nowhere", "c://item/1"} {
		if got, err := readText(t, r, uri, nil); err == nil {
			t.Errorf("read %s = %q, want resource-not-found", uri, got)
		}
	}

	// Authorization: a caller allowed only b neither lists nor reads a's.
	onlyB := allowFunc(func(s string) bool { return s == "b" })
	rs, err = r.listResources(ctx, onlyB)
	if err != nil || len(rs) != 1 || rs[0].URI != "x://only-b" {
		t.Fatalf("resources for b only = %v, %v", rs, err)
	}
	for _, uri := range []string{"x://only-a", "a://item/1"} {
		if _, err := readText(t, r, uri, onlyB); err == nil {
			t.Errorf("read %s through a filter hiding a succeeded", uri)
		}
	}
	tl, err := r.listResourceTemplates(ctx, onlyB)
	if err != nil || len(tl) != 1 || tl[0].URITemplate != "b://item/{id}" {
		t.Fatalf("templates for b only = %v, %v", tl, err)
	}

	// Prompts are projected like tools and routed back to their server.
	ps, err := r.listPrompts(ctx, nil)
	if err != nil || len(ps) != 2 || ps[0].Name != "a__greet" || ps[1].Name != "b__greet" {
		t.Fatalf("prompts = %v, %v", ps, err)
	}
	gp, err := r.getPrompt(ctx, nil, &mcp.GetPromptParams{Name: "b__greet"}, nil, asker{})
	if err != nil || gp.Messages[0].Content.(*mcp.TextContent).Text != "from b" {
		t.Fatalf("get b__greet = %v, %v", gp, err)
	}
	if _, err := r.getPrompt(ctx, nil, &mcp.GetPromptParams{Name: "b__greet"}, allowFunc(func(s string) bool { return s == "a" }), asker{}); err == nil {
		t.Fatal("got a hidden server's prompt")
	}
	if _, err := r.getPrompt(ctx, nil, &mcp.GetPromptParams{Name: "greet"}, nil, asker{}); err == nil {
		t.Fatal("got a prompt by its remote name")
	}
}

func TestForwardPromptCollisionWithheld(t *testing.T) {
	empty := ""
	ra, rb := newRoutedServer(t, "a"), newRoutedServer(t, "b")
	a, b := ra.server("a"), rb.server("b")
	a.Prefix = &empty
	r := openRelay(t, []toolset.Server{a, b}, nil, nil)
	ps, err := r.listPrompts(ctxT(t), nil)
	// a's "greet" alone (prefix ""), b's as b__greet.
	if err != nil || len(ps) != 2 || ps[0].Name != "b__greet" || ps[1].Name != "greet" {
		t.Fatalf("prompts = %v, %v", names(ps), err)
	}
	if gp, err := r.getPrompt(ctxT(t), nil, &mcp.GetPromptParams{Name: "greet"}, nil, asker{}); err != nil || gp.Messages[0].Content.(*mcp.TextContent).Text != "from a" {
		t.Fatalf("get greet = %v, %v", gp, err)
	}

	b.Prefix = &empty
	r = openRelay(t, []toolset.Server{a, b}, nil, nil)
	ps, err = r.listPrompts(ctxT(t), nil)
	// Both project "greet": withheld from both.
	if err != nil || len(ps) != 0 {
		t.Fatalf("colliding prompts listed: %v, %v", names(ps), err)
	}
	if _, err := r.getPrompt(ctxT(t), nil, &mcp.GetPromptParams{Name: "greet"}, nil, asker{}); err == nil {
		t.Fatal("got a colliding prompt")
	}
	// Completion refers to prompts by projected name: withheld too.
	if _, err := r.complete(ctxT(t), nil, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "greet"}}, nil, asker{}); err == nil {
		t.Fatal("completed a colliding prompt")
	}
}

// TestForwardCallerIsolation: a resource update reaches the sessions that
// subscribed through the relay's go-sdk server, not the others; a session
// that ends is released, its caller forgotten and its last subscription
// ended upstream; a dedicated caller's upstream session closes on release.
//
// (The toolset's per-caller ResourceUpdated handler is gone: updates now
// fan out to the go-sdk servers the relay is set up on, which track their
// sessions' subscriptions; the callers here are real client sessions.)
func TestForwardCallerIsolation(t *testing.T) {
	a := newRoutedServer(t, "a", "x://r", "x://s")
	r := openRelay(t, []toolset.Server{a.server("a")}, nil, nil)
	_, url := front(t, r, false)
	ctx := ctxT(t)

	updates := func() (chan string, *mcp.ClientOptions) {
		ch := make(chan string, 64)
		return ch, &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			ch <- req.Params.URI
		}}
	}
	ch1, o1 := updates()
	ch2, o2 := updates()
	c1, c2 := dial(t, url, "2025-11-25", o1), dial(t, url, "2025-11-25", o2)
	if err := c1.Subscribe(ctx, &mcp.SubscribeParams{URI: "x://r"}); err != nil {
		t.Fatal(err)
	}
	if rr, err := c2.ReadResource(ctx, &mcp.ReadResourceParams{URI: "x://r"}); err != nil || rr.Contents[0].Text != "a:x://r" {
		t.Fatalf("read through the front: %v, %v", rr, err)
	}
	if err := c2.Subscribe(ctx, &mcp.SubscribeParams{URI: "x://s"}); err != nil {
		t.Fatal(err)
	}
	// The update is sent again until it arrives: the sessions' standalone
	// streams open in the background.
	await := func(ch chan string, uri string) {
		t.Helper()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			if err := a.srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
				t.Fatal(err)
			}
			select {
			case got := <-ch:
				if got != uri {
					t.Fatalf("got an update of %q, want %q", got, uri)
				}
				return
			case <-tick.C:
			case <-ctx.Done():
				t.Fatalf("no update of %s reached its subscriber", uri)
			}
		}
	}
	await(ch1, "x://r")
	// c2's stream is ordered: an update of x://r that wrongly reached it
	// would come before the one of x://s.
	await(ch2, "x://s")
	if slices.Contains(received(ch1), "x://s") {
		t.Fatal("a session that did not subscribe to x://s got its update")
	}

	// A dedicated caller has an upstream session of its own.
	before := sessions(a.srv)
	d := &Caller{id: "d", dedicated: true, capabilities: &mcp.ClientCapabilities{}}
	if _, err := r.readResource(ctx, d, &mcp.ReadResourceParams{URI: "x://r"}, nil, asker{}); err != nil {
		t.Fatal(err)
	}
	if n := sessions(a.srv); n != before+1 {
		t.Fatalf("upstream sessions = %d after a dedicated caller's read, want %d", n, before+1)
	}

	late := callerFor(t, r, c2)
	_ = c1.Close()
	_ = c2.Close()
	r.release("d")
	r.release("unknown") // ignored
	waitFor(t, "upstream unsubscribes after the last subscribers left", func() bool {
		return slices.Equal(a.unsubscribed(), []string{"x://r", "x://s"})
	})
	waitFor(t, "the released callers to be forgotten", func() bool { return r.leftovers() == 0 && r.liveSessions() == 0 })
	waitFor(t, "the dedicated upstream session to close", func() bool { return sessions(a.srv) == before })

	// A released caller cannot come back through its dedicated path.
	var te *toolset.Error
	if _, err := r.readResource(ctx, d, &mcp.ReadResourceParams{URI: "x://r"}, nil, asker{}); !errors.As(err, &te) || te.Code != toolset.CodeConnectionFailed {
		t.Fatalf("read by a released dedicated caller: %v, want a connection_failed error", err)
	}
	if n := sessions(a.srv); n != before {
		t.Fatalf("a released dedicated caller opened an upstream session: %d, want %d", n, before)
	}
	// A released shared caller's late request is served and registers
	// nothing.
	if err := r.subscribe(ctx, late, "x://r", nil); err != nil {
		t.Fatal(err)
	}
	if n := r.leftovers(); n != 0 {
		t.Fatalf("a released caller's late request registered %d entries", n)
	}
	// ... and leaves no subscription upstream that no release would end.
	if got := a.unsubscribed(); !slices.Equal(got, []string{"x://r", "x://r", "x://s"}) {
		t.Fatalf("upstream unsubscribes after a released caller's late subscribe: %v", got)
	}
}

// received empties ch.
func received(ch chan string) []string {
	var out []string
	for len(ch) > 0 {
		out = append(out, <-ch)
	}
	return out
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
	r := openRelay(t, []toolset.Server{remote("s", serveHTTP(t, s))}, nil, nil)
	ctx := ctxT(t)
	a, b := &Caller{id: "a"}, &Caller{id: "b"}
	if err := r.subscribe(ctx, a, "x://r", nil); err != nil {
		t.Fatal(err)
	}
	for round := range 40 {
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); _ = r.unsubscribe(ctx, a, "x://r", nil) }()
		go func() { defer wg.Done(); _ = r.subscribe(ctx, b, "x://r", nil) }()
		wg.Wait()
		if !subscribed.Load() {
			t.Fatalf("round %d: b is subscribed, the upstream is not", round)
		}
		if err := r.unsubscribe(ctx, b, "x://r", nil); err != nil || subscribed.Load() {
			t.Fatalf("round %d: unsubscribing the last: %v, upstream subscribed %v", round, err, subscribed.Load())
		}
		if err := r.subscribe(ctx, a, "x://r", nil); err != nil {
			t.Fatal(err)
		}
	}
}
