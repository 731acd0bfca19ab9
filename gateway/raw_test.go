package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawUpstream is a go-sdk server over streamable HTTP on 127.0.0.1 that
// records the JSON-RPC IDs of the tools/call requests it gets.
type rawUpstream struct {
	url       string
	mu        sync.Mutex
	ids       []string
	cancelled chan string
	// entered has a value each time the block tool's handler starts: the
	// go-sdk has registered the call, so a cancellation can find it (one
	// that arrives before may be ignored, as the spec allows).
	entered chan struct{}
}

func newRawUpstream(t *testing.T) *rawUpstream {
	t.Helper()
	u := &rawUpstream{cancelled: make(chan string, 4), entered: make(chan struct{}, 4)}
	stop := make(chan struct{}) // closed when the test ends: a handler never outlives it
	s := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	for _, name := range []string{"echo", "secret"} {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct {
				Text string `json:"text"`
			}
			_ = json.Unmarshal(req.Params.Arguments, &in)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil
		})
	}
	s.AddTool(&mcp.Tool{Name: "block", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		select {
		case u.entered <- struct{}{}:
		default:
		}
		select {
		case <-ctx.Done():
			u.cancelled <- "block"
			return nil, ctx.Err()
		case <-stop:
			return nil, errors.New("the test ended")
		}
	})
	s.AddPrompt(&mcp.Prompt{Name: "hello"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}}, nil
	})
	s.AddResource(&mcp.Resource{URI: "up://note", Name: "note"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "up://note", Text: "n"}}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "hangup", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// As the everything-server's test_reconnection: end the response
		// stream (no event store: no event ID), answer later.
		if ex := req.GetExtra(); ex != nil && ex.CloseSSEStream != nil {
			ex.CloseSSEStream(mcp.CloseSSEStreamArgs{})
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "lost"}}}, nil
	})
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	hs := interceptCall(t, sdk, func(_ http.ResponseWriter, _ string, id json.RawMessage) bool {
		u.mu.Lock()
		u.ids = append(u.ids, string(id))
		u.mu.Unlock()
		return false
	})
	t.Cleanup(func() { close(stop) }) // runs first: hs.Close waits for the handlers
	u.url = hs.URL + "/mcp"
	return u
}

// calls returns how many tools/call the upstream got by the raw path
// (string IDs "gatehouse-N") and by the go-sdk's client (numbers).
func (u *rawUpstream) calls() (raw, sdk int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, id := range u.ids {
		if strings.HasPrefix(id, `"gatehouse-`) {
			raw++
		} else {
			sdk++
		}
	}
	return raw, sdk
}

// rawGateway serves a gateway in front of up on 127.0.0.1 with extra
// config lines, with tokens "alice" (every tool) and "bob" (echo, block).
func rawGateway(t *testing.T, up *rawUpstream, extra string, tune ...func(*Gateway)) (*Gateway, string) {
	t.Helper()
	dir := t.TempDir()
	yml := fmt.Sprintf(`listen: 127.0.0.1:0
store: sqlite:%s
auth:
  tokens:
    - {sha256: %s, subject: alice}
    - {sha256: %s, subject: bob, scopes: ["tool:echo", "tool:block"]}
servers:
  up:
    type: streamable-http
    url: %s
    prefix: ""
%s`, filepath.Join(dir, "gh.db"), hashOf("alice-token"), hashOf("bob-token"), up.url, extra)
	return serveGateway(t, yml, dir, tune...)
}

// serveGateway serves a gateway with config yml (its directory dir) on
// 127.0.0.1 and returns it and its MCP endpoint's URL.
func serveGateway(tb testing.TB, yml, dir string, tune ...func(*Gateway)) (*Gateway, string) {
	tb.Helper()
	cfg, err := ParseConfig([]byte(yml), filepath.Join(dir, "gatehouse.yaml"), dir)
	if err != nil {
		tb.Fatal(err)
	}
	lines := &callLines{}
	log := slog.New(slog.NewJSONHandler(lines, nil))
	if _, bench := tb.(*testing.B); bench {
		log = nil // benchmarks measure the gateway, not a test's log capture
	}
	g, err := New(context.Background(), cfg, &Options{Logger: log})
	if err != nil {
		tb.Fatal(err)
	}
	callLogs.Store(g, lines)
	tb.Cleanup(func() { _ = g.Close(); callLogs.Delete(g) })
	for _, f := range tune {
		f(g)
	}
	h, err := g.Handler()
	if err != nil {
		tb.Fatal(err)
	}
	hs := httptest.NewServer(h)
	tb.Cleanup(hs.Close)
	return g, hs.URL + "/mcp"
}

