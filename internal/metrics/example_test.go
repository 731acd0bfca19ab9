package metrics_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/metrics"
)

func Example() {
	reg := metrics.NewRegistry(nil)
	calls := reg.NewCounterVec("demo_calls_total", "Calls by tool.", "tool")
	lat := reg.NewHistogram("demo_latency_seconds", "Latency.", []float64{0.01, 0.1})

	echo := calls.With("echo") // look up once, reuse on every call
	echo.Inc()
	echo.Inc()
	lat.ObserveDuration(20 * time.Millisecond)

	if _, err := reg.WriteTo(os.Stdout); err != nil {
		fmt.Println(err)
	}
	// Output:
	// # HELP demo_calls_total Calls by tool.
	// # TYPE demo_calls_total counter
	// demo_calls_total{tool="echo"} 2
	// # HELP demo_latency_seconds Latency.
	// # TYPE demo_latency_seconds histogram
	// demo_latency_seconds_bucket{le="0.01"} 0
	// demo_latency_seconds_bucket{le="0.1"} 1
	// demo_latency_seconds_bucket{le="+Inf"} 1
	// demo_latency_seconds_sum 0.02
	// demo_latency_seconds_count 1
}

func ExampleRegistry_Handler() {
	reg := metrics.NewRegistry(nil)
	reg.NewGauge("demo_sessions", "Sessions open now.").Set(2)

	// Serve the registry on a listen address of its own, e.g.
	//
	//	mux := http.NewServeMux()
	//	mux.Handle("GET /metrics", reg.Handler())
	//	srv := &http.Server{Addr: "127.0.0.1:9090", Handler: mux}
	//
	// Here, one scrape:
	rec := httptest.NewRecorder()
	reg.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	fmt.Println(rec.Code, rec.Header().Get("Content-Type") == metrics.ContentType)
	fmt.Print(rec.Body.String())
	// Output:
	// 200 true
	// # HELP demo_sessions Sessions open now.
	// # TYPE demo_sessions gauge
	// demo_sessions 2
}

func ExampleRegistry_NewGaugeFuncOptional() {
	reg := metrics.NewRegistry(nil)
	var known atomic.Bool // false until the queue is up, or while it is down
	var length atomic.Int64
	reg.NewGaugeFuncOptional("demo_queue_length", "Items waiting.", func() (float64, bool) {
		return float64(length.Load()), known.Load()
	})

	// While the value is unknown: no sample, rather than a made-up 0.
	if _, err := reg.WriteTo(os.Stdout); err != nil {
		fmt.Println(err)
	}
	length.Store(4)
	known.Store(true)
	if _, err := reg.WriteTo(os.Stdout); err != nil {
		fmt.Println(err)
	}
	// Output:
	// # HELP demo_queue_length Items waiting.
	// # TYPE demo_queue_length gauge
	// # HELP demo_queue_length Items waiting.
	// # TYPE demo_queue_length gauge
	// demo_queue_length 4
}
