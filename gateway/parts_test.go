package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/config"
	"github.com/gatehouse-dev/gatehouse/gateway/internal/telemetry"
	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/server"
	"github.com/gatehouse-dev/gatehouse/store/memory"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// partsUpstream serves tools a, b and c over streamable HTTP on 127.0.0.1
// and returns the server (to change its tools) and a toolset over it.
func partsUpstream(t *testing.T) (*mcp.Server, *toolset.Toolset) {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	for _, name := range []string{"a", "b", "c"} {
		srv.AddTool(&mcp.Tool{Name: name, Description: "Tool " + name + ".", InputSchema: objectSchema},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	st, err := memory.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := toolset.Open(context.Background(), []toolset.Server{{Config: plugin.ServerConfig{
		Name: "up", Type: plugin.TransportStreamableHTTP, URL: hs.URL}}}, &toolset.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = ts.Close()
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
		hs.Close()
		_ = st.Close()
	})
	return srv, ts
}

// listed returns the tool names a client of s sees.
func listed(t *testing.T, s *mcp.Server) []string {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// The served map alone: a toolset's tools registered on a go-sdk server,
// who may see which (tools.allow/block, token scopes), and a refresh after
// drift that removes a dropped tool and shows a changed one as the
// toolset's quarantined stand-in.
func TestServedMapAlone(t *testing.T) {
	up, ts := partsUpstream(t)
	cfg := &Config{Tools: config.Tools{Block: []string{"up__c"}}}
	auth := staticAuthenticator(&config.Auth{Tokens: []config.Token{
		{SHA256: hashOf("x"), Subject: "alice"},
		{SHA256: hashOf("y"), Subject: "bob", Scopes: []string{"tool:up__a"}},
	}})
	m := newServedMap(ts, slog.New(slog.DiscardHandler), cfg, auth)
	s := mcp.NewServer(&mcp.Implementation{Name: "gw", Version: "1"}, nil)
	m.add(s, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	ctx := context.Background()
	if err := m.refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := listed(t, s); !slices.Equal(got, []string{"up__a", "up__b", "up__c"}) {
		t.Fatalf("registered %v", got)
	}
	for _, c := range []struct {
		tool, subject string
		want          bool
	}{
		{"up__a", "alice", true}, {"up__b", "alice", true}, {"up__c", "alice", false}, // blocked for everyone
		{"up__a", "bob", true}, {"up__b", "bob", false}, // beyond bob's scopes
		{"up__a", "mallory", false}, {"up__nope", "alice", false},
	} {
		if got := m.visible(c.tool, server.Subject(c.subject), server.RequestInfo{}); got != c.want {
			t.Errorf("visible(%s, %s) = %v, want %v", c.tool, c.subject, got, c.want)
		}
	}
	if !m.serverVisible("up", "bob", server.RequestInfo{}) || m.serverVisible("up", "mallory", server.RequestInfo{}) {
		t.Error("serverVisible")
	}

	up.RemoveTools("b")
	up.AddTool(&mcp.Tool{Name: "a", Description: "Changed.", InputSchema: objectSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	if err := ts.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := listed(t, s); !slices.Equal(got, []string{"up__a", "up__c"}) {
		t.Fatalf("after drift, registered %v", got)
	}
	if info, ok := m.tool("up__a"); !ok || info.State != toolset.Quarantined || info.Description == "Changed." {
		t.Fatalf("up__a after drift: %+v", info)
	}
	if _, ok := m.tool("up__b"); ok || !slices.Equal(m.names(), []string{"up__a", "up__c"}) {
		t.Fatalf("names %v", m.names())
	}
}

// The trust watcher alone: a drift is counted once for as long as it
// persists, by the action of its typed event, whatever its wording.
func TestTrustWatcherAlone(t *testing.T) {
	up, ts := partsUpstream(t)
	ctx := context.Background()
	tel := telemetry.NewInstruments(nil, ctx, func() int { return 0 })
	served := newServedMap(ts, slog.New(slog.DiscardHandler), &Config{}, staticAuthenticator(nil))
	w := &trustWatcher{ts: ts, served: served, metrics: tel.Metrics, log: slog.New(slog.DiscardHandler), life: ctx}
	w.changed()
	if got := served.names(); len(got) != 3 {
		t.Fatalf("served %v", got)
	}
	up.RemoveTools("b")
	up.AddTool(&mcp.Tool{Name: "a", Description: "it_is_withheld; it is dropped", InputSchema: objectSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	up.AddTool(&mcp.Tool{Name: "d", InputSchema: objectSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	for range 3 { // the same drift, judged three times
		if err := ts.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		w.changed()
	}
	for kind, want := range map[string]float64{telemetry.DriftQuarantined: 1, telemetry.DriftWithheld: 1, telemetry.DriftRemoved: 1} {
		if got := tel.Value("gatehouse_drift_events_total", "server", "up", "kind", kind); got != want {
			t.Errorf("drift %s counted %v times, want %v", kind, got, want)
		}
	}
	if got := served.names(); !slices.Equal(got, []string{"up__a", "up__c"}) {
		t.Fatalf("served after drift %v", got)
	}
}
