package e2e

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is a local OTLP/HTTP traces receiver (protobuf): it keeps
// every span it is sent and counts the requests.
type otlpReceiver struct {
	url      string // the traces endpoint
	requests atomic.Int32
	mu       sync.Mutex
	spans    []*tracepb.Span
}

func newReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	r := &otlpReceiver{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.requests.Add(1)
		body, err := io.ReadAll(req.Body)
		var in coltracepb.ExportTraceServiceRequest
		if err != nil || req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" || proto.Unmarshal(body, &in) != nil {
			t.Errorf("receiver: a request it cannot read: %s %s %q (%v)", req.Method, req.URL.Path, req.Header.Get("Content-Type"), err)
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range in.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				r.spans = append(r.spans, ss.Spans...)
			}
		}
		r.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(hs.Close)
	r.url = hs.URL + "/v1/traces"
	return r
}

// trace returns the spans of trace id (hex).
func (r *otlpReceiver) trace(id string) []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range r.spans {
		if hex.EncodeToString(s.TraceId) == id {
			out = append(out, s)
		}
	}
	return out
}

func attr(s *tracepb.Span, key string) (string, bool) {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			switch v := kv.Value.Value.(type) {
			case *commonpb.AnyValue_StringValue:
				return v.StringValue, true
			case *commonpb.AnyValue_IntValue:
				return fmt.Sprint(v.IntValue), true
			case *commonpb.AnyValue_BoolValue:
				return fmt.Sprint(v.BoolValue), true
			}
			return kv.Value.String(), true
		}
	}
	return "", false
}

func events(s *tracepb.Span) []string {
	var out []string
	for _, e := range s.Events {
		out = append(out, e.Name)
	}
	return out
}

// traceUpstream is a real go-sdk MCP server over streamable HTTP whose
// get_weather tool records the traceparent header and _meta.traceparent
// (and tracestate) of every call.
type traceUpstream struct {
	url string
	mu  sync.Mutex
	got []upstreamSaw
}

type upstreamSaw struct {
	header, headerState, meta, metaState string
}

func newTraceUpstream(t *testing.T) *traceUpstream {
	t.Helper()
	u := &traceUpstream{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "get_weather", Description: "The weather in a city.",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var saw upstreamSaw
			if req.Extra != nil && req.Extra.Header != nil {
				saw.header, saw.headerState = req.Extra.Header.Get("Traceparent"), req.Extra.Header.Get("Tracestate")
			}
			saw.meta, _ = req.Params.Meta["traceparent"].(string)
			saw.metaState, _ = req.Params.Meta["tracestate"].(string)
			u.mu.Lock()
			u.got = append(u.got, saw)
			u.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sunny"}}}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	u.url = hs.URL + "/mcp"
	return u
}

func (u *traceUpstream) calls() []upstreamSaw {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]upstreamSaw(nil), u.got...)
}

// traceHeader sets the traceparent header of a client's requests (none
// while empty).
type traceHeader struct {
	value atomic.Pointer[string]
}

