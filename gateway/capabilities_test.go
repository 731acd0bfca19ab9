package gateway

//lint:file-ignore SA1019 the upstream here lists tools by the sampling, elicitation and roots capabilities (deprecated by SEP-2577, still in 2025-11-25).

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// scopedChildEnv, set in a stdio server entry's env, makes the test binary
// serve scopedUpstream over stdio (TestScopedChild).
const scopedChildEnv = "GH_GATEWAY_TEST_SCOPED_CHILD"

// TestScopedChild is the stdio upstream of the tests that use
// scopedUpstream; without scopedChildEnv it has nothing to do.
func TestScopedChild(t *testing.T) {
	if os.Getenv(scopedChildEnv) != "1" {
		return
	}
	if err := scopedUpstream().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "scoped child:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// gatedTools are the tools scopedUpstream lists only to a session whose
// client advertised the capability, as server-everything does (its
// trigger-sampling-request, trigger-elicitation-request, get-roots-list):
// each asks the client through that capability and answers what it said.
var gatedTools = map[string]string{"sample": "sampling", "ask": "elicitation", "roots": "roots"}

// scopedUpstream is a go-sdk server that behaves as server-everything
// does where a gateway is easy to get wrong:
//
//   - Its resources (x://r, x://s) take subscriptions per session, and its
//     touch tool sends, on its own session only, an update of each URI that
//     session subscribed to (server-everything's toggle-subscriber-updates
//     starts updates for the session that called it, about that session's
//     subscriptions). It answers how many it sent.
//   - It lists (and answers) sample, ask and roots only to a session whose
//     client advertised sampling, elicitation and roots respectively; echo
//     to every session. A gated tool called on a session without the
//     capability is an unknown tool.
//   - It has logging (logging/setLevel is answered by the go-sdk).
func scopedUpstream() *mcp.Server {
	var mu sync.Mutex
	subs := map[*mcp.ServerSession]map[string]bool{}
	so := &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{},
			Resources: &mcp.ResourceCapabilities{Subscribe: true}, Tools: &mcp.ToolCapabilities{}},
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			mu.Lock()
			defer mu.Unlock()
			if subs[req.Session] == nil {
				subs[req.Session] = map[string]bool{}
			}
			subs[req.Session][req.Params.URI] = true
			return nil
		},
		UnsubscribeHandler: func(_ context.Context, req *mcp.UnsubscribeRequest) error {
			mu.Lock()
			defer mu.Unlock()
			delete(subs[req.Session], req.Params.URI)
			return nil
		},
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "scoped", Version: "1.0.0"}, so)
	for _, uri := range []string{"x://r", "x://s"} {
		s.AddResource(&mcp.Resource{URI: uri, Name: uri[len("x://"):]}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "content of " + req.Params.URI}}}, nil
		})
	}
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: objectSchema}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text("echo"), nil
	})
	s.AddTool(&mcp.Tool{Name: "touch", Description: "Sends this session an update of each resource it subscribed to.", InputSchema: objectSchema},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			var uris []string
			for uri := range subs[req.Session] {
				uris = append(uris, uri)
			}
			mu.Unlock()
			sort.Strings(uris)
			// On the call's response stream, or (standalone: true, as
			// server-everything sends them) on the session's own.
			on := context.WithoutCancel(ctx)
			if strings.Contains(string(req.Params.Arguments), `"standalone":true`) {
				on = context.Background()
			}
			for _, uri := range uris {
				uctx := context.WithValue(on, scopedUpdateKey{}, uri)
				if err := req.Session.NotifyProgress(uctx, &mcp.ProgressNotificationParams{}); err != nil {
					return nil, err
				}
			}
			return text(fmt.Sprint(len(uris))), nil
		})
	s.AddTool(&mcp.Tool{Name: "sample", Description: "Asks the client's model.", InputSchema: objectSchema},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}})
			if err != nil {
				return nil, err
			}
			return text("sampled: " + res.Content.(*mcp.TextContent).Text), nil
		})
	s.AddTool(&mcp.Tool{Name: "ask", Description: "Asks the user.", InputSchema: objectSchema},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "name?",
				RequestedSchema: &jsonschemaObject{Type: "object", Properties: map[string]any{"name": map[string]any{"type": "string"}}}})
			if err != nil {
				return nil, err
			}
			return text(fmt.Sprintf("elicited: %s %v", res.Action, res.Content["name"])), nil
		})
	s.AddTool(&mcp.Tool{Name: "roots", Description: "Lists the client's roots.", InputSchema: objectSchema},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Session.ListRoots(ctx, nil)
			if err != nil {
				return nil, err
			}
			var uris []string
			for _, r := range res.Roots {
				uris = append(uris, r.URI)
			}
			return text(fmt.Sprint("roots: ", uris)), nil
		})
	// touch's updates: a progress notification of the session, written as
	// the update (the go-sdk sends updates to every subscribed session).
	s.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if uri, ok := ctx.Value(scopedUpdateKey{}).(string); ok && method == "notifications/progress" {
				return next(ctx, "notifications/resources/updated", &mcp.ServerRequest[*mcp.ResourceUpdatedNotificationParams]{
					Session: req.GetSession().(*mcp.ServerSession), Params: &mcp.ResourceUpdatedNotificationParams{URI: uri}})
			}
			return next(ctx, method, req)
		}
	})
	// The gated tools: listed to, and callable by, sessions with the
	// capability only.
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			ss, _ := req.GetSession().(*mcp.ServerSession)
			switch method {
			case "tools/list":
				res, err := next(ctx, method, req)
				if lr, ok := res.(*mcp.ListToolsResult); ok && err == nil {
					cp := *lr
					cp.Tools = slices.DeleteFunc(slices.Clone(lr.Tools), func(t *mcp.Tool) bool {
						c, gated := gatedTools[t.Name]
						return gated && !advertised(ss, c)
					})
					return &cp, nil
				}
				return res, err
			case "tools/call":
				if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok {
					if c, gated := gatedTools[p.Name]; gated && !advertised(ss, c) {
						return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", p.Name)}
					}
				}
			}
			return next(ctx, method, req)
		}
	})
	return s
}

