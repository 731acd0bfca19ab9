package egress_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/egress"
)

// Headers a request's context carries (WithHeaders: the trace context of
// the call it belongs to) reach the configured origin on the wire, lose to
// the dynamic Authorization, replace a configured header of the same name,
// and never follow a redirect to another origin.
func TestContextHeadersReachOnlyTheOrigin(t *testing.T) {
	srvB := newServer(t, nil)
	srvA := newServer(t, redirector(srvB.URL+"/landing"))
	var calls atomic.Int32
	g := egress.New(nil)
	c := client(t, g, srvA.URL+"/mcp", map[string]string{"Tracestate": "configured=1"}, bearer("dyn-456", &calls))
	ctx := egress.WithHeaders(context.Background(), http.Header{
		"Traceparent":   {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
		"Tracestate":    {"rojo=00f067aa0ba902b7"},
		"Authorization": {"Bearer from-context"},
	})
	req, _ := http.NewRequestWithContext(ctx, "GET", srvA.URL+"/mcp", nil)
	if body, err := do(c, req); err != nil || body != "ok" {
		t.Fatalf("GET = %q, %v", body, err)
	}
	a, b := srvA.wire(), srvB.wire()
	for _, want := range []string{"\r\nTraceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\n",
		"\r\nTracestate: rojo=00f067aa0ba902b7\r\n", "\r\nAuthorization: Bearer dyn-456\r\n"} {
		if !strings.Contains(a, want) {
			t.Errorf("origin A did not get %q; wire:\n%s", strings.TrimSpace(want), a)
		}
	}
	for _, not := range []string{"configured=1", "from-context"} {
		if strings.Contains(a, not) {
			t.Errorf("origin A got %q; wire:\n%s", not, a)
		}
	}
	if !strings.HasPrefix(b, "GET /landing ") {
		t.Fatalf("origin B did not get the redirected request; wire:\n%s", b)
	}
	for _, not := range []string{"Traceparent", "rojo=", "Tracestate"} {
		if strings.Contains(b, not) {
			t.Errorf("origin B got %q; wire:\n%s", not, b)
		}
	}
	if req.Header.Get("Traceparent") != "" {
		t.Errorf("the caller's request was modified: %v", req.Header)
	}
}