func (h *traceHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	if v := h.value.Load(); v != nil && *v != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Traceparent", *v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func (h *traceHeader) set(v string) { h.value.Store(&v) }

// otelFree is this process's environment without any OTEL_* variable.
func otelFree(extra ...string) []string {
	var out []string
	for _, kv := range env() {
		if !strings.HasPrefix(kv, "OTEL_") {
			out = append(out, kv)
		}
	}
	return append(out, extra...)
}

const secretCity = "SECRET-CITY-ARGUMENT-5521"

// TestTraceEndToEnd: one call of a real go-sdk client through a real
// gatehouse serve (HTTP on 127.0.0.1) to a real go-sdk upstream (HTTP),
// traced to a local OTLP receiver, on both senders: the caller's trace id
// is kept end to end (its traceparent header, or its _meta.traceparent,
// which wins), the gateway's server span is the caller's span's child, its
// client span the server span's, and the upstream sees that client span as
// its parent in both its traceparent header and its _meta.traceparent. A
// malformed traceparent starts a new trace and the call runs. A refused
// call's span carries the refusal code and has no upstream span; an
// unknown tool's span is not named after it. No argument reaches a span.
func TestTraceEndToEnd(t *testing.T) {
	for _, bytePath := range []bool{true, false} {
		t.Run(fmt.Sprintf("bytePath=%v", bytePath), func(t *testing.T) {
			t.Parallel()
			testTrace(t, bytePath)
		})
	}
}

func testTrace(t *testing.T, bytePath bool) {
	up := newTraceUpstream(t)
	rcv := newReceiver(t)
	dir := t.TempDir()
	writeConfig(t, dir, fmt.Sprintf("servers:\n  up:\n    type: streamable-http\n    url: %s\nhttp: {bytePath: %v}\nfirewall: {maxCallsPerRun: 1}\n", up.url, bytePath))
	g := startGatewayEnv(t, dir, otelFree("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="+rcv.url, "OTEL_SERVICE_NAME=gatehouse-e2e"))

	hdr := &traceHeader{}
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: g.url, HTTPClient: &http.Client{Transport: hdr}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.ListTools(context.Background(), nil); err != nil { // the byte front serves sessions that listed
		t.Fatal(err)
	}
	args := map[string]any{"city": secretCity}
	const (
		t1, p1 = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
		t2, p2 = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
		t4, p4 = "11111111111111111111111111111111", "2222222222222222"
		t5, p5 = "33333333333333333333333333333333", "4444444444444444"
	)
	// 1: the caller's traceparent in the HTTP header only.
	hdr.set("00-" + t1 + "-" + p1 + "-01")
	mustCall(t, cs, "up__get_weather", args, map[string]any{"runId": "r1"})
	// 2: in _meta (with tracestate and a key), and another in the header:
	// _meta wins, the header's span is a link.
	hdr.set("00-" + t5 + "-" + p5 + "-01")
	mustCall(t, cs, "up__get_weather", args, map[string]any{"runId": "r2", "idempotencyKey": "k-2",
		"traceparent": "00-" + t2 + "-" + p2 + "-01", "tracestate": "rojo=00f067aa0ba902b7"})
	// 3: a malformed traceparent: ignored (a new trace), the call runs.
	hdr.set("00-zzzz-not-a-trace-01")
	mustCall(t, cs, "up__get_weather", args, map[string]any{"runId": "r3"})
	// 4: the run's second call is refused by the firewall (call_limit).
	hdr.set("")
	mustCall(t, cs, "up__get_weather", args, map[string]any{"runId": "cap"})
	hdr.set("00-" + t4 + "-" + p4 + "-01")
	wantRefusal(t, mustCall(t, cs, "up__get_weather", args, map[string]any{"runId": "cap"}), "call_limit")
	// 5: an unknown tool, with the header's trace t5 again.
	hdr.set("00-" + t5 + "-" + p5 + "-01")
	if _, err := call(t, cs, "no_such_tool", args, nil); err == nil {
		t.Error("no_such_tool answered without an error")
	}
	saw := up.calls()
	if len(saw) != 4 {
		t.Fatalf("the upstream ran %d calls, want 4: %+v", len(saw), saw)
	}
	front, sender := "sdk", "sdk"
	if bytePath {
		front, sender = "bytes", "bytes"
	}
	// The call lines reach the log within its flush interval (100 ms).
	for range 100 {
		k := 0
		for _, l := range g.callLogs() {
			if l["tool"] == "up__get_weather" {
				k++
			}
		}
		if k >= 5 {
			break
		}
		sleep(20)
	}
	n := 0
	for i, l := range g.callLogs() {
		if l["tool"] != "up__get_weather" {
			continue
		}
		n++
		if l["front"] != front || l["outcome"] == "ok" && l["sender"] != sender {
			t.Errorf("call %d: front %v, sender %v; want %s, %s: %v", i, l["front"], l["sender"], front, sender, l)
		}
	}
	if n != 5 {
		t.Errorf("%d call log lines of up__get_weather, want 5", n)
	}
	_ = cs.Close()
	if err := g.stop(syscall.SIGTERM); err != nil { // the spans are flushed at shutdown
		t.Fatalf("gatehouse serve: %v\n%s", err, g.logText())
	}

	// serverAndClient checks one sent call's two spans and returns them.
	serverAndClient := func(trace, parent string, saw upstreamSaw) (srv, cli *tracepb.Span) {
		t.Helper()
		spans := rcv.trace(trace)
		for _, s := range spans {
			switch s.Kind {
			case tracepb.Span_SPAN_KIND_SERVER:
				srv = s
			case tracepb.Span_SPAN_KIND_CLIENT:
				cli = s
			}
		}
		if len(spans) != 2 || srv == nil || cli == nil {
			t.Fatalf("trace %s: %d spans (%v), want a server and a client span", trace, len(spans), spans)
		}
		if got := hex.EncodeToString(srv.ParentSpanId); got != parent {
			t.Errorf("server span's parent = %q, want the caller's %q", got, parent)
		}
		if !bytesEqual(cli.ParentSpanId, srv.SpanId) {
			t.Errorf("client span's parent = %x, want the server span %x", cli.ParentSpanId, srv.SpanId)
		}
		want := "00-" + trace + "-" + hex.EncodeToString(cli.SpanId) + "-01"
		if saw.header != want || saw.meta != want {
			t.Errorf("the upstream saw traceparent header %q and _meta %q, want %q in both", saw.header, saw.meta, want)
		}
		if srv.Name != "tools/call up__get_weather" || cli.Name != "tools/call get_weather" {
			t.Errorf("span names %q, %q", srv.Name, cli.Name)
		}
		for k, v := range map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "up__get_weather",
			"gen_ai.operation.name": "execute_tool", "network.transport": "tcp", "gatehouse.outcome": "ok",
			"gatehouse.front": front, "gatehouse.sender": sender, "gatehouse.server": "up"} {
			if got, _ := attr(srv, k); got != v {
				t.Errorf("server span %s = %q, want %q", k, got, v)
			}
		}
		if sid, _ := attr(srv, "mcp.session.id"); sid == "" {
			t.Error("server span has no mcp.session.id")
		}
		for k, v := range map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "get_weather",
			"server.address": "127.0.0.1", "network.transport": "tcp", "gatehouse.server": "up"} {
			if got, _ := attr(cli, k); got != v {
				t.Errorf("client span %s = %q, want %q", k, got, v)
			}
		}
		return srv, cli
	}

	srv, _ := serverAndClient(t1, p1, saw[0])
	if ev := strings.Join(events(srv), ","); ev != "gatehouse.admission,gatehouse.guards" {
		t.Errorf("call 1 events = %s", ev)
	}
	srv, _ = serverAndClient(t2, p2, saw[1])
	if ev := strings.Join(events(srv), ","); ev != "gatehouse.admission,gatehouse.guards,gatehouse.claim,gatehouse.completion" {
		t.Errorf("call 2 events = %s", ev)
	}
	if len(srv.Links) != 1 || hex.EncodeToString(srv.Links[0].TraceId) != t5 || hex.EncodeToString(srv.Links[0].SpanId) != p5 {
		t.Errorf("call 2: links %v, want the header's span %s-%s", srv.Links, t5, p5)
	}
	if saw[1].headerState != "rojo=00f067aa0ba902b7" || saw[1].metaState != "rojo=00f067aa0ba902b7" {
		t.Errorf("call 2: the upstream saw tracestate %q (header), %q (_meta)", saw[1].headerState, saw[1].metaState)
	}
	// 3: a new trace, its id the one the upstream saw.
	parts := strings.Split(saw[2].header, "-")
	if len(parts) != 4 || parts[1] == t1 || parts[1] == t2 || parts[1] == t5 {
		t.Fatalf("call 3: the upstream saw traceparent %q, want a new trace", saw[2].header)
	}
	if srv, _ = serverAndClient(parts[1], "", saw[2]); len(srv.ParentSpanId) != 0 {
		t.Errorf("call 3: the server span has a parent %x", srv.ParentSpanId)
	}
	// 4: refused: one span, the code, no upstream span.
	refused := rcv.trace(t4)
	if len(refused) != 1 || refused[0].Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Fatalf("the refused call's trace has %d spans, want its server span only: %v", len(refused), refused)
	}
	for k, v := range map[string]string{"gatehouse.refusal.code": "call_limit", "error.type": "call_limit", "gatehouse.step": "firewall"} {
		if got, _ := attr(refused[0], k); got != v {
			t.Errorf("refused span %s = %q, want %q", k, got, v)
		}
	}
	if refused[0].Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("refused span status %v", refused[0].Status)
	}
	// 5: an unknown tool: not in the span's name, no upstream span.
	unknown := rcv.trace(t5)
	if len(unknown) != 1 || unknown[0].Name != "tools/call" {
		t.Fatalf("the unknown tool's trace: %v, want one span named tools/call", unknown)
	}
	if et, _ := attr(unknown[0], "error.type"); et == "" {
		t.Error("the unknown tool's span has no error.type")
	}
	if _, ok := attr(unknown[0], "gen_ai.tool.name"); ok {
		t.Error("the unknown tool's name is an attribute")
	}
	// No argument, idempotency key or token in any span.
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	for _, s := range rcv.spans {
		if txt := s.String(); strings.Contains(txt, secretCity) || strings.Contains(txt, "k-2") {
			t.Errorf("a span holds a caller's data: %s", txt)
		}
	}
}

