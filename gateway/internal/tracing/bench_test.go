package tracing

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkCallSpanOn is what tracing adds to a call when on, the server
// span's part: parent from the header, events, the outcome, and the trace
// context injected into a byte front's _meta (the client span costs about
// as much again). The export runs in the background.
func BenchmarkCallSpanOn(b *testing.B) {
	hs := httptest.NewServer(&collector{})
	defer hs.Close()
	b.Setenv(EnvTracesEndpoint, hs.URL+"/v1/traces")
	tr, err := New(b.Context(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = tr.Shutdown(b.Context()) }()
	hdr := http.Header{"Traceparent": {tpA}}
	meta := json.RawMessage(`{"runId":"r1","x":1}`)
	b.ReportAllocs()
	for b.Loop() {
		_, call := tr.Start(b.Context(), "sess-1", hdr, nil, meta)
		call.Event("admission")
		call.Cleared(false)
		_, _ = injectMeta(nil, meta, tpB, "")
		call.End(Outcome{Tool: "fx__echo", Label: "ok", Front: "bytes", Sender: "bytes", Server: "fx"})
	}
}

// BenchmarkCallSpanOff is the same with tracing off: nil checks.
func BenchmarkCallSpanOff(b *testing.B) {
	var tr *Tracer
	hdr := http.Header{"Traceparent": {tpA}}
	b.ReportAllocs()
	for b.Loop() {
		_, call := tr.Start(b.Context(), "sess-1", hdr, nil, nil)
		call.Event("admission")
		call.Cleared(false)
		call.End(Outcome{Tool: "fx__echo", Label: "ok"})
	}
}