// callLogs holds the log of every gateway serveGateway made.
var callLogs sync.Map // *Gateway -> *callLines

// callLines collects a gateway's JSON log lines.
type callLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (c *callLines) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.Write(p)
}

// callLine is the gateway's log line of one tools/call.
type callLine struct {
	Msg, Subject, Tool, Outcome, Front, Sender string
	Replayed                                   bool
}

// loggedCalls returns the call lines g logged so far.
func loggedCalls(t *testing.T, g *Gateway) []callLine {
	t.Helper()
	v, ok := callLogs.Load(g)
	if !ok {
		t.Fatal("the gateway was not made by serveGateway")
	}
	c := v.(*callLines)
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []callLine
	for _, line := range bytes.Split(c.buf.Bytes(), []byte("\n")) {
		var l callLine
		if json.Unmarshal(line, &l) == nil && l.Msg == "call" {
			out = append(out, l)
		}
	}
	return out
}

type withBearer struct{ tok string }

func (b withBearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.tok)
	return http.DefaultTransport.RoundTrip(r)
}

// session opens a go-sdk client session with token and lists the tools
// (the raw path serves sessions it has seen do that).
func session(t *testing.T, url, token string) *mcp.ClientSession {
	t.Helper()
	return sessionWith(t, url, token, nil)
}

// statefulSession asks for a session at 2025-11-25: a go-sdk client asks
// for 2026-07-28 first, which a gateway with http.bothRevisions serves
// without sessions (byRevision), and these tests are of sessions.
func statefulSession() *mcp.ClientSessionOptions {
	return &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
}

// sessionWith is session for a client with opts (handlers advertise
// capabilities).
func sessionWith(t *testing.T, url, token string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: withBearer{token}}}, statefulSession())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	return cs
}

// post sends one JSON-RPC message on cs's session with token and returns
// the status, the Content-Type and Cache-Control headers and the body.
func post(t *testing.T, url string, cs *mcp.ClientSession, token, msg string) (int, string, []byte) {
	t.Helper()
	status, headers, body, err := postErr(url, cs, token, msg)
	if err != nil {
		t.Fatal(err)
	}
	return status, headers, body
}

// postErr is post for a goroutine other than the test's: it returns the
// error.
func postErr(url string, cs *mcp.ClientSession, token, msg string) (int, string, []byte, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(msg))
	if err != nil {
		return 0, "", nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", cs.ID())
	req.Header.Set("Mcp-Protocol-Version", cs.InitializeResult().ProtocolVersion)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type") + "|" + resp.Header.Get("Cache-Control"), body, err
}

