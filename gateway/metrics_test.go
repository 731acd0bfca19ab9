package gateway

import (
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
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/telemetry"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/promtext"
)

// TestMetricsGolden: a gateway in front of two go-sdk upstreams over
// streamable HTTP, called by go-sdk clients, makes calls of each outcome
// (ok, tool_error, a refusal, an unknown tool, an upstream gone:
// unavailable), with two
// caller sessions open; GET /metrics over HTTP on 127.0.0.1 then holds
// exactly the families, series (label names, order and values) and values
// those calls imply, and nothing else: no otel_scope_* label, no
// target_info, no unit suffix, and no caller's text as a label value.
func TestMetricsGolden(t *testing.T) {
	newUp := func(name string, tools ...string) *httptest.Server {
		s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)
		for _, tool := range tools {
			mcp.AddTool(s, &mcp.Tool{Name: tool, Description: tool + "."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: tool}}, IsError: tool == "fail"}, nil, nil
			})
		}
		hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
		t.Cleanup(func() {
			hs.Close()
			for ss := range s.Sessions() { // the gone one's, which no DELETE can reach
				_ = ss.Close()
			}
		})
		return hs
	}
	up, gone := newUp("up", "echo", "fail", "pay"), newUp("gone", "echo")
	dir := t.TempDir()
	yml := fmt.Sprintf("listen: 127.0.0.1:0\nstore: sqlite:%s\ntools:\n  requireApproval: [up__pay]\nservers:\n"+
		"  up: {type: streamable-http, url: %q}\n  gone: {type: streamable-http, url: %q}\n",
		filepath.Join(dir, "g.db"), up.URL, gone.URL)
	g, url := serveGateway(t, yml, dir)
	ms := httptest.NewServer(g.MetricsHandler())
	defer ms.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	connect := func() *mcp.ClientSession {
		c := mcp.NewClient(&mcp.Implementation{Name: "caller", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, statefulSession())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	cs, other := connect(), connect()
	call := func(cs *mcp.ClientSession, name string, meta mcp.Meta) (*mcp.CallToolResult, error) {
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}, Meta: meta})
	}
	for _, c := range []*mcp.ClientSession{cs, other} {
		if res, err := call(c, "up__echo", nil); err != nil || res.IsError {
			t.Fatalf("echo: %v %+v", err, res)
		}
	}
	if res, err := call(cs, "up__fail", nil); err != nil || !res.IsError {
		t.Fatalf("fail: %v %+v", err, res)
	}
	if res, err := call(cs, "up__pay", mcp.Meta{"idempotencyKey": "k1"}); err != nil || !res.IsError ||
		!strings.Contains(fmt.Sprint(res.StructuredContent), "approval_required") {
		t.Fatalf("pay: %v %+v", err, res)
	}
	if _, err := call(cs, "no_such_tool_CALLER_TEXT", nil); err == nil {
		t.Fatal("an unknown tool answered")
	}
	gone.CloseClientConnections()
	gone.Close()
	if res, err := call(cs, "gone__echo", nil); err == nil && !res.IsError {
		t.Fatalf("a gone upstream answered: %+v", res)
	}

	res, err := ms.Client().Get(ms.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("GET /metrics: %v %s %q", err, res.Status, res.Header.Get("Content-Type"))
	}
	text := string(body)
	fams := promtext.MustParse(t, text)

	// Every series but the histogram's buckets and sums (which depend on
	// how long the calls took), with its value.
	want := map[string]float64{
		`gatehouse_calls_total{tool="up__echo",outcome="ok"}`:               2,
		`gatehouse_calls_total{tool="up__fail",outcome="tool_error"}`:       1,
		`gatehouse_calls_total{tool="up__pay",outcome="approval_required"}`: 1,
		`gatehouse_calls_total{tool="_unknown",outcome="unknown_tool"}`:     1,
		`gatehouse_calls_total{tool="gone__echo",outcome="unavailable"}`:    1, // a lost upstream
		`gatehouse_call_duration_seconds_count{tool="up__echo"}`:            2,
		`gatehouse_call_duration_seconds_count{tool="up__fail"}`:            1,
		`gatehouse_call_duration_seconds_count{tool="up__pay"}`:             1,
		`gatehouse_call_duration_seconds_count{tool="_unknown"}`:            1,
		`gatehouse_call_duration_seconds_count{tool="gone__echo"}`:          1,
		`gatehouse_upstream_up{server="up"}`:                                1,
		`gatehouse_upstream_up{server="gone"}`:                              0,
		`gatehouse_sessions`:                                                2,
		`gatehouse_approvals_pending`:                                       1,
		`gatehouse_journal_lag_seconds`:                                     0,
	}
	got := map[string]float64{}
	types := map[string]string{}
	var buckets []string
	for _, f := range fams {
		types[f.Name] = f.Type
		for _, s := range f.Samples {
			var ls []string
			for _, l := range s.Labels {
				if l.Name == "le" {
					continue
				}
				ls = append(ls, fmt.Sprintf("%s=%q", l.Name, l.Value))
			}
			key := s.Name
			if len(ls) > 0 {
				key += "{" + strings.Join(ls, ",") + "}"
			}
			switch {
			case strings.HasSuffix(s.Name, "_bucket"):
				if le, _ := s.Label("le"); strings.Contains(key, `"up__echo"`) {
					buckets = append(buckets, le)
				}
				continue
			case strings.HasSuffix(s.Name, "_sum"):
				if s.Value <= 0 {
					t.Errorf("%s = %v", key, s.Value)
				}
				continue
			}
			got[key] = s.Value
			if strings.Contains(key, "CALLER_TEXT") || strings.Contains(key, "otel_") {
				t.Errorf("label %s", key)
			}
		}
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
		// The exposition's own bytes: labels in the catalogue's order.
		if !strings.Contains(text, "\n"+k+" ") {
			t.Errorf("%s not written as such", k)
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected series %s = %v", k, v)
		}
	}
	wantTypes := map[string]string{
		"gatehouse_calls_total": "counter", "gatehouse_call_duration_seconds": "histogram",
		"gatehouse_upstream_up": "gauge", "gatehouse_sessions": "gauge",
		"gatehouse_approvals_pending": "gauge", "gatehouse_journal_lag_seconds": "gauge",
	}
	for name, typ := range types {
		if wantTypes[name] != typ {
			t.Errorf("family %s of type %s", name, typ)
		}
	}
	if len(types) != len(wantTypes) {
		t.Errorf("families %v, want %v", types, wantTypes)
	}
	var le []string
	for _, b := range telemetry.LatencyBuckets() {
		le = append(le, fmt.Sprint(b))
	}
	if !slices.Equal(buckets, append(le, "+Inf")) {
		t.Errorf("buckets %v", buckets)
	}
}