type scopedUpdateKey struct{}

// jsonschemaObject is the requested schema of ask.
type jsonschemaObject struct {
	Type       string         `json:"type"`
	Properties map[string]any `json:"properties"`
}

// advertised reports whether ss's client advertised capability c
// ("sampling", "elicitation", "roots").
func advertised(ss *mcp.ServerSession, c string) bool {
	if ss == nil || ss.InitializeParams() == nil || ss.InitializeParams().Capabilities == nil {
		return false
	}
	caps := ss.InitializeParams().Capabilities
	switch c {
	case "sampling":
		return caps.Sampling != nil
	case "elicitation":
		return caps.Elicitation != nil
	case "roots":
		return caps.RootsV2 != nil
	}
	return false
}

// scopedServerYAML returns the servers: entry of scopedUpstream named sc
// over transport ("stdio": this test binary, linked into dir; "http": one
// served on 127.0.0.1 for the test).
func scopedServerYAML(t *testing.T, dir, transport string) string {
	t.Helper()
	if transport == "http" {
		hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return scopedUpstream() }, nil))
		t.Cleanup(hs.Close)
		return fmt.Sprintf("  sc:\n    type: streamable-http\n    url: %s\n", hs.URL)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	child := filepath.Join(dir, "scoped")
	if err := os.Link(exe, child); err != nil {
		b, err := os.ReadFile(exe)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(child, b, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return fmt.Sprintf("  sc:\n    type: stdio\n    command: ./scoped\n    args: [\"-test.run=^TestScopedChild$\"]\n    env: {%s: \"1\"}\n", scopedChildEnv)
}

// TestCapabilityGatedTools: an upstream that lists some tools only to
// clients that announce sampling, elicitation or roots (scopedUpstream, as
// server-everything does) has them served through the gateway, over stdio
// and HTTP: listed, judged and pinned with the rest (the shared session
// announces what the gateway routes), shown to a caller only when its
// session announced the capability, and answered, for a caller without it,
// exactly as a tool that does not exist. A caller with the capability
// calls the tool and the server's request reaches it (sampling and
// elicitation on a caller's own session, roots too for a caller that
// announced roots alone). The callers' own sessions list what the shared
// one does: no drift is recorded.
func TestCapabilityGatedTools(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			dir := t.TempDir()
			yml := fmt.Sprintf("listen: 127.0.0.1:0\nstore: sqlite:%s\nservers:\n%s", filepath.Join(dir, "g.db"), scopedServerYAML(t, dir, transport))
			g, url := serveGateway(t, yml, dir)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			for _, name := range []string{"sc__sample", "sc__ask", "sc__roots"} {
				if !slices.Contains(g.Tools(), name) {
					t.Fatalf("the gateway serves %v: no %s (the shared session announced no capability)", g.Tools(), name)
				}
			}
			sample := func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "pong"}}, nil
			}
			elicit := func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada"}}, nil
			}
			type caller struct {
				name  string
				opts  *mcp.ClientOptions
				roots bool
				sees  []string // the gated tools it sees
			}
			callers := []caller{
				{name: "none", opts: &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}},
				{name: "sampling", opts: &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}, CreateMessageHandler: sample}, sees: []string{"sample"}},
				{name: "elicitation", opts: &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}, ElicitationHandler: elicit}, sees: []string{"ask"}},
				{name: "roots", opts: &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{}}}, roots: true, sees: []string{"roots"}},
				{name: "all", opts: &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{}}, CreateMessageHandler: sample, ElicitationHandler: elicit},
					roots: true, sees: []string{"ask", "roots", "sample"}},
			}
			want := map[string]string{"sample": "sampled: pong", "ask": "elicited: accept ada", "roots": "roots: [file:///work]"}
			for _, c := range callers {
				t.Run(c.name, func(t *testing.T) {
					cl := mcp.NewClient(&mcp.Implementation{Name: c.name, Version: "1"}, c.opts)
					if c.roots {
						cl.AddRoots(&mcp.Root{URI: "file:///work", Name: "work"})
					}
					cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, statefulSession())
					if err != nil {
						t.Fatal(err)
					}
					defer cs.Close()
					lr, err := cs.ListTools(ctx, nil)
					if err != nil {
						t.Fatal(err)
					}
					var listed []string
					for _, tl := range lr.Tools {
						listed = append(listed, tl.Name)
					}
					wantListed := []string{"sc__echo", "sc__touch"}
					for _, s := range c.sees {
						wantListed = append(wantListed, "sc__"+s)
					}
					slices.Sort(listed)
					slices.Sort(wantListed)
					if !slices.Equal(listed, wantListed) {
						t.Fatalf("tools/list = %v, want %v", listed, wantListed)
					}
					_, missing := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sc__nosuch", Arguments: map[string]any{}})
					for tool, text := range want {
						name := "sc__" + tool
						res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
						if !slices.Contains(c.sees, tool) {
							if err == nil || missing == nil || strings.ReplaceAll(err.Error(), name, "X") != strings.ReplaceAll(missing.Error(), "sc__nosuch", "X") {
								t.Fatalf("%s without the capability: %v %+v, want the missing tool's answer (%v)", name, err, res, missing)
							}
							continue
						}
						if err != nil || res.IsError {
							t.Fatalf("%s: %v %+v", name, err, res)
						}
						if got := res.Content[0].(*mcp.TextContent).Text; got != text {
							t.Fatalf("%s = %q, want %q", name, got, text)
						}
					}
				})
			}
			if obs := sessionDrift(t, g.Store(), "config:sc"); len(obs) != 0 {
				t.Fatalf("drift recorded on the callers' own sessions: %+v", obs)
			}
			obs, err := g.Store().OpenObservations(ctx, "config:sc", true)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range obs {
				if o.Drifted {
					t.Fatalf("drift recorded: %+v", o)
				}
			}
		})
	}
}

