package tracing

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
	"unicode/utf8"

	"go.opentelemetry.io/otel/trace"
)

const (
	tpA = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tpB = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
)

func TestMetaTrace(t *testing.T) {
	for _, tc := range []struct {
		name   string
		meta   map[string]any
		json   string
		tp, ts string
	}{
		{"none", nil, "", "", ""},
		{"map", map[string]any{"traceparent": tpA, "tracestate": "a=1", "x": 1.0}, "", tpA, "a=1"},
		{"map, not strings", map[string]any{"traceparent": 7.0, "tracestate": true}, "", "", ""},
		{"json", nil, `{"x":[1,{"traceparent":"no"}],"traceparent":"` + tpA + `","tracestate":"a=1"}`, tpA, "a=1"},
		{"json, escaped key", nil, `{"trace\u0070arent":"` + tpA + `"}`, tpA, ""},
		{"json, escaped value", nil, `{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0\u0031"}`, tpA, ""},
		{"json, not a string", nil, `{"traceparent":{"v":1},"tracestate":null}`, "", ""},
		{"json, not an object", nil, `["traceparent"]`, "", ""},
		{"map wins over json", map[string]any{}, `{"traceparent":"` + tpA + `"}`, "", ""},
	} {
		tp, ts := metaTrace(tc.meta, json.RawMessage(tc.json))
		if tp != tc.tp || ts != tc.ts {
			t.Errorf("%s: metaTrace = %q, %q; want %q, %q", tc.name, tp, ts, tc.tp, tc.ts)
		}
	}
}

// injectOracle is injectMeta by decoding: the caller's object with the two
// keys set.
func injectOracle(t testing.TB, meta json.RawMessage, tp, ts string) map[string]any {
	m := map[string]any{}
	if len(meta) > 0 {
		if err := json.Unmarshal(meta, &m); err != nil {
			t.Fatalf("oracle: %v", err)
		}
	}
	if m == nil {
		m = map[string]any{} // a null _meta is none: injected into a fresh object
	}
	m["traceparent"] = tp
	delete(m, "tracestate")
	if ts != "" {
		m["tracestate"] = ts
	}
	return m
}

func TestInjectMeta(t *testing.T) {
	for _, tc := range []struct {
		name, meta string
		ts         string
		bytes      bool // rewritten as bytes, not decoded
	}{
		{"empty object", `{}`, "", true},
		{"members kept", `{"a":1,"b":{"traceparent":"inner"},"c":"x"}`, "k=v", true},
		{"caller's replaced", `{"traceparent":"` + tpA + `","tracestate":"old=1","z":null}`, "new=2", true},
		{"caller's tracestate dropped", `{"tracestate":"old=1"}`, "", true},
		{"whitespace", " { \"a\" : [ 1 , 2 ] } ", "", true},
		{"escaped key: decoded", `{"trace\u0070arent":"` + tpA + `","q":"\u00e9"}`, "s=1", false},
	} {
		m, b := injectMeta(nil, json.RawMessage(tc.meta), tpB, tc.ts)
		if (b != nil) != tc.bytes || (m != nil) == tc.bytes {
			t.Errorf("%s: map %v, bytes %s; want bytes=%v", tc.name, m, b, tc.bytes)
			continue
		}
		var got map[string]any
		if b != nil {
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("%s: rewritten _meta %s is not JSON: %v", tc.name, b, err)
			}
		} else {
			got = m
		}
		if want := injectOracle(t, json.RawMessage(tc.meta), tpB, tc.ts); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: injected %v, want %v", tc.name, got, want)
		}
	}
	// A map is copied, never modified.
	src := map[string]any{"traceparent": tpA, "tracestate": "old=1", "a": 1.0}
	m, b := injectMeta(src, nil, tpB, "")
	if b != nil || m["traceparent"] != tpB || m["tracestate"] != nil || m["a"] != 1.0 || src["traceparent"] != tpA || src["tracestate"] != "old=1" {
		t.Errorf("map: got %v (%s), source now %v", m, b, src)
	}
	// No _meta at all: one with the trace context.
	if m, _ := injectMeta(nil, nil, tpB, ""); !reflect.DeepEqual(m, map[string]any{"traceparent": tpB}) {
		t.Errorf("no _meta: %v", m)
	}
	// Not an object: left for the relay to refuse.
	if m, b := injectMeta(nil, json.RawMessage(`[1]`), tpB, ""); m != nil || string(b) != `[1]` {
		t.Errorf("not an object: %v, %s", m, b)
	}
}

// FuzzInjectMeta: whatever _meta object a caller sends, the trace context
// injected as bytes is one valid JSON object equal to the decoded oracle.
func FuzzInjectMeta(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"traceparent":"x","tracestate":"y","b":[1,2]}`, `{"trace\u0070arent":1}`, ` {"a" : {"traceparent":"z"}} `, `[]`, `{"a":1,"a":2}`} {
		f.Add(s, "k=v")
	}
	f.Fuzz(func(t *testing.T, meta, ts string) {
		if !json.Valid([]byte(meta)) || !utf8.ValidString(ts) {
			return // a tracestate comes from the propagator, which takes printable ASCII only
		}
		var probe map[string]any
		if json.Unmarshal([]byte(meta), &probe) != nil {
			return // not an object
		}
		m, b := injectMeta(nil, json.RawMessage(meta), tpB, ts)
		got := m
		if b != nil {
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("%q: rewritten to %s, not JSON: %v", meta, b, err)
			}
		}
		if want := injectOracle(t, json.RawMessage(meta), tpB, ts); !reflect.DeepEqual(got, want) {
			t.Fatalf("%q, %q: injected %v, want %v", meta, ts, got, want)
		}
	})
}

// The parent of a call's span: _meta's traceparent, else the header's; the
// header's span a link when both are valid and differ; anything invalid
// ignored (a new trace).
func TestParent(t *testing.T) {
	hdr := func(v string) http.Header { return http.Header{"Traceparent": {v}} }
	for _, tc := range []struct {
		name      string
		hdr       http.Header
		tp        string
		want      string // the parent's trace id, "" for none
		wantLinks int
	}{
		{"nothing", nil, "", "", 0},
		{"header", hdr(tpA), "", "4bf92f3577b34da6a3ce929d0e0e4736", 0},
		{"meta", nil, tpB, "0af7651916cd43dd8448eb211c80319c", 0},
		{"meta wins, header linked", hdr(tpA), tpB, "0af7651916cd43dd8448eb211c80319c", 1},
		{"same in both: no link", hdr(tpA), tpA, "4bf92f3577b34da6a3ce929d0e0e4736", 0},
		{"bad meta: header", hdr(tpA), "00-nothex-01", "4bf92f3577b34da6a3ce929d0e0e4736", 0},
		{"bad header", hdr("garbage"), "", "", 0},
		{"all-zero trace id", hdr("00-00000000000000000000000000000000-00f067aa0ba902b7-01"), "", "", 0},
		{"version ff", nil, "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "", 0},
		{"both bad", hdr("00-x-y-01"), "01-", "", 0},
	} {
		ctx, links := parent(t.Context(), tc.hdr, tc.tp, "")
		sc := trace.SpanContextFromContext(ctx)
		got := ""
		if sc.IsValid() {
			got = sc.TraceID().String()
		}
		if got != tc.want || len(links) != tc.wantLinks {
			t.Errorf("%s: parent trace %q with %d links; want %q with %d", tc.name, got, len(links), tc.want, tc.wantLinks)
		}
	}
}