// TestRawPathAnswersAsTheGoSDK: the raw path's answers are byte for byte
// those of the go-sdk path (results, refusals, hidden tools), with SSE and
// with JSON answers.
func TestRawPathAnswersAsTheGoSDK(t *testing.T) {
	for _, mode := range []string{"sse", "json"} {
		t.Run(mode, func(t *testing.T) {
			up := newRawUpstream(t)
			extra := ""
			if mode == "json" {
				extra = "http:\n  jsonResponse: true\n"
			}
			_, url := rawGateway(t, up, extra)
			alice := session(t, url, "alice-token")
			call := func(id int, name, meta string) string {
				return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"text":"h\u00e9 \"x\" <&>"}%s}}`, id, name, meta)
			}
			// A progress token sends the call the go-sdk's way.
			viaSDK := `,"_meta":{"progressToken":"p1"}`
			s1, h1, raw := post(t, url, alice, "alice-token", call(7, "echo", ""))
			s2, h2, sdk := post(t, url, alice, "alice-token", call(7, "echo", viaSDK))
			if r, s := up.calls(); r != 1 || s != 1 {
				t.Fatalf("upstream calls: %d raw, %d by the go-sdk; want 1 and 1", r, s)
			}
			if s1 != 200 || s1 != s2 || h1 != h2 || !bytes.Equal(raw, sdk) {
				t.Fatalf("raw path: %d %s %q\ngo-sdk:   %d %s %q", s1, h1, raw, s2, h2, sdk)
			}
			if !bytes.Contains(raw, []byte(`h\u00e9`)) && !bytes.Contains(raw, []byte("hé")) {
				t.Fatalf("the echo is not in the answer: %q", raw)
			}

			// A tool hidden from bob answers as one that does not exist.
			bob := session(t, url, "bob-token")
			_, _, hidden := post(t, url, bob, "bob-token", call(8, "secret", ""))
			_, _, missing := post(t, url, bob, "bob-token", call(8, "nosuch", ""))
			if !bytes.Equal(hidden, bytes.ReplaceAll(missing, []byte("nosuch"), []byte("secret"))) {
				t.Fatalf("hidden: %q\nmissing: %q", hidden, missing)
			}
			if r, s := up.calls(); r != 1 || s != 1 {
				t.Fatalf("a hidden tool reached the upstream: %d raw, %d by the go-sdk", r, s)
			}

			// Bob's token on alice's session is refused as the go-sdk
			// refuses it, and nothing is sent.
			status, _, body := post(t, url, alice, "bob-token", call(9, "echo", ""))
			if status != http.StatusForbidden || !bytes.Contains(body, []byte("session user mismatch")) {
				t.Fatalf("another token on alice's session: %d %q", status, body)
			}
			if r, s := up.calls(); r != 1 || s != 1 {
				t.Fatalf("a hijacked session's call reached the upstream: %d raw, %d by the go-sdk", r, s)
			}
		})
	}
}

// TestRawPathRateLimitAndKeys: the rate limit counts raw calls; a keyed
// call goes the byte way too and is journaled.
func TestRawPathRateLimitAndKeys(t *testing.T) {
	up := newRawUpstream(t)
	// 3: the session's initialize spends one.
	_, url := rawGateway(t, up, "rateLimit: {maxCalls: 3, window: 1h}\n")
	cs := session(t, url, "alice-token")
	ctx := context.Background()
	for i := range 3 {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
		if err != nil {
			t.Fatal(err)
		}
		if limited := res.IsError && strings.Contains(fmt.Sprint(res.StructuredContent), "rate_limited"); limited != (i == 2) {
			t.Fatalf("call %d: isError=%v %v", i, res.IsError, res.StructuredContent)
		}
	}
	if r, s := up.calls(); r != 2 || s != 0 {
		t.Fatalf("upstream calls: %d raw, %d by the go-sdk; want 2 and 0", r, s)
	}

	up2 := newRawUpstream(t)
	g, url := rawGateway(t, up2, "")
	cs = session(t, url, "alice-token")
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "k"},
		Meta: mcp.Meta{"idempotencyKey": "key-1"}})
	if err != nil || res.IsError {
		t.Fatalf("keyed call: %v %+v", err, res)
	}
	if r, s := up2.calls(); r != 1 || s != 0 {
		t.Fatalf("keyed call: %d raw, %d by the go-sdk; want 1 and 0", r, s)
	}
	if !g.pipe.recorded(ctx, "alice", "echo", "key-1") {
		t.Error("the keyed call was not journaled")
	}
	if calls := loggedCalls(t, g); len(calls) != 1 || calls[0].Front != "bytes" || calls[0].Sender != "bytes" {
		t.Errorf("keyed call logged as %+v, want the byte front and sender", calls)
	}
}

// TestRawPathCancel: a caller's notifications/cancelled reaches a raw call
// and, through it, the upstream's handler.
func TestRawPathCancel(t *testing.T) {
	up := newRawUpstream(t)
	_, url := rawGateway(t, up, "")
	cs := session(t, url, "alice-token")
	cancelMidCall(t, cs, up, func(raw, _ int) bool { return raw == 1 })
}

// cancelMidCall calls the upstream's block tool on cs, waits until arrived
// (given the upstream's raw and go-sdk call counts) says it got there,
// cancels it, and checks that the upstream's handler was cancelled and the
// call returned an error.
func cancelMidCall(t *testing.T, cs *mcp.ClientSession, up *rawUpstream, arrived func(raw, sdk int) bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "block", Arguments: map[string]any{}})
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !arrived(up.calls()) {
		if time.Now().After(deadline) {
			cancel()
			t.Fatal("the call did not reach the upstream")
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case <-up.entered:
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatal("the call reached the upstream but its handler did not start")
	}
	cancel()
	select {
	case <-up.cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream handler was not cancelled")
	}
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a cancelled call returned no error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled call did not return")
	}
}

// TestRawPathMirrorsAnEndedStream: an upstream that ends the call's
// response stream without answering (and without an event ID) has the
// caller's stream ended the same way, as a direct caller would see it.
func TestRawPathMirrorsAnEndedStream(t *testing.T) {
	up := newRawUpstream(t)
	_, url := rawGateway(t, up, "")
	alice := session(t, url, "alice-token")
	msg := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"hangup","arguments":{}}}`
	status, headers, body := post(t, url, alice, "alice-token", msg)
	if r, _ := up.calls(); r != 1 {
		t.Fatalf("raw calls at the upstream: %d, want 1", r)
	}
	direct := mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "1"}, nil)
	cs, err := direct.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: up.url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	dstatus, dheaders, dbody := post(t, up.url, cs, "", msg)
	if status != dstatus || headers != dheaders || !bytes.Equal(body, dbody) || len(body) != 0 {
		t.Fatalf("through the gateway: %d %s %q\ndirect: %d %s %q", status, headers, body, dstatus, dheaders, dbody)
	}

	// The go-sdk path does the same: a caller that advertised elicitation
	// has an upstream session of its own (no raw path).
	asker := sessionWith(t, url, "alice-token", &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}})
	status, headers, body = post(t, url, asker, "alice-token", msg)
	if r, s := up.calls(); r != 1 || s != 2 { // the direct call and this one
		t.Fatalf("upstream calls: %d raw, %d by the go-sdk; want 1 and 2", r, s)
	}
	if status != dstatus || headers != dheaders || !bytes.Equal(body, dbody) {
		t.Fatalf("go-sdk path: %d %s %q\ndirect: %d %s %q", status, headers, body, dstatus, dheaders, dbody)
	}
}

