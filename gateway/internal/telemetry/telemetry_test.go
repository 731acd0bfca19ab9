package telemetry

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/promtext"
	"github.com/gatehouse-dev/gatehouse/internal/metrics"
)

func TestMetrics(t *testing.T) {
	r := metrics.NewRegistry(nil)
	g := New(r)
	now := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	g.now = func() time.Time { return now }

	// Before any observation or source: every family is announced, the
	// func gauges have no sample.
	out := expose(r)
	fams := promtext.MustParse(t, out)
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
	if len(fams) != len(wantFams) {
		t.Fatalf("%d families, want %d:\n%s", len(fams), len(wantFams), out)
	}
	for _, f := range fams {
		if wantFams[f.Name] != f.Type || !f.HasHelp {
			t.Errorf("family %s: type %q help %v", f.Name, f.Type, f.HasHelp)
		}
	}
	for _, name := range []string{"gatehouse_approvals_pending", "gatehouse_journal_lag_seconds"} {
		if _, ok := promtext.Find(fams, name); ok {
			t.Errorf("%s has a sample before its source is set", name)
		}
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

	fams = promtext.MustParse(t, expose(r))
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
	fams = promtext.MustParse(t, expose(r))
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
		v, ok := promtext.Find(promtext.MustParse(t, expose(r)), "gatehouse_journal_lag_seconds")
		if ok != c.present || v != c.want {
			t.Errorf("lag = %v (present %v), want %v (present %v)", v, ok, c.want, c.present)
		}
	}
	g.SetApprovalsPendingSource(func() (int, error) { return 0, errors.New("store down") })
	if _, ok := promtext.Find(promtext.MustParse(t, expose(r)), "gatehouse_approvals_pending"); ok {
		t.Error("approvals sample present although its source failed")
	}
	g.SetApprovalsPendingSource(nil)
	if _, ok := promtext.Find(promtext.MustParse(t, expose(r)), "gatehouse_approvals_pending"); ok {
		t.Error("approvals sample present with a nil source")
	}
	if !strings.Contains(expose(r), "# TYPE gatehouse_approvals_pending gauge\n") {
		t.Error("approvals family not announced")
	}
}

// The catalogue's exposition, byte for byte: names, help texts, types,
// label names and order, buckets, and the scrape-time gauges announced
// without a sample until their source is set. Dashboards and alerts depend
// on every byte of it.
func TestGoldenExposition(t *testing.T) {
	r := metrics.NewRegistry(nil)
	g := New(r)
	now := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	g.now = func() time.Time { return now }

	const fresh = `# HELP gatehouse_approvals_pending Tool calls waiting for an operator's approval.
# TYPE gatehouse_approvals_pending gauge
# HELP gatehouse_call_duration_seconds Time from a tool call's arrival at the gateway to its answer, in seconds.
# TYPE gatehouse_call_duration_seconds histogram
# HELP gatehouse_calls_total Tool calls through the gateway, by projected tool name and outcome.
# TYPE gatehouse_calls_total counter
# HELP gatehouse_drift_events_total Tool drift events by upstream server and kind (quarantined, withheld, removed).
# TYPE gatehouse_drift_events_total counter
# HELP gatehouse_journal_lag_seconds Age in seconds of the oldest journal record still in the started state (0 when there is none).
# TYPE gatehouse_journal_lag_seconds gauge
# HELP gatehouse_notifications_dropped_total Upstream notifications dropped because they belong to no call or subscription of the server that sent them, by server and kind (progress, resource_updated).
# TYPE gatehouse_notifications_dropped_total counter
# HELP gatehouse_sessions Caller sessions open now.
# TYPE gatehouse_sessions gauge
gatehouse_sessions 0
# HELP gatehouse_upstream_sessions_capped_total Callers a cap kept from an upstream session of their own to a server (they share its session), once per caller and server, by server and cap (server, subject).
# TYPE gatehouse_upstream_sessions_capped_total counter
# HELP gatehouse_upstream_up Whether the gateway holds a working session to the upstream server (1) or not (0).
# TYPE gatehouse_upstream_up gauge
`
	if got := expose(r); got != fresh {
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
	got := expose(r)
	if got != used {
		t.Fatalf("exposition differs\n--- got\n%s\n--- want\n%s", got, used)
	}
	promtext.MustParse(t, got)
}

// New registers names that are taken once per registry: a second New on
// the same registry panics with package metrics' message, and a New on
// another registry is independent.
func TestNewTwicePanics(t *testing.T) {
	r := metrics.NewRegistry(nil)
	New(r)
	func() {
		defer func() {
			p := recover()
			if s, _ := p.(string); !strings.HasPrefix(s, "metrics: ") || !strings.Contains(s, "already registered") {
				t.Fatalf("second New on one registry: panic %v", p)
			}
		}()
		New(r)
	}()
	promtext.MustParse(t, expose(r))
	a, b := New(metrics.NewRegistry(nil)), New(metrics.NewRegistry(nil))
	a.SessionOpened()
	if v := b.Sessions.Value(); v != 0 {
		t.Fatalf("registries share state: %v", v)
	}
}

// expose returns the registry's exposition.
func expose(r *metrics.Registry) string {
	var b bytes.Buffer
	if _, err := r.WriteTo(&b); err != nil {
		panic(err)
	}
	return b.String()
}