// everythingPinned pins @modelcontextprotocol/server-everything for the
// interop test (as gateway/e2e and toolset do).
const everythingPinned = "2026.8.31"

// TestCapabilityGatedEverything: through the gateway, the reference
// TypeScript server-everything (over stdio, started with npx) offers its
// sampling, elicitation and roots tools to the callers that announce the
// capability, and only to them; a sampling caller's call of
// trigger-sampling-request reaches its own handler. Skipped without npx,
// or when the server cannot be started (offline), unless
// GATEHOUSE_INTEROP_REQUIRED=1; run with GATEHOUSE_TEST_HEAVY=1 (its npx
// starts take about 30 s).
func TestCapabilityGatedEverything(t *testing.T) {
	if testing.Short() {
		t.Skip("interop: skipped in -short mode")
	}
	if os.Getenv("GATEHOUSE_TEST_HEAVY") != "1" && os.Getenv("GATEHOUSE_INTEROP_REQUIRED") != "1" {
		t.Skip("interop: about 30 s of npx starts; set GATEHOUSE_TEST_HEAVY=1 (.ci/run does) to run it")
	}
	if _, err := exec.LookPath("npx"); err != nil {
		t.Skip("interop: npx is not installed; install Node.js to run this test")
	}
	dir := t.TempDir()
	yml := fmt.Sprintf(`listen: 127.0.0.1:0
store: sqlite:%s
servers:
  ev:
    type: stdio
    command: npx
    args: ["-y", "@modelcontextprotocol/server-everything@%s", "stdio"]
`, filepath.Join(dir, "g.db"), everythingPinned)
	g, url := serveGateway(t, yml, dir)
	if !slices.Contains(g.Tools(), "ev__echo") {
		if os.Getenv("GATEHOUSE_INTEROP_REQUIRED") == "1" {
			t.Fatalf("interop: server-everything did not start: tools %v", g.Tools())
		}
		t.Skipf("interop: @modelcontextprotocol/server-everything@%s could not be started (offline?): tools %v", everythingPinned, g.Tools())
	}
	gated := []string{"ev__trigger-sampling-request", "ev__trigger-elicitation-request", "ev__get-roots-list"}
	for _, name := range gated {
		if !slices.Contains(g.Tools(), name) {
			t.Fatalf("the gateway serves %v: no %s", g.Tools(), name)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	listed := func(cs *mcp.ClientSession) []string {
		t.Helper()
		lr, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tl := range lr.Tools {
			if slices.Contains(gated, tl.Name) {
				out = append(out, tl.Name)
			}
		}
		return out
	}
	connect := func(opts *mcp.ClientOptions) *mcp.ClientSession {
		t.Helper()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "interop", Version: "1"}, opts).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, statefulSession())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	plain := connect(&mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	if got := listed(plain); len(got) != 0 {
		t.Fatalf("a caller without capabilities sees %v", got)
	}
	sampler := connect(&mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{},
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "interop-pong"}}, nil
		}})
	if got := listed(sampler); !slices.Equal(got, gated[:1]) {
		t.Fatalf("a sampling caller sees %v, want %v", got, gated[:1])
	}
	res, err := sampler.CallTool(ctx, &mcp.CallToolParams{Name: gated[0], Arguments: map[string]any{"prompt": "ping", "maxTokens": 10}})
	if err != nil || res.IsError {
		t.Fatalf("%s: %v %+v", gated[0], err, res)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if !strings.Contains(text.String(), "interop-pong") {
		t.Fatalf("%s answered %q: the sampling request did not reach the caller", gated[0], text.String())
	}
	if _, err := plain.CallTool(ctx, &mcp.CallToolParams{Name: gated[0], Arguments: map[string]any{"prompt": "ping"}}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Fatalf("a caller without sampling called %s: %v", gated[0], err)
	}
	rooted := connect(&mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{}}})
	if got := listed(rooted); !slices.Equal(got, gated[2:]) {
		t.Fatalf("a roots caller sees %v, want %v", got, gated[2:])
	}
}
