package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/promtext"
	"go.uber.org/goleak"
)

func TestHandlerOverHTTP(t *testing.T) {
	defer goleak.VerifyNone(t)
	r := NewRegistry(nil)
	calls := r.NewCounterVec("calls_total", "Calls.", "tool", "outcome")
	dur := r.NewHistogramVec("call_duration_seconds", "Call time.", nil, "tool")
	r.NewGaugeVec("up", "Up.", "server").With("a").Set(1)
	r.NewGauge("sessions", "Sessions.")
	r.NewGaugeFuncOptional("pending", "Pending.", func() (float64, bool) { return 0, false })
	calls.With("a__b", "ok").Inc()
	dur.With("a__b").ObserveDuration(time.Millisecond)
	srv := httptest.NewServer(r.Handler()) // listens on 127.0.0.1
	defer srv.Close()
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()

	do := func(method string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+"/metrics", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(b)
	}

	resp, body := do(http.MethodGet)
	if resp.StatusCode != 200 {
		t.Fatalf("GET: %d", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8" {
		t.Fatalf("Content-Type %q", ct)
	}
	if body != expose(r) {
		t.Fatalf("body differs from WriteTo:\n%s", body)
	}
	fams := promtext.MustParse(t, body)
	if v, _ := promtext.Find(fams, "calls_total", "tool", "a__b", "outcome", "ok"); v != 1 {
		t.Fatalf("calls over HTTP: %v", v)
	}

	resp, body = do(http.MethodHead)
	if resp.StatusCode != 200 || body != "" || resp.Header.Get("Content-Type") != ContentType {
		t.Fatalf("HEAD: %d %q %q", resp.StatusCode, body, resp.Header.Get("Content-Type"))
	}
	if n, _ := strconv.Atoi(resp.Header.Get("Content-Length")); n != len(expose(r)) {
		t.Fatalf("HEAD Content-Length %d, want %d", n, len(expose(r)))
	}

	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		resp, _ = do(m)
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
			t.Fatalf("%s: %d Allow=%q", m, resp.StatusCode, resp.Header.Get("Allow"))
		}
	}
}

// WriteTo reports the writer's error.
func TestWriteToError(t *testing.T) {
	r := NewRegistry(nil)
	r.NewGauge("g", "h")
	if _, err := r.WriteTo(failWriter{}); err != io.ErrClosedPipe {
		t.Fatalf("err = %v", err)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }
