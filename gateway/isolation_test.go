package gateway

//lint:file-ignore SA1019 a caller here advertises sampling (deprecated by SEP-2577, still in 2025-11-25) to get upstream sessions of its own.

import (
	"bytes"
	"context"
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

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/telemetry"
)

// hostileHTTP serves a real go-sdk server over stateful streamable HTTP on
// 127.0.0.1, and writes, into the SSE answer of a POST whose body inject
// maps to messages, those raw JSON-RPC messages before the answer's first
// bytes: a server that sends whatever notifications it likes.
func hostileHTTP(t *testing.T, srv *mcp.Server, inject func(body []byte) []string) string {
	t.Helper()
	inner := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if msgs := inject(body); len(msgs) > 0 {
				w = &injectWriter{ResponseWriter: w, msgs: msgs}
			}
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs.URL
}

type injectWriter struct {
	http.ResponseWriter
	msgs []string
	done bool
}

func (w *injectWriter) Write(p []byte) (int, error) {
	if !w.done {
		w.done = true
		if strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
			for _, m := range w.msgs {
				if _, err := fmt.Fprintf(w.ResponseWriter, "event: message\ndata: %s\n\n", m); err != nil {
					return 0, err
				}
			}
		}
	}
	return w.ResponseWriter.Write(p)
}

func (w *injectWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *injectWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// isoGateway runs a real gateway over HTTP on 127.0.0.1 in front of the
// named streamable HTTP upstreams; it returns the gateway and its MCP
// endpoint.
func isoGateway(t *testing.T, extra string, upstreams map[string]string) (*Gateway, string) {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	fmt.Fprintf(&b, "listen: 127.0.0.1:0\nstore: sqlite:%s\n%sservers:\n", filepath.Join(dir, "g.db"), extra)
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range upstreams {
			if !yield(k) {
				return
			}
		}
	}) {
		fmt.Fprintf(&b, "  %s:\n    type: streamable-http\n    url: %s\n", name, upstreams[name])
	}
	cfg, err := ParseConfig([]byte(b.String()), filepath.Join(dir, "gatehouse.yaml"), dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g, err := New(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	h, err := g.Handler()
	if err != nil {
		t.Fatal(err)
	}
	gs := httptest.NewServer(h)
	t.Cleanup(gs.Close)
	return g, gs.URL + "/mcp"
}

func isoDial(t *testing.T, url string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "caller", Version: "1"}, opts).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func isoWait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type none struct{}

