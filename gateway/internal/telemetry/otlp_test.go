package telemetry

import (
	"context"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is a local OTLP/HTTP metrics receiver: it keeps every
// export request it is sent.
type otlpReceiver struct {
	mu   sync.Mutex
	reqs []*colmetricpb.ExportMetricsServiceRequest
	srv  *httptest.Server
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		in := new(colmetricpb.ExportMetricsServiceRequest)
		if err != nil || req.URL.Path != "/v1/metrics" || req.Header.Get("Content-Type") != "application/x-protobuf" || proto.Unmarshal(body, in) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.reqs = append(r.reqs, in)
		r.mu.Unlock()
		out, _ := proto.Marshal(&colmetricpb.ExportMetricsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *otlpReceiver) requests() []*colmetricpb.ExportMetricsServiceRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reqs)
}

// clearOTLPEnv unsets every variable OTLPFromEnv reads, for the test.
func clearOTLPEnv(t *testing.T) {
	for _, k := range []string{"OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
		"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_SDK_DISABLED"} {
		t.Setenv(k, "")
	}
}

// TestOTLPExport: with OTEL_EXPORTER_OTLP_ENDPOINT set, the metrics go to
// a local OTLP receiver over HTTP with the names, attributes, values and
// buckets of /metrics, under service.name gatehouse; Close sends the last
// export and stops the exporter's goroutine (goleak in TestMain).
func TestOTLPExport(t *testing.T) {
	clearOTLPEnv(t)
	rcv := newOTLPReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.srv.URL)
	opts, err := OTLPFromEnv(t.Context())
	if err != nil || len(opts) == 0 {
		t.Fatalf("OTLPFromEnv: %v, %d options", err, len(opts))
	}
	ins := NewInstruments(nil, t.Context(), func() int { return 3 }, opts...)
	m := ins.Metrics
	m.ObserveCall("bank__transfer", OutcomeOK, 3*time.Millisecond)
	m.Tool("bank__transfer").ObserveCall(OutcomeOK, 2*time.Second)
	m.ObserveCall(UnknownTool, "denied", 50*time.Microsecond)
	m.SetUpstreamUp("bank", true)
	if err := ins.Close(t.Context()); err != nil { // the last export
		t.Fatal(err)
	}
	reqs := rcv.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d export requests, want 1 (the interval is 60 s; Close exports)", len(reqs))
	}
	rms := reqs[0].GetResourceMetrics()
	if len(rms) != 1 {
		t.Fatalf("%d resources", len(rms))
	}
	var service string
	for _, kv := range rms[0].GetResource().GetAttributes() {
		if kv.GetKey() == "service.name" {
			service = kv.GetValue().GetStringValue()
		}
	}
	if service != "gatehouse" {
		t.Errorf("service.name %q", service)
	}
	got := map[string]*metricpb.Metric{}
	for _, sm := range rms[0].GetScopeMetrics() {
		if sm.GetScope().GetName() != ScopeName {
			t.Errorf("scope %q", sm.GetScope().GetName())
		}
		for _, mt := range sm.GetMetrics() {
			got[mt.GetName()] = mt
		}
	}
	calls := got["gatehouse_calls_total"].GetSum()
	if calls == nil || !calls.GetIsMonotonic() || calls.GetAggregationTemporality() != metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE {
		t.Fatalf("gatehouse_calls_total: %v", got["gatehouse_calls_total"])
	}
	points := map[string]int64{}
	for _, dp := range calls.GetDataPoints() {
		points[pointKey(dp.GetAttributes())] = dp.GetAsInt()
	}
	if want := map[string]int64{"outcome=ok,tool=bank__transfer": 2, "outcome=denied,tool=_unknown": 1}; !maps.Equal(points, want) {
		t.Errorf("calls %v, want %v", points, want)
	}
	h := got["gatehouse_call_duration_seconds"].GetHistogram()
	if h == nil || len(h.GetDataPoints()) != 2 {
		t.Fatalf("histogram %v", got["gatehouse_call_duration_seconds"])
	}
	for _, dp := range h.GetDataPoints() {
		if !slices.Equal(dp.GetExplicitBounds(), LatencyBuckets()) {
			t.Errorf("bounds %v", dp.GetExplicitBounds())
		}
		if k := pointKey(dp.GetAttributes()); k == "tool=bank__transfer" && (dp.GetCount() != 2 || dp.GetSum() != 2.003) {
			t.Errorf("%s: count %d sum %v", k, dp.GetCount(), dp.GetSum())
		}
	}
	gauge := func(name string) map[string]float64 {
		out := map[string]float64{}
		for _, dp := range got[name].GetGauge().GetDataPoints() {
			out[pointKey(dp.GetAttributes())] = dp.GetAsDouble()
		}
		return out
	}
	if g := gauge("gatehouse_sessions"); !maps.Equal(g, map[string]float64{"": 3}) {
		t.Errorf("sessions %v", g)
	}
	if g := gauge("gatehouse_upstream_up"); !maps.Equal(g, map[string]float64{"server=bank": 1}) {
		t.Errorf("upstream_up %v", g)
	}
	if len(got) != 4 {
		t.Errorf("metrics %v", slices.Sorted(maps.Keys(got)))
	}
}