func bytesEqual(a, b []byte) bool { return hex.EncodeToString(a) == hex.EncodeToString(b) }

// TestTraceOffByDefault: without OTEL_* the gateway traces nothing (the
// upstream gets no trace context beyond what the caller put in _meta,
// which passes through untouched); with an endpoint set but
// OTEL_TRACES_EXPORTER=none, or OTEL_SDK_DISABLED=true, the receiver it
// names sees no request at all, not even at shutdown.
func TestTraceOffByDefault(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t)
	for i, extra := range [][]string{nil,
		// (metrics have their own switch: off here, or they would go to the same endpoint)
		{"OTEL_EXPORTER_OTLP_ENDPOINT=" + strings.TrimSuffix(rcv.url, "/v1/traces"), "OTEL_TRACES_EXPORTER=none", "OTEL_METRICS_EXPORTER=none"},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=" + rcv.url, "OTEL_SDK_DISABLED=true"}} {
		up := newTraceUpstream(t)
		dir := t.TempDir()
		writeConfig(t, dir, fmt.Sprintf("servers:\n  up:\n    type: streamable-http\n    url: %s\n", up.url))
		g := startGatewayEnv(t, dir, otelFree(extra...))
		hdr := &traceHeader{}
		hdr.set("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
		c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: g.url, HTTPClient: &http.Client{Transport: hdr}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		mustCall(t, cs, "up__get_weather", nil, nil)
		const callers = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
		mustCall(t, cs, "up__get_weather", nil, map[string]any{"traceparent": callers})
		_ = cs.Close()
		if err := g.stop(syscall.SIGTERM); err != nil {
			t.Fatalf("env %v: gatehouse serve: %v", extra, err)
		}
		saw := up.calls()
		if len(saw) != 2 || saw[0] != (upstreamSaw{}) || saw[1] != (upstreamSaw{meta: callers}) {
			t.Errorf("env %d %v: the upstream saw %+v; want no trace context but the caller's own _meta", i, extra, saw)
		}
	}
	if n := rcv.requests.Load(); n != 0 {
		t.Errorf("the receiver got %d requests with tracing off", n)
	}
}