// TestMetricsOTLP: with OTEL_EXPORTER_OTLP_METRICS_ENDPOINT set, the
// gateway also exports its metrics over OTLP/HTTP: a local receiver gets
// the call through a go-sdk upstream counted under the same name and
// attributes as /metrics, sent when the gateway closes (the interval is
// 60 s). Without the variable nothing is exported (TestOTLPFromEnv in
// package telemetry).
func TestMetricsOTLP(t *testing.T) {
	var mu sync.Mutex
	var got []*colmetricpb.ExportMetricsServiceRequest
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		in := new(colmetricpb.ExportMetricsServiceRequest)
		if r.URL.Path != "/v1/metrics" || proto.Unmarshal(body, in) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, in)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer rcv.Close()
	for _, k := range []string{"OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL",
		"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES"} {
		t.Setenv(k, "")
	}
	t.Setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", rcv.URL+"/v1/metrics")

	s := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo"}}}, nil, nil
	})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	defer up.Close()
	dir := t.TempDir()
	g, url := serveGateway(t, fmt.Sprintf("listen: 127.0.0.1:0\nstore: sqlite:%s\nservers:\n  up: {type: streamable-http, url: %q}\n",
		filepath.Join(dir, "g.db"), up.URL), dir)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "caller", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, statefulSession())
	if err != nil {
		t.Fatal(err)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Fatalf("echo: %v %+v", err, res)
	}
	_ = cs.Close()
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 {
		t.Fatalf("%d exports, want 1", len(got))
	}
	var calls []string
	for _, rm := range got[0].GetResourceMetrics() {
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				if m.GetName() != "gatehouse_calls_total" {
					continue
				}
				for _, dp := range m.GetSum().GetDataPoints() {
					var kv []string
					for _, a := range dp.GetAttributes() {
						kv = append(kv, a.GetKey()+"="+a.GetValue().GetStringValue())
					}
					calls = append(calls, fmt.Sprintf("%s %d", strings.Join(kv, ","), dp.GetAsInt()))
				}
			}
		}
	}
	if want := []string{"outcome=ok,tool=up__echo 1"}; !slices.Equal(calls, want) {
		t.Fatalf("gatehouse_calls_total exported %q, want %q", calls, want)
	}
}
