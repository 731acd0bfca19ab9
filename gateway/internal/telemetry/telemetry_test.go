package telemetry

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/promtext"
)

func TestMetrics(t *testing.T) {
	r := newTestInstruments(t)
	g := r.Metrics
	now := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	g.now = func() time.Time { return now }

	// Before any observation or source: only the sessions gauge has a
	// data point, so it is the only family exported (the Prometheus client
	// writes no family without a sample); the scrape-time gauges have
	// none.
	fams := promtext.MustParse(t, expose(t, r))
	if len(fams) != 1 || fams[0].Name != "gatehouse_sessions" {
		t.Fatalf("fresh families: %+v", fams)
	}
	wantFams := map[string]string{
		"gatehouse_approvals_pending":              "gauge",
		"gatehouse_call_duration_seconds":          "histogram",
		"gatehouse_calls_total":                    "counter",
		"gatehouse_drift_events_total":             "counter",
		"gatehouse_journal_lag_seconds":            "gauge",
		"gatehouse_notifications_dropped_total":    "counter",
		"gatehouse_sessions":                       "gauge",
		"gatehouse_upstream_up":                    "gauge",
		"gatehouse_upstream_sessions_capped_total": "counter",
	}

	g.ObserveCall("bank__transfer", OutcomeOK, 3*time.Millisecond)
	g.ObserveCall("bank__transfer", "rate_limited", 200*time.Microsecond)
	g.ObserveCall(UnknownTool, "denied", 50*time.Microsecond)
	tm := g.Tool("bank__balance")
	tm.ObserveCall(OutcomeOK, 2*time.Second)
	tm.ObserveCall(OutcomeToolError, 20*time.Second)
	g.SetUpstreamUp("bank", true)
	g.SetUpstreamUp("mail", true)
	g.SetUpstreamUp("mail", false)
	g.SetUpstreamUp("old", true)
	g.RemoveUpstream("old")
	g.DriftEvent("bank", DriftQuarantined)
	g.DriftEvent("bank", DriftQuarantined)
	g.DriftEvent("mail", DriftWithheld)
	for range 3 {
		g.SessionOpened()
	}
	g.SessionClosed()
	pending := 7
	g.SetApprovalsPendingSource(func() (int, error) { return pending, nil })
	oldest := now.Add(-90 * time.Second)
	g.SetJournalSource(func() (time.Time, error) { return oldest, nil })

	g.NotificationDropped("mail", DroppedResourceUpdated)
	g.UpstreamSessionCapped("bank", CappedServer)
	fams = promtext.MustParse(t, expose(t, r))
	// Every family now, with its type and help.
	if len(fams) != len(wantFams) {
		t.Fatalf("%d families, want %d: %+v", len(fams), len(wantFams), fams)
	}
	for _, f := range fams {
		if wantFams[f.Name] != f.Type || !f.HasHelp {
			t.Errorf("family %s: type %q help %v", f.Name, f.Type, f.HasHelp)
		}
	}
	checks := []struct {
		want float64
		name string
		kv   []string
	}{
		{1, "gatehouse_calls_total", []string{"tool", "bank__transfer", "outcome", "ok"}},
		{1, "gatehouse_calls_total", []string{"tool", "bank__transfer", "outcome", "rate_limited"}},
		{1, "gatehouse_calls_total", []string{"tool", "_unknown", "outcome", "denied"}},
		{1, "gatehouse_calls_total", []string{"tool", "bank__balance", "outcome", "ok"}},
		{1, "gatehouse_calls_total", []string{"tool", "bank__balance", "outcome", "tool_error"}},
		{0, "gatehouse_call_duration_seconds_bucket", []string{"tool", "bank__transfer", "le", "0.0001"}},
		{1, "gatehouse_call_duration_seconds_bucket", []string{"tool", "bank__transfer", "le", "0.00025"}},
		{2, "gatehouse_call_duration_seconds_bucket", []string{"tool", "bank__transfer", "le", "0.005"}},
		{0.0032, "gatehouse_call_duration_seconds_sum", []string{"tool", "bank__transfer"}},
		{1, "gatehouse_call_duration_seconds_bucket", []string{"tool", "bank__balance", "le", "2.5"}},
		{1, "gatehouse_call_duration_seconds_bucket", []string{"tool", "bank__balance", "le", "10"}},
		{2, "gatehouse_call_duration_seconds_count", []string{"tool", "bank__balance"}},
		{1, "gatehouse_call_duration_seconds_count", []string{"tool", "_unknown"}},
		{1, "gatehouse_upstream_up", []string{"server", "bank"}},
		{0, "gatehouse_upstream_up", []string{"server", "mail"}},
		{2, "gatehouse_drift_events_total", []string{"server", "bank", "kind", "quarantined"}},
		{1, "gatehouse_drift_events_total", []string{"server", "mail", "kind", "withheld"}},
		{2, "gatehouse_sessions", nil},
		{1, "gatehouse_notifications_dropped_total", []string{"server", "mail", "kind", "resource_updated"}},
		{1, "gatehouse_upstream_sessions_capped_total", []string{"server", "bank", "cap", "server"}},
		{7, "gatehouse_approvals_pending", nil},
		{90, "gatehouse_journal_lag_seconds", nil},
	}
	for _, c := range checks {
		if v, ok := promtext.Find(fams, c.name, c.kv...); !ok || v != c.want {
			t.Errorf("%s%v = %v (found %v), want %v", c.name, c.kv, v, ok, c.want)
		}
	}
	if _, ok := promtext.Find(fams, "gatehouse_upstream_up", "server", "old"); ok {
		t.Error("removed upstream still exported")
	}

	// Sources are read at scrape time.
	pending = 0
	now = now.Add(30 * time.Second)
	fams = promtext.MustParse(t, expose(t, r))
	if v, _ := promtext.Find(fams, "gatehouse_approvals_pending"); v != 0 {
		t.Errorf("approvals after change: %v", v)
	}
	if v, _ := promtext.Find(fams, "gatehouse_journal_lag_seconds"); v != 120 {
		t.Errorf("lag after 30 s: %v, want 120", v)
	}

	// No started record: lag 0. A clock ahead of ours: clamped to 0.
	// A failing source: no sample, the scrape still succeeds.
	for _, c := range []struct {
		src     func() (time.Time, error)
		want    float64
		present bool
	}{
		{func() (time.Time, error) { return time.Time{}, nil }, 0, true},
		{func() (time.Time, error) { return now.Add(time.Minute), nil }, 0, true},
		{func() (time.Time, error) { return time.Time{}, errors.New("store down") }, 0, false},
	} {
		g.SetJournalSource(c.src)
		v, ok := promtext.Find(promtext.MustParse(t, expose(t, r)), "gatehouse_journal_lag_seconds")
		if ok != c.present || v != c.want {
			t.Errorf("lag = %v (present %v), want %v (present %v)", v, ok, c.want, c.present)
		}
	}
	g.SetApprovalsPendingSource(func() (int, error) { return 0, errors.New("store down") })
	if _, ok := promtext.Find(promtext.MustParse(t, expose(t, r)), "gatehouse_approvals_pending"); ok {
		t.Error("approvals sample present although its source failed")
	}
	g.SetApprovalsPendingSource(nil)
	if _, ok := promtext.Find(promtext.MustParse(t, expose(t, r)), "gatehouse_approvals_pending"); ok {
		t.Error("approvals sample present with a nil source")
	}
}

// The catalogue's exposition, byte for byte: names, help texts, types,
// label names and order, series order, buckets and number formats.
// Dashboards, alerts and scripts depend on every byte of it: the "used"
// exposition below is the one the hand-written exposition this package
// replaced wrote, unchanged.
func TestGoldenExposition(t *testing.T) {
	r := newTestInstruments(t)
	g := r.Metrics
	now := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	g.now = func() time.Time { return now }

	// Families without a data point are not written (the Prometheus
	// client writes none without a sample); the sessions gauge always has
	// one.
	const fresh = `# HELP gatehouse_sessions Caller sessions open now.
# TYPE gatehouse_sessions gauge
gatehouse_sessions 0
`
	if got := expose(t, r); got != fresh {
		t.Fatalf("fresh exposition differs\n--- got\n%s\n--- want\n%s", got, fresh)
	}

	g.ObserveCall("bank__transfer", OutcomeOK, 3*time.Millisecond)
	g.ObserveCall(UnknownTool, "denied", 50*time.Microsecond)
	g.SetUpstreamUp("bank", true)
	g.DriftEvent("bank", DriftQuarantined)
	g.NotificationDropped("mail", DroppedProgress)
	g.UpstreamSessionCapped("bank", CappedSubject)
	g.SessionOpened()
	g.SetApprovalsPendingSource(func() (int, error) { return 7, nil })
	g.SetJournalSource(func() (time.Time, error) { return now.Add(-90 * time.Second), nil })

	const used = `# HELP gatehouse_approvals_pending Tool calls waiting for an operator's approval.
# TYPE gatehouse_approvals_pending gauge
gatehouse_approvals_pending 7
# HELP gatehouse_call_duration_seconds Time from a tool call's arrival at the gateway to its answer, in seconds.
# TYPE gatehouse_call_duration_seconds histogram
gatehouse_call_duration_seconds_bucket{tool="_unknown",le="0.0001"} 1
gatehouse_call_duration_seconds_bucket{tool="_unknown",le="0.00025"} 1
gatehouse_call_duration_seconds_bucket{tool="_unknown",le="0.0005"} 1
gatehouse_call_duration_seconds_bucket{tool="_unknown",le="0.001"} 1
gatehouse_call_duration_seconds_bucket{tool="_unknown",le="0.0025"} 1
gatehouse_call_duration_seconds_bucket{tool="_unknown",le="0.005"} 1
gatehouse_call_duration_seconds_bucket{tool="_unknown",le="0.01"} 1
gatehouse_call_duration_seconds_bucket{tool="_unknown",le="0.025"} 1
gatehouse_call_duration_seconds_bucket{tool="_unknown",le="0.05"} 1
gatehouse_call_duration_seconds_bucket{tool="_unknown",le="0.1"} 1
gatehouse_call_duration_seconds_bucket{tool="_unknown",le="0.25"} 1
gatehouse_call_duration_seconds_bucket{tool="_unknown",le="0.5"} 1
gatehouse_call_duration_seconds_bucket{tool="_unknown",le="1"} 1
gatehouse_call_duration_seconds_bucket{tool="_unknown",le="2.5"} 1
gatehouse_call_duration_seconds_bucket{tool="_unknown",le="5"} 1
gatehouse_call_duration_seconds_bucket{tool="_unknown",le="10"} 1
gatehouse_call_duration_seconds_bucket{tool="_unknown",le="+Inf"} 1
gatehouse_call_duration_seconds_sum{tool="_unknown"} 5e-05
gatehouse_call_duration_seconds_count{tool="_unknown"} 1
gatehouse_call_duration_seconds_bucket{tool="bank__transfer",le="0.0001"} 0
gatehouse_call_duration_seconds_bucket{tool="bank__transfer",le="0.00025"} 0
gatehouse_call_duration_seconds_bucket{tool="bank__transfer",le="0.0005"} 0
gatehouse_call_duration_seconds_bucket{tool="bank__transfer",le="0.001"} 0
gatehouse_call_duration_seconds_bucket{tool="bank__transfer",le="0.0025"} 0
gatehouse_call_duration_seconds_bucket{tool="bank__transfer",le="0.005"} 1
gatehouse_call_duration_seconds_bucket{tool="bank__transfer",le="0.01"} 1
gatehouse_call_duration_seconds_bucket{tool="bank__transfer",le="0.025"} 1
gatehouse_call_duration_seconds_bucket{tool="bank__transfer",le="0.05"} 1
gatehouse_call_duration_seconds_bucket{tool="bank__transfer",le="0.1"} 1
gatehouse_call_duration_seconds_bucket{tool="bank__transfer",le="0.25"} 1
gatehouse_call_duration_seconds_bucket{tool="bank__transfer",le="0.5"} 1
gatehouse_call_duration_seconds_bucket{tool="bank__transfer",le="1"} 1
gatehouse_call_duration_seconds_bucket{tool="bank__transfer",le="2.5"} 1
gatehouse_call_duration_seconds_bucket{tool="bank__transfer",le="5"} 1
gatehouse_call_duration_seconds_bucket{tool="bank__transfer",le="10"} 1
gatehouse_call_duration_seconds_bucket{tool="bank__transfer",le="+Inf"} 1
gatehouse_call_duration_seconds_sum{tool="bank__transfer"} 0.003
gatehouse_call_duration_seconds_count{tool="bank__transfer"} 1
# HELP gatehouse_calls_total Tool calls through the gateway, by projected tool name and outcome.
# TYPE gatehouse_calls_total counter
gatehouse_calls_total{tool="_unknown",outcome="denied"} 1
gatehouse_calls_total{tool="bank__transfer",outcome="ok"} 1
# HELP gatehouse_drift_events_total Tool drift events by upstream server and kind (quarantined, withheld, removed).
# TYPE gatehouse_drift_events_total counter
gatehouse_drift_events_total{server="bank",kind="quarantined"} 1
# HELP gatehouse_journal_lag_seconds Age in seconds of the oldest journal record still in the started state (0 when there is none).
# TYPE gatehouse_journal_lag_seconds gauge
gatehouse_journal_lag_seconds 90
# HELP gatehouse_notifications_dropped_total Upstream notifications dropped because they belong to no call or subscription of the server that sent them, by server and kind (progress, resource_updated).
# TYPE gatehouse_notifications_dropped_total counter
gatehouse_notifications_dropped_total{server="mail",kind="progress"} 1
# HELP gatehouse_sessions Caller sessions open now.
# TYPE gatehouse_sessions gauge
gatehouse_sessions 1
# HELP gatehouse_upstream_sessions_capped_total Callers a cap kept from an upstream session of their own to a server (they share its session), once per caller and server, by server and cap (server, subject).
# TYPE gatehouse_upstream_sessions_capped_total counter
gatehouse_upstream_sessions_capped_total{server="bank",cap="subject"} 1
# HELP gatehouse_upstream_up Whether the gateway holds a working session to the upstream server (1) or not (0).
# TYPE gatehouse_upstream_up gauge
gatehouse_upstream_up{server="bank"} 1
`
	got := expose(t, r)
	if got != used {
		t.Fatalf("exposition differs\n--- got\n%s\n--- want\n%s", got, used)
	}
	promtext.MustParse(t, got)
}

