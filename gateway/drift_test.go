package gateway

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/telemetry"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/testserver"
	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// An upstream that changes one tool, drops one and adds one is judged on
// the next re-listing (a reconnect, a reconcile): the served map follows (Refresh through OnChange),
// each kind of drift is counted once, and the firewall's contract check
// (wired to the toolset's pins) refuses the changed tool as quarantined,
// not with an approval that could not help.
func TestDriftFollowsToolsetAndIsCounted(t *testing.T) {
	dir := t.TempDir()
	schema := map[string]any{"type": "object"}
	write := func(name string, tools ...*mcp.Tool) string {
		p := filepath.Join(dir, name)
		if err := testserver.WriteToolsFile(p, tools); err != nil {
			t.Fatal(err)
		}
		return p
	}
	v1 := testserver.New(testserver.Config{ToolsFile: write("v1.json",
		&mcp.Tool{Name: "a", Description: "A.", InputSchema: schema},
		&mcp.Tool{Name: "b", Description: "B.", InputSchema: schema})})
	v2 := testserver.New(testserver.Config{ToolsFile: write("v2.json",
		&mcp.Tool{Name: "a", Description: "A, changed.", InputSchema: schema},
		&mcp.Tool{Name: "c", Description: "C.", InputSchema: schema})})
	var cur atomic.Pointer[http.Handler]
	h1, h2 := v1.Handler(false, nil), v2.Handler(false, nil)
	cur.Store(&h1)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*cur.Load()).ServeHTTP(w, r) })}
	go func() { _ = hs.Serve(ln) }()
	defer func() {
		_ = hs.Close()
		// v1's session was never closed by its client (its DELETE went to
		// v2): end it here.
		for _, f := range []*testserver.Fixture{v1, v2} {
			for ss := range f.Server().Sessions() {
				_ = ss.Close()
			}
		}
	}()

	cfg, err := ParseConfig([]byte("servers:\n  up:\n    type: streamable-http\n    url: http://"+ln.Addr().String()+"/mcp\n"), "t.yaml", dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	g, err := New(ctx, cfg, &Options{StoreDSN: "sqlite:" + filepath.Join(dir, "gh.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if got := g.Tools(); len(got) != 2 || got[0] != "up__a" || got[1] != "up__b" {
		t.Fatalf("tools %v", got)
	}

	// Switch the upstream; a reconcile re-lists it.
	d, err := g.pipe.guard.Check(ctx, policyCall(g, "up__a"))
	if err != nil || d.Verdict != policy.Allow {
		t.Fatalf("before the re-listing: %+v %v", d, err)
	}
	cur.Store(&h2)
	// The next call finds the session gone, reconnects and re-lists: the
	// toolset refuses with its typed error, which the gateway maps.
	_, err = g.Toolset().Call(ctx, "up__a", nil, toolset.CallInfo{})
	if de, ok := refusalOf(err); !ok || de.Code != "quarantined" {
		t.Fatalf("call after the switch: %v", err)
	}
	if got := g.Tools(); len(got) != 1 || got[0] != "up__a" {
		t.Fatalf("after drift the served map is %v, want only the quarantined up__a", got)
	}
	if info, _ := g.served.tool("up__a"); info.State != toolset.Quarantined {
		t.Fatalf("up__a state %q", info.State)
	}
	d, err = g.pipe.guard.Check(ctx, policyCall(g, "up__a"))
	if err != nil || d.Code != "quarantined" {
		t.Fatalf("firewall on a drifted tool: %+v %v", d, err)
	}
	for kind, want := range map[string]float64{telemetry.DriftQuarantined: 1, telemetry.DriftWithheld: 1, telemetry.DriftRemoved: 1} {
		if got := g.tel.Value("gatehouse_drift_events_total", "server", "up", "kind", kind); got != want {
			t.Errorf("drift %s = %v, want %v", kind, got, want)
		}
	}
	// The same drift seen again is not a new event.
	if err := g.Toolset().Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if got := g.tel.Value("gatehouse_drift_events_total", "server", "up", "kind", telemetry.DriftQuarantined); got != 1 {
		t.Errorf("a persisting drift was counted again: %v", got)
	}
}

func policyCall(g *Gateway, name string) policy.Call {
	info, _ := g.served.tool(name)
	return policy.Call{Server: info.Server, Tool: name, RemoteName: info.RemoteName, Subject: localSubject}
}
