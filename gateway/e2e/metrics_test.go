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
// with the latency histogram, upstream health, sessions, approvals
// pending and a journal lag of 0; a name that is no tool is counted under _unknown, never under
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
		`gatehouse_journal_lag_seconds`:                                      0, // every journaled call finished
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

// TestMetricsJournalLag: gatehouse_journal_lag_seconds is 0 while no
// journaled call is in flight, grows while a slow call's record is
// started, and drops back to 0 once the call has finished.
func TestMetricsJournalLag(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	effects, marker := filepath.Join(dir, "effects"), filepath.Join(dir, "marker")
	writeConfig(t, dir, fmt.Sprintf("servers:\n%smetrics:\n  listen: 127.0.0.1:0\n", slowServer("slow", effects, marker)))
	g := startGateway(t, dir)
	maddr := g.metricsAddr(t)
	const lag = `gatehouse_journal_lag_seconds`
	if v, ok := scrape(t, maddr)[lag]; !ok || v != 0 {
		t.Fatalf("%s before any call = %v (present %v), want 0", lag, v, ok)
	}

	cs := connect(t, g.url, "")
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		r, err := call(t, cs, "slow__slow_count", map[string]any{"ms": 4000}, key("lag1"))
		if err == nil && (r.IsError || text(r) != "1") {
			err = fmt.Errorf("slow call answered %q (isError %v)", text(r), r.IsError)
		}
		done <- err
	}()
	waitFile(t, marker) // the record is started and the upstream is working
	var seen float64
	waitFor(t, func() bool { seen = scrape(t, maddr)[lag]; return seen > 0 })
	if limit := time.Since(start).Seconds() + 1; seen > limit {
		t.Fatalf("%s = %v with the call started at most %.1fs ago", lag, seen, limit)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := len(lines(t, effects)); n != 1 {
		t.Fatalf("effects %d, want 1", n)
	}
	// The record is completed: the lag drops back (the answer is cached for
	// at most a second).
	waitFor(t, func() bool { v, ok := scrape(t, maddr)[lag]; return ok && v == 0 })
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
