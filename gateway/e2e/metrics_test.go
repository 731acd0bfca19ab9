package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMetricsEndpoint: after a known set of calls, /metrics (on its own
// listener) holds exactly their counts, by projected tool and outcome,
// with the latency histogram, upstream health, sessions and approvals
// pending; a name that is no tool is counted under _unknown, never under
// the caller's text.
func TestMetricsEndpoint(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	effects := filepath.Join(dir, "effects")
	writeConfig(t, dir, fmt.Sprintf("servers:\n%s  down:\n    type: streamable-http\n    url: http://127.0.0.1:1/mcp\ntools:\n  requireApproval: [fx__meta]\nmetrics:\n  listen: 127.0.0.1:0\n",
		fixtureServer("fx", "-tools", "echo,count,meta", "-effects", effects)))
	g := startGateway(t, dir)
	maddr := g.metricsAddr(t)
	if maddr == strings.TrimPrefix(strings.TrimSuffix(g.url, "/mcp"), "http://") {
		t.Fatal("metrics share the MCP listener")
	}
	cs := connect(t, g.url, "")
	for range 2 {
		mustCall(t, cs, "fx__echo", map[string]any{"text": "x"}, nil)
	}
	mustCall(t, cs, "fx__count", nil, key("c1"))
	mustCall(t, cs, "fx__count", nil, key("c1")) // replayed: ok, not re-run
	wantRefusal(t, mustCall(t, cs, "fx__count", map[string]any{"other": 1}, key("c1")), "key_reused")
	wantRefusal(t, mustCall(t, cs, "fx__meta", nil, key("m1")), "approval_required")
	if _, err := call(t, cs, "no_such_tool_CALLER_TEXT", nil, nil); err == nil {
		t.Fatal("unknown tool answered")
	}
	if n := len(lines(t, effects)); n != 1 {
		t.Fatalf("effects %d, want 1", n)
	}

	got := scrape(t, maddr)
	want := map[string]float64{
		`gatehouse_calls_total{tool="fx__echo",outcome="ok"}`:                2,
		`gatehouse_calls_total{tool="fx__count",outcome="ok"}`:               2,
		`gatehouse_calls_total{tool="fx__count",outcome="key_reused"}`:       1,
		`gatehouse_calls_total{tool="fx__meta",outcome="approval_required"}`: 1,
		`gatehouse_calls_total{tool="_unknown",outcome="unknown_tool"}`:      1,
		`gatehouse_call_duration_seconds_count{tool="fx__echo"}`:             2,
		`gatehouse_call_duration_seconds_count{tool="fx__count"}`:            3,
		`gatehouse_upstream_up{server="fx"}`:                                 1,
		`gatehouse_upstream_up{server="down"}`:                               0,
		`gatehouse_sessions`:                                                 1,
		`gatehouse_approvals_pending`:                                        1,
	}
	for series, v := range want {
		if gv, ok := got[series]; !ok || gv != v {
			t.Errorf("%s = %v (present %v), want %v", series, gv, ok, v)
		}
	}
	calls := 0.0
	for series, v := range got {
		if strings.HasPrefix(series, "gatehouse_calls_total{") {
			calls += v
		}
		if strings.Contains(series, "CALLER_TEXT") {
			t.Errorf("a caller's text became a label: %s", series)
		}
		if strings.HasPrefix(series, "gatehouse_journal_lag_seconds") {
			t.Errorf("journal lag has a sample but no source: %s", series)
		}
	}
	if calls != 7 {
		t.Errorf("calls counted %v, want 7:\n%v", calls, got)
	}

	// Approving the call: pending drops (the count is cached for at most
	// a second).
	id := wantRefusal(t, mustCall(t, cs, "fx__meta", nil, key("m1")), "approval_required")["approvalId"].(string)
	if out, errOut, code := cli(t, dir, "approvals", "approve", id, "--config", filepath.Join(dir, "gatehouse.yaml")); code != 0 {
		t.Fatalf("approve: %d %s%s", code, out, errOut)
	}
	waitFor(t, func() bool { return scrape(t, maddr)[`gatehouse_approvals_pending`] == 0 })
}

// waitFor polls cond for up to 10 seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