// TestListCursorRefused: the gateway answers lists in one page and hands
// out no cursor, so a cursor is refused as the go-sdk refuses an invalid
// one, and the first page is whole.
func TestListCursorRefused(t *testing.T) {
	up := newRawUpstream(t)
	_, url := rawGateway(t, up, "")
	cs := session(t, url, "alice-token")
	ctx := context.Background()
	for name, list := range map[string]func() error{
		"resources": func() error { _, err := cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: "x"}); return err },
		"templates": func() error {
			_, err := cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: "x"})
			return err
		},
		"prompts": func() error { _, err := cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: "x"}); return err },
	} {
		var rpc *jsonrpc.Error
		if err := list(); !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("%s with a cursor: %v, want invalid params", name, err)
		}
	}
	res, err := cs.ListPrompts(ctx, nil)
	if err != nil || res.NextCursor != "" {
		t.Fatalf("first page: %+v %v", res, err)
	}
}

// TestForwardedRequestsShareTheRateLimit: prompts/get and resources/read
// spend the subject's rateLimit quota as tool calls do; over it they are
// refused with a JSON-RPC error carrying the refusal's fields.
func TestForwardedRequestsShareTheRateLimit(t *testing.T) {
	up := newRawUpstream(t)
	// 4: the session's initialize spends one.
	_, url := rawGateway(t, up, "rateLimit: {maxCalls: 4, window: 1h}\n")
	cs := session(t, url, "alice-token")
	ctx := context.Background()
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "hello"}); err != nil {
		t.Fatalf("prompt 1: %v", err)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "up://note"}); err != nil {
		t.Fatalf("read 1: %v", err)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}); err != nil || res.IsError {
		t.Fatalf("call 1: %v %+v", err, res)
	}
	_, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "hello"})
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) || rpc.Code != codeRateLimitedRPC || !strings.HasPrefix(rpc.Message, "[rate_limited]") {
		t.Fatalf("prompt over the limit: %v", err)
	}
	var data struct {
		Code         string `json:"code"`
		Retryable    bool   `json:"retryable"`
		RetryAfterMs int64  `json:"retryAfterMs"`
	}
	if err := json.Unmarshal(rpc.Data, &data); err != nil || data.Code != "rate_limited" || !data.Retryable || data.RetryAfterMs <= 0 {
		t.Fatalf("refusal data %s: %v", rpc.Data, err)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "up://note"}); !errors.As(err, &rpc) || rpc.Code != codeRateLimitedRPC {
		t.Fatalf("read over the limit: %v", err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
	if err != nil || !res.IsError || !strings.Contains(fmt.Sprint(res.StructuredContent), "rate_limited") {
		t.Fatalf("call over the limit: %v %+v", err, res)
	}
	// Bob has a quota of his own.
	bob := session(t, url, "bob-token")
	if _, err := bob.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "b"}}); err != nil {
		t.Fatalf("bob: %v", err)
	}
}

