package gateway

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/identity/upstream"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/authserver"
)

// lateUpstream is a real go-sdk MCP server over streamable HTTP on
// 127.0.0.1 that is not listening until start: a tool echo that counts
// its effects, and a prompt greet.
type lateUpstream struct {
	addr    string
	effects atomic.Int64
}

func newLateUpstream(t *testing.T) *lateUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &lateUpstream{addr: ln.Addr().String()}
	_ = ln.Close() // down until start
	return u
}

func (u *lateUpstream) url() string { return "http://" + u.addr + "/mcp" }

func (u *lateUpstream) start(t *testing.T) {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "late", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "echo", Description: "Echoes.", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			u.effects.Add(1)
			return okText("echoed"), nil
		})
	srv.AddPrompt(&mcp.Prompt{Name: "greet", Description: "Greets."},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello"}}}}, nil
		})
	var ln net.Listener
	var err error
	for range 100 {
		if ln, err = net.Listen("tcp", u.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("listening on %s again: %v", u.addr, err)
	}
	hs := httptest.NewUnstartedServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	_ = hs.Listener.Close()
	hs.Listener = ln
	hs.Start()
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
	})
}

// upMetric is gatehouse_upstream_up of server (-1 when absent).
func upMetric(t *testing.T, g *Gateway, server string) float64 {
	t.Helper()
	fams, err := g.tel.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "gatehouse_upstream_up" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "server" && l.GetValue() == server {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return -1
}

func serverState(g *Gateway, name string) ServerState {
	for _, s := range g.Ready(context.Background()).Servers {
		if s.Name == name {
			return s
		}
	}
	return ServerState{}
}

// TestLateUpstreamJoins: an upstream that is down when the gateway starts
// is skipped, then picked up by the retry without a restart: a caller
// connected before it came up is told (notifications/tools/list_changed),
// then lists and calls its tool (the effect counted at the upstream) and
// gets its prompt through the relay; /readyz and gatehouse_upstream_up
// show it connected.
func TestLateUpstreamJoins(t *testing.T) {
	up := newLateUpstream(t)
	dir := t.TempDir()
	cfg, err := ParseConfig([]byte("listen: 127.0.0.1:0\nservers:\n  late:\n    type: streamable-http\n    url: "+up.url()+"\n"),
		filepath.Join(dir, "gatehouse.yaml"), dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g, err := New(ctx, cfg, &Options{StoreDSN: "sqlite:" + filepath.Join(dir, "g.db"), Instance: "solo"})
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

	var changed, prompts atomic.Int64
	cs := sessionWith(t, gs.URL+"/mcp", "", &mcp.ClientOptions{
		ToolListChangedHandler:   func(context.Context, *mcp.ToolListChangedRequest) { changed.Add(1) },
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) { prompts.Add(1) }})
	if _, ok := listedTools(t, cs)["late__echo"]; ok {
		t.Fatal("a tool of a server that is down is listed")
	}
	if s := serverState(g, "late"); s.State != "skipped" || s.Rule != "connection-failure" {
		t.Fatalf("readyz before: %+v", s)
	}
	if v := upMetric(t, g, "late"); v != 0 {
		t.Fatalf("gatehouse_upstream_up before: %v", v)
	}

	up.start(t)
	isoWait(t, "notifications/tools/list_changed", func() bool { return changed.Load() > 0 })
	if _, ok := listedTools(t, cs)["late__echo"]; !ok {
		t.Fatalf("tools after it came up: %v", listedTools(t, cs))
	}
	// Up before any call (a call's outcome sets it too).
	isoWait(t, "gatehouse_upstream_up 1", func() bool { return upMetric(t, g, "late") == 1 })
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "late__echo", Arguments: map[string]any{}})
	if err != nil || res.IsError || up.effects.Load() != 1 {
		t.Fatalf("call: %+v %v, %d effects", res, err, up.effects.Load())
	}
	if s := serverState(g, "late"); s.State != "connected" {
		t.Fatalf("readyz after: %+v", s)
	}
	isoWait(t, "notifications/prompts/list_changed", func() bool { return prompts.Load() > 0 })
	pl, err := cs.ListPrompts(ctx, nil)
	if err != nil || len(pl.Prompts) != 1 || pl.Prompts[0].Name != "late__greet" {
		t.Fatalf("prompts after it came up: %+v %v", pl, err)
	}
	pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "late__greet"})
	if err != nil || len(pr.Messages) != 1 {
		t.Fatalf("the late server's prompt: %+v %v", pr, err)
	}
}

// TestServiceConnectedAfterStart: a server in auth: service mode has no
// service connection when the gateway starts, so it is skipped; the
// operator connects it (`gatehouse connect NAME`, here the same grant
// walked without a browser) while the gateway runs, and the next retry
// picks it up: its tool is listed and a call reaches the upstream with
// the service's token. No restart.
func TestServiceConnectedAfterStart(t *testing.T) {
	t.Setenv("GW_UP_SECRET", "gw-secret")
	as := authserver.Start(t, authserver.Options{Clients: []authserver.Client{
		{ID: "gw", Secret: "gw-secret", RedirectURIs: []string{serviceCallback}},
	}})
	up := startProtected(t, as.Issuer())
	tokens := &upstream.MemoryTokens{}
	dir := t.TempDir()
	gs := httptest.NewUnstartedServer(nil)
	serveAt(t, gs, dir, fmt.Sprintf(`listen: 127.0.0.1:0
store: sqlite:%s
servers:
  up:
    type: streamable-http
    url: %q
    auth: service
    oauth: {clientID: gw, clientSecretEnv: GW_UP_SECRET}
`, filepath.Join(dir, "g.db"), up.url), &Options{UpstreamTokens: tokens})
	var changed atomic.Int64
	cs := sessionWith(t, "http://"+gs.Listener.Addr().String()+"/mcp", "", &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed.Add(1) }})
	if _, ok := listedTools(t, cs)["up__echo"]; ok {
		t.Fatal("a server without its service connection is listed")
	}

	connectService(t, tokens, "up", up.url)
	isoWait(t, "the server to be picked up", func() bool { return changed.Load() > 0 })
	if _, ok := listedTools(t, cs)["up__echo"]; !ok {
		t.Fatalf("tools after the connection: %v", listedTools(t, cs))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{}})
	if err != nil || res.IsError || up.effects.Load() != 1 {
		t.Fatalf("call: %+v %v, %d effects", res, err, up.effects.Load())
	}
	service, _ := tokens.Token(ctx, "up", "")
	if service == nil || !up.sawToken(service.AccessToken) {
		t.Fatal("the call did not carry the service connection's token")
	}
}
