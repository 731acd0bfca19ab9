package metrics_test

import (
	"fmt"
	"net/http"
	"os"
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

func ExampleNewGateway() {
	reg := metrics.NewRegistry(nil)
	gm := metrics.NewGateway(reg)
	gm.SetApprovalsPendingSource(func() (int, error) { return 0, nil })

	// In the gateway: on every tool call,
	gm.ObserveCall("bank__transfer", metrics.OutcomeOK, 1200*time.Microsecond)

	// and on a separate listen address (not the MCP one):
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", reg.Handler())
	_ = &http.Server{Addr: "127.0.0.1:9090", Handler: mux}
	fmt.Println(metrics.ContentType)
	// Output: text/plain; version=0.0.4; charset=utf-8
}