// Two Instruments share nothing: each has its own meter provider and
// Prometheus registry.
func TestInstrumentsAreIndependent(t *testing.T) {
	a, b := newTestInstruments(t), newTestInstruments(t)
	a.Metrics.ObserveCall("bank__transfer", OutcomeOK, time.Millisecond)
	a.Metrics.SetUpstreamUp("bank", true)
	fa, fb := promtext.MustParse(t, expose(t, a)), promtext.MustParse(t, expose(t, b))
	if v, ok := promtext.Find(fa, "gatehouse_calls_total", "tool", "bank__transfer", "outcome", "ok"); !ok || v != 1 {
		t.Fatalf("a: calls %v (found %v)", v, ok)
	}
	for _, name := range []string{"gatehouse_calls_total", "gatehouse_upstream_up"} {
		for _, f := range fb {
			if f.Name == name {
				t.Errorf("b exports %s: %+v", name, f.Samples)
			}
		}
	}
}

// newTestInstruments returns instruments with no store: the tests set the
// scrape-time sources themselves.
func newTestInstruments(t *testing.T) *Instruments {
	t.Helper()
	return NewInstruments(nil, t.Context(), nil)
}

// expose scrapes the instruments' handler over HTTP on 127.0.0.1, as
// Prometheus does, and returns the body.
func expose(t *testing.T, ins *Instruments) string {
	t.Helper()
	srv := httptest.NewServer(ins.Handler())
	defer srv.Close()
	res, err := srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s\n%s", res.Status, body)
	}
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Fatalf("Content-Type %q", ct)
	}
	return string(body)
}