// TestTraceStdioUpstream: a stdio upstream gets the trace context in _meta
// (its only carrier): the client span's, in the caller's trace.
func TestTraceStdioUpstream(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t)
	dir := t.TempDir()
	writeConfig(t, dir, "servers:\n"+fixtureServer("fx", "-tools", "meta"))
	g := startGatewayEnv(t, dir, otelFree("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="+rcv.url))
	hdr := &traceHeader{}
	const trace = "5bf92f3577b34da6a3ce929d0e0e4736"
	hdr.set("00-" + trace + "-00f067aa0ba902b7-01")
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: g.url, HTTPClient: &http.Client{Transport: hdr}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	res := mustCall(t, cs, "fx__meta", nil, map[string]any{"traceparent": "00-ffffffffffffffffffffffffffffffff-00f067aa0ba902b7-zz"})
	_ = cs.Close()
	if err := g.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("gatehouse serve: %v", err)
	}
	var cli *tracepb.Span
	for _, s := range rcv.trace(trace) {
		if s.Kind == tracepb.Span_SPAN_KIND_CLIENT {
			cli = s
		}
	}
	if cli == nil {
		t.Fatalf("no client span in trace %s: %v", trace, rcv.trace(trace))
	}
	if tr, _ := attr(cli, "network.transport"); tr != "pipe" {
		t.Errorf("client span network.transport = %q, want pipe", tr)
	}
	want := `"traceparent":"00-` + trace + "-" + hex.EncodeToString(cli.SpanId) + `-01"`
	if got := text(res); !strings.Contains(got, want) {
		t.Errorf("the stdio upstream's _meta = %s, want %s (the caller's malformed one replaced)", got, want)
	}
}