// TestStatelessCallerCancels: with http.stateless, a 2026-07-28 caller that
// gives up on a call (its POST ends) cancels it at the gateway and, through
// it, at the upstream.
func TestStatelessCallerCancels(t *testing.T) {
	up := newRawUpstream(t)
	_, url := rawGateway(t, up, "http:\n  stateless: true\n")
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: withBearer{"alice-token"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if v := cs.InitializeResult().ProtocolVersion; v < "2026-07-28" {
		t.Fatalf("negotiated %s, want a stateless revision", v)
	}
	// A stateless caller needs nothing routed back: its call goes as bytes.
	cancelMidCall(t, cs, up, func(raw, _ int) bool { return raw == 1 })
}

// TestRawPathFeedsTheIdleTimer: a session whose calls all take the raw
// path would look idle to the go-sdk, whose timer then closes it. Once
// the go-sdk has not served the session for half the idle timeout, the
// next call goes its way (and resets the timer); the one after is raw
// again.
func TestRawPathFeedsTheIdleTimer(t *testing.T) {
	up := newRawUpstream(t)
	const idle = 2 * time.Second
	g, url := rawGateway(t, up, "", func(g *Gateway) { g.idle = idle })
	cs := session(t, url, "alice-token")
	ctx := context.Background()
	fronts := func() (out []string) {
		for _, c := range loggedCalls(t, g) {
			out = append(out, c.Front)
		}
		return out
	}
	echo := func() {
		t.Helper()
		if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}); err != nil || res.IsError {
			t.Fatalf("echo: %v %+v", err, res)
		}
	}
	echo()
	if got := fronts(); !slices.Equal(got, []string{"bytes"}) {
		t.Fatalf("first call read by %v, want the byte front", got)
	}
	time.Sleep(idle/2 + 200*time.Millisecond)
	echo()
	if got := fronts(); !slices.Equal(got, []string{"bytes", "sdk"}) {
		t.Fatalf("after half the idle timeout: read by %v, want the go-sdk's front", got)
	}
	echo()
	if got := fronts(); !slices.Equal(got, []string{"bytes", "sdk", "bytes"}) {
		t.Fatalf("next call read by %v, want the byte front again", got)
	}
	if r, s := up.calls(); r != 3 || s != 0 {
		t.Fatalf("upstream: %d raw, %d by the go-sdk; every call goes as bytes", r, s)
	}
	// The session is alive: the go-sdk's timer was reset by the second call.
	time.Sleep(idle/2 + 200*time.Millisecond)
	echo()
}

// TestRawPathInFlightIDs: a second request with the ID of a raw call in
// flight on the session is refused as the go-sdk refuses it, and
// notifications/cancelled with that ID cancels the call (202, and the
// upstream's handler is cancelled).
func TestRawPathInFlightIDs(t *testing.T) {
	up := newRawUpstream(t)
	_, url := rawGateway(t, up, "")
	cs := session(t, url, "alice-token")
	call := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"block","arguments":{}}}`
	done := make(chan error, 1)
	go func() {
		_, _, _, err := postErr(url, cs, "alice-token", call)
		done <- err
	}()
	// Running at the upstream, not only arrived there: a cancellation that
	// reaches the go-sdk before the request it names is ignored (the
	// protocol lets a server ignore one for a request it does not know),
	// and under load the two POSTs race.
	select {
	case <-up.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not reach the upstream's handler")
	}
	status, _, body := post(t, url, cs, "alice-token", call)
	if status != http.StatusBadRequest || !bytes.Contains(body, []byte("duplicate in-flight request ID 5")) {
		t.Fatalf("a second request with the same ID: %d %s", status, body)
	}
	status, _, body = post(t, url, cs, "alice-token", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}`)
	if status != http.StatusAccepted || len(body) != 0 {
		t.Fatalf("cancelling: %d %q", status, body)
	}
	select {
	case <-up.cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream handler was not cancelled")
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the cancelled call's request: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled call was not answered")
	}
	if r, _ := up.calls(); r != 1 {
		t.Fatalf("raw calls at the upstream: %d, want 1 (the duplicate was not sent)", r)
	}
}
