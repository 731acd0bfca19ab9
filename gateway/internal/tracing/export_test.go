package tracing

import (
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// collector is a local OTLP/HTTP receiver of traces (protobuf).
type collector struct {
	mu    sync.Mutex
	spans []*tracepb.Span
	hold  chan struct{} // when non-nil, requests wait for it
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if c.hold != nil {
		select {
		case <-c.hold:
		case <-r.Context().Done():
		}
	}
	b, _ := io.ReadAll(r.Body)
	var in coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	for _, rs := range in.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			c.spans = append(c.spans, ss.Spans...)
		}
	}
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
}

// A span ended before Shutdown reaches the collector by Shutdown, with the
// caller's parent, the resource's service name from the environment, and
// the outcome's attributes; nothing runs after it (goleak).
func TestShutdownFlushes(t *testing.T) {
	col := &collector{}
	hs := httptest.NewServer(col)
	defer hs.Close()
	t.Setenv(EnvTracesEndpoint, hs.URL+"/v1/traces")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "600000") // only Shutdown exports
	tr, err := New(t.Context(), &Options{Version: "v9"})
	if err != nil || !tr.On() {
		t.Fatalf("New = %v, %v", tr, err)
	}
	_, call := tr.Start(t.Context(), "sess-1", http.Header{"Traceparent": {tpA}}, nil, nil)
	call.Event("admission")
	call.End(Outcome{Tool: "fx__echo", Label: "rate_limited", Front: "sdk"})
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	if len(col.spans) != 1 {
		t.Fatalf("the collector got %d spans, want 1", len(col.spans))
	}
	s := col.spans[0]
	if s.Name != "tools/call fx__echo" || hex.EncodeToString(s.TraceId) != "4bf92f3577b34da6a3ce929d0e0e4736" || hex.EncodeToString(s.ParentSpanId) != "00f067aa0ba902b7" {
		t.Errorf("span %s trace %x parent %x", s.Name, s.TraceId, s.ParentSpanId)
	}
	got := map[string]string{}
	for _, kv := range s.Attributes {
		got[kv.Key] = kv.Value.GetStringValue()
	}
	for k, v := range map[string]string{"gatehouse.refusal.code": "rate_limited", "gatehouse.step": "rate_limit", "error.type": "rate_limited",
		"mcp.session.id": "sess-1", "network.transport": "tcp"} {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

// A collector that does not answer holds Shutdown only until its
// context's deadline; the exporter's goroutines end (goleak).
func TestShutdownIsBounded(t *testing.T) {
	col := &collector{hold: make(chan struct{})}
	hs := httptest.NewServer(col)
	defer hs.Close()
	defer close(col.hold)
	t.Setenv(EnvTracesEndpoint, hs.URL+"/v1/traces")
	tr, err := New(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, call := tr.Start(t.Context(), "", nil, nil, nil)
	call.End(Outcome{Label: "ok"})
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if err := tr.Shutdown(ctx); err == nil {
		t.Error("Shutdown reported no error with a collector that never answered")
	}
}

// A resource attribute list the SDK cannot read stops New, naming it.
func TestNewBadResource(t *testing.T) {
	t.Setenv(EnvTracesExporter, "otlp")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment")
	tr, err := New(t.Context(), nil)
	if err == nil || tr != nil || !strings.Contains(err.Error(), "OTEL_RESOURCE_ATTRIBUTES") {
		t.Errorf("New = %v, %v; want an error naming OTEL_RESOURCE_ATTRIBUTES", tr, err)
	}
}
