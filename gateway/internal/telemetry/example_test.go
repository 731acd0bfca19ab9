package telemetry_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/telemetry"
)

func ExampleNewInstruments() {
	ins := telemetry.NewInstruments(nil, context.Background(), func() int { return 1 })
	m := ins.Metrics
	m.SetApprovalsPendingSource(func() (int, error) { return 2, nil })
	m.SetJournalSource(func() (time.Time, error) { return time.Time{}, errors.New("store down") })

	// At start, and whenever a server's session comes or goes:
	m.SetUpstreamUp("bank", true)

	// On every tool call: through a handle kept with the tool's route,
	transfer := m.Tool("bank__transfer")
	transfer.ObserveCall(telemetry.OutcomeOK, 500*time.Millisecond)
	transfer.ObserveCall("rate_limited", 250*time.Millisecond)
	// or by name, for a name that is not a served tool.
	m.ObserveCall(telemetry.UnknownTool, "denied", 40*time.Microsecond)

	// ins.Handler() serves the exposition; print it without the help
	// lines and the histogram buckets. The journal source fails: its
	// family has no sample, and so is not written.
	w := httptest.NewRecorder()
	ins.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	sc := bufio.NewScanner(w.Body)
	for sc.Scan() {
		if line := sc.Text(); !strings.HasPrefix(line, "# HELP") && !strings.Contains(line, "_bucket{") {
			fmt.Println(line)
		}
	}
	// Output:
	// # TYPE gatehouse_approvals_pending gauge
	// gatehouse_approvals_pending 2
	// # TYPE gatehouse_call_duration_seconds histogram
	// gatehouse_call_duration_seconds_sum{tool="_unknown"} 4e-05
	// gatehouse_call_duration_seconds_count{tool="_unknown"} 1
	// gatehouse_call_duration_seconds_sum{tool="bank__transfer"} 0.75
	// gatehouse_call_duration_seconds_count{tool="bank__transfer"} 2
	// # TYPE gatehouse_calls_total counter
	// gatehouse_calls_total{tool="_unknown",outcome="denied"} 1
	// gatehouse_calls_total{tool="bank__transfer",outcome="ok"} 1
	// gatehouse_calls_total{tool="bank__transfer",outcome="rate_limited"} 1
	// # TYPE gatehouse_sessions gauge
	// gatehouse_sessions 1
	// # TYPE gatehouse_upstream_up gauge
	// gatehouse_upstream_up{server="bank"} 1
}