func okText(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// TestProgressReachesOnlyItsCall: server x sends notifications/progress
// with the token it observed on caller B's call to server y (and with
// the tokens a sequential scheme would have used). B never sees them; y's
// own progress reaches B; every injected notification is dropped and
// counted in gatehouse_notifications_dropped_total.
func TestProgressReachesOnlyItsCall(t *testing.T) {
	// Both senders: the go-sdk client's and the byte sender's (which
	// carries x's inject call, sends no progress token of its own, and
	// reads the forged progress on that call's stream): both drop and
	// count, by the server that sent it.
	for _, bytePath := range []bool{false, true} {
		t.Run(fmt.Sprintf("bytePath=%v", bytePath), func(t *testing.T) { testProgressIsolation(t, bytePath) })
	}
}

func testProgressIsolation(t *testing.T, bytePath bool) {
	ys := mcp.NewServer(&mcp.Implementation{Name: "y", Version: "1"}, nil)
	tokens := make(chan any, 1)
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	mcp.AddTool(ys, &mcp.Tool{Name: "slow"}, func(ctx context.Context, r *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
		tok := r.Params.GetProgressToken()
		tokens <- tok
		_ = r.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Message: "y-1"})
		<-release
		_ = r.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 2, Message: "y-2"})
		return okText("slow done"), nil, nil
	})
	xs := mcp.NewServer(&mcp.Implementation{Name: "x", Version: "1"}, nil)
	mcp.AddTool(xs, &mcp.Tool{Name: "inject"}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		return okText("injected"), nil, nil
	})
	var mu sync.Mutex
	var forged []string
	xURL := hostileHTTP(t, xs, func(body []byte) []string {
		if !bytes.Contains(body, []byte(`"name":"inject"`)) {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		return forged
	})
	g, url := isoGateway(t, fmt.Sprintf("http: {bytePath: %v}\n", bytePath), map[string]string{"x": xURL, "y": hostileHTTP(t, ys, func([]byte) []string { return nil })})

	var pmu sync.Mutex
	var seen []string
	b := isoDial(t, url, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		pmu.Lock()
		seen = append(seen, fmt.Sprintf("%v:%s", r.Params.ProgressToken, r.Params.Message))
		pmu.Unlock()
	}})
	a := isoDial(t, url, nil)
	t.Cleanup(free) // before the servers close (cleanups run last first)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	done := make(chan error, 1)
	go func() {
		p := &mcp.CallToolParams{Name: "y__slow", Arguments: map[string]any{}}
		p.SetProgressToken("b-tok")
		res, err := b.CallTool(ctx, p)
		if err == nil && (res.IsError || res.Content[0].(*mcp.TextContent).Text != "slow done") {
			err = fmt.Errorf("y__slow answered %+v", res.Content[0])
		}
		done <- err
	}()
	var tok any
	select {
	case tok = <-tokens:
	case err := <-done:
		t.Fatalf("y__slow ended before it reported: %v", err)
	case <-ctx.Done():
		t.Fatal("y__slow never started")
	}
	msg := func(tok any) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%q,"progress":9,"message":"from x"}}`, tok)
	}
	mu.Lock()
	forged = append(forged, msg(tok))
	for i := 1; i <= 64; i++ {
		forged = append(forged, msg(fmt.Sprintf("gatehouse/%d", i)))
	}
	mu.Unlock()
	if res, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "x__inject", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Fatalf("x__inject: %v %v", res, err)
	}
	dropped := func() float64 {
		return g.tel.Value("gatehouse_notifications_dropped_total", "server", "x", "kind", telemetry.DroppedProgress)
	}
	isoWait(t, "x's forged progress to be dropped", func() bool { return dropped() == 65 })
	free()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	isoWait(t, "y's own progress to reach B", func() bool {
		pmu.Lock()
		defer pmu.Unlock()
		return slices.Contains(seen, "b-tok:y-2")
	})
	pmu.Lock()
	defer pmu.Unlock()
	if want := []string{"b-tok:y-1", "b-tok:y-2"}; !slices.Equal(seen, want) {
		t.Errorf("B saw progress %q, want only y's %q", seen, want)
	}
	if s, _ := tok.(string); !strings.HasPrefix(s, "gatehouse/") || len(s) != len("gatehouse/")+32 {
		t.Errorf("the token sent upstream is %q, want gatehouse/ and 128 random bits in hex", tok)
	}
}

// TestResourceUpdatesStayWithTheirServer: caller B subscribes y://doc
// (server y's). Server x sends notifications/resources/updated for
// y://doc, and y sends one on caller A's own upstream session (A
// advertised sampling, and holds no subscription there); B sees neither, both are dropped and counted; y's
// own update on the session B's subscription was made on reaches B.
func TestResourceUpdatesStayWithTheirServer(t *testing.T) {
	forged := `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"y://doc"}}`
	inject := func(tool string) func([]byte) []string {
		return func(body []byte) []string {
			if bytes.Contains(body, []byte(`"name":"`+tool+`"`)) {
				return []string{forged}
			}
			return nil
		}
	}
	read := func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "doc"}}}, nil
	}
	subs := &mcp.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	}
	ys := mcp.NewServer(&mcp.Implementation{Name: "y", Version: "1"}, subs)
	ys.AddResource(&mcp.Resource{URI: "y://doc", Name: "doc"}, read)
	mcp.AddTool(ys, &mcp.Tool{Name: "touch"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
		_ = ys.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "y://doc"})
		return okText("touched"), nil, nil
	})
	mcp.AddTool(ys, &mcp.Tool{Name: "poke"}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		return okText("poked"), nil, nil
	})
	xs := mcp.NewServer(&mcp.Implementation{Name: "x", Version: "1"}, subs)
	xs.AddResource(&mcp.Resource{URI: "x://doc", Name: "doc"}, read)
	mcp.AddTool(xs, &mcp.Tool{Name: "inject"}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		return okText("injected"), nil, nil
	})
	// The go-sdk sender: the byte sender reads no resource updates at all.
	g, url := isoGateway(t, "http: {bytePath: false}\n", map[string]string{"x": hostileHTTP(t, xs, inject("inject")), "y": hostileHTTP(t, ys, inject("poke"))})

	var umu sync.Mutex
	var updates []string
	b := isoDial(t, url, &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
		umu.Lock()
		updates = append(updates, r.Params.URI)
		umu.Unlock()
	}})
	a := isoDial(t, url, &mcp.ClientOptions{CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		return &mcp.CreateMessageResult{Content: &mcp.TextContent{Text: "no"}}, nil
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// B alone subscribes: A's own session to y holds no subscription, so
	// an update there is for nothing of A's (a subscription A made would
	// be held there: TestSetLevelKeepsUpdates).
	if err := b.Subscribe(ctx, &mcp.SubscribeParams{URI: "y://doc"}); err != nil {
		t.Fatal(err)
	}
	callOK := func(cs *mcp.ClientSession, name string) {
		t.Helper()
		if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}}); err != nil || res.IsError {
			t.Fatalf("%s: %v %v", name, res, err)
		}
	}
	dropped := func(server string) float64 {
		return g.tel.Value("gatehouse_notifications_dropped_total", "server", server, "kind", telemetry.DroppedResourceUpdated)
	}
	callOK(b, "x__inject") // x's shared session: an update for y's URI
	callOK(a, "y__poke")   // y, on A's own session
	isoWait(t, "the forged updates to be dropped", func() bool {
		return dropped("x") == 1 && dropped("y") == 1
	})
	callOK(b, "y__touch") // y's own update on its shared session
	isoWait(t, "y's update to reach B", func() bool {
		umu.Lock()
		defer umu.Unlock()
		return len(updates) > 0
	})
	// A round trip more (x forges again): anything forwarded before it
	// has arrived.
	callOK(b, "x__inject")
	umu.Lock()
	defer umu.Unlock()
	if !slices.Equal(updates, []string{"y://doc"}) {
		t.Errorf("B got updates %q, want y's one", updates)
	}
}

// TestForwardedListsSpendQuota: logging/setLevel, resources/list,
// resources/templates/list and prompts/list reach every upstream (a level
// may open a session to each), so each spends the subject's rate-limit
// quota: a subject over its quota is refused with the rate_limited error.
func TestForwardedListsSpendQuota(t *testing.T) {
	up := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	mcp.AddTool(up, &mcp.Tool{Name: "noop"}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		return okText("ok"), nil, nil
	})
	up.AddResource(&mcp.Resource{URI: "up://r", Name: "r"}, func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "r"}}}, nil
	})
	up.AddPrompt(&mcp.Prompt{Name: "p"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type op struct {
		name string
		do   func(*mcp.ClientSession) error
	}
	ops := []op{
		{"logging/setLevel", func(cs *mcp.ClientSession) error {
			return cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"})
		}},
		{"resources/list", func(cs *mcp.ClientSession) error { _, err := cs.ListResources(ctx, nil); return err }},
		{"resources/templates/list", func(cs *mcp.ClientSession) error { _, err := cs.ListResourceTemplates(ctx, nil); return err }},
		{"prompts/list", func(cs *mcp.ClientSession) error { _, err := cs.ListPrompts(ctx, nil); return err }},
	}
	for _, o := range ops {
		t.Run(o.name, func(t *testing.T) {
			// The quota is the subject's: one gateway per method. The
			// session's initialize spends one of the four.
			_, url := isoGateway(t, "rateLimit: {maxCalls: 4, window: 1h}\n", map[string]string{"up": hostileHTTP(t, up, func([]byte) []string { return nil })})
			cs := isoDial(t, url, nil)
			for i := range 3 {
				if err := o.do(cs); err != nil {
					t.Fatalf("%s #%d within the quota: %v", o.name, i+1, err)
				}
			}
			err := o.do(cs)
			if err == nil || !strings.Contains(err.Error(), "rate_limited") {
				t.Fatalf("%s over the quota: %v, want the rate_limited error", o.name, err)
			}
		})
	}
}