// OTLP is off by default, and every way its variables can be wrong is
// refused with ErrOTLPConfig and the variable's name.
func TestOTLPFromEnv(t *testing.T) {
	for _, c := range []struct {
		name string
		env  map[string]string
		on   bool
		err  string // in the error; "" for none
	}{
		{"unset", nil, false, ""},
		{"prometheus only", map[string]string{"OTEL_METRICS_EXPORTER": "prometheus"}, false, ""},
		{"none beats an endpoint", map[string]string{"OTEL_METRICS_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, false, ""},
		{"the SDK disabled", map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_METRICS_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, false, ""},
		{"the SDK disabled, any case", map[string]string{"OTEL_SDK_DISABLED": " TRUE", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, false, ""},
		{"otlp", map[string]string{"OTEL_METRICS_EXPORTER": "otlp"}, true, ""},
		{"otlp and prometheus", map[string]string{"OTEL_METRICS_EXPORTER": "prometheus, otlp"}, true, ""},
		{"metrics endpoint", map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "https://127.0.0.1:4318/v1/metrics"}, true, ""},
		{"unknown exporter", map[string]string{"OTEL_METRICS_EXPORTER": "console"}, false, `"console" is not an exporter`},
		{"none with another", map[string]string{"OTEL_METRICS_EXPORTER": "none,otlp"}, false, "none beside another"},
		{"grpc", map[string]string{"OTEL_METRICS_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, false, "OTEL_EXPORTER_OTLP_PROTOCOL=\"grpc\""},
		{"json", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "http/json"}, false, "http/protobuf only"},
		{"no scheme", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "127.0.0.1:4318"}, false, "OTEL_EXPORTER_OTLP_ENDPOINT=\"127.0.0.1:4318\" is not an http or https URL"},
		{"other scheme", map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "ftp://127.0.0.1/v1/metrics"}, false, "is not an http or https URL"},
		{"no host", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http:///v1"}, false, "with a host"},
		{"bad resource", map[string]string{"OTEL_METRICS_EXPORTER": "otlp", "OTEL_RESOURCE_ATTRIBUTES": "team,b=1"}, false, "OTEL_RESOURCE_ATTRIBUTES"},
	} {
		t.Run(c.name, func(t *testing.T) {
			clearOTLPEnv(t)
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			opts, err := OTLPFromEnv(t.Context())
			if c.err != "" {
				if !errors.Is(err, ErrOTLPConfig) || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want one with %q", err, c.err)
				}
				return
			}
			if err != nil || (len(opts) > 0) != c.on {
				t.Fatalf("err %v, %d options, want on %v", err, len(opts), c.on)
			}
			if c.on { // start and stop the exporter: nothing is left running
				ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
				defer cancel()
				// Nothing listens at the endpoint: the last export fails.
				_ = NewInstruments(nil, ctx, nil, opts...).Close(ctx)
			}
		})
	}
}

// pointKey writes a data point's attributes as name=value pairs in name
// order.
func pointKey(kvs []*commonpb.KeyValue) string {
	var parts []string
	for _, kv := range kvs {
		parts = append(parts, kv.GetKey()+"="+kv.GetValue().GetStringValue())
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}
