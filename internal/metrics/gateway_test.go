package metrics

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestGatewayMetrics(t *testing.T) {
	r := NewRegistry(nil)
	g := NewGateway(r)
	now := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	g.now = func() time.Time { return now }

	// Before any observation or source: every family is announced, the
	// func gauges have no sample.
	out := expose(r)
	fams := mustParse(t, out)
	wantFams := map[string]string{
		"gatehouse_approvals_pending":     "gauge",
		"gatehouse_call_duration_seconds": "histogram",
		"gatehouse_calls_total":           "counter",
		"gatehouse_drift_events_total":    "counter",
		"gatehouse_journal_lag_seconds":   "gauge",
		"gatehouse_sessions":              "gauge",
		"gatehouse_upstream_up":           "gauge",
	}
	if len(fams) != len(wantFams) {
		t.Fatalf("%d families, want %d:\n%s", len(fams), len(wantFams), out)
	}
	for _, f := range fams {
		if wantFams[f.name] != f.typ || !f.hasHelp {
			t.Errorf("family %s: type %q help %v", f.name, f.typ, f.hasHelp)
		}
	}
	for _, name := range []string{"gatehouse_approvals_pending", "gatehouse_journal_lag_seconds"} {
		if _, ok := find(fams, name); ok {
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

	fams = mustParse(t, expose(r))
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
		if v, ok := find(fams, c.name, c.kv...); !ok || v != c.want {
			t.Errorf("%s%v = %v (found %v), want %v", c.name, c.kv, v, ok, c.want)
		}
	}
	if _, ok := find(fams, "gatehouse_upstream_up", "server", "old"); ok {
		t.Error("removed upstream still exported")
	}

	// Sources are read at scrape time.
	pending = 0
	now = now.Add(30 * time.Second)
	fams = mustParse(t, expose(r))
	if v, _ := find(fams, "gatehouse_approvals_pending"); v != 0 {
		t.Errorf("approvals after change: %v", v)
	}
	if v, _ := find(fams, "gatehouse_journal_lag_seconds"); v != 120 {
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
		v, ok := find(mustParse(t, expose(r)), "gatehouse_journal_lag_seconds")
		if ok != c.present || v != c.want {
			t.Errorf("lag = %v (present %v), want %v (present %v)", v, ok, c.want, c.present)
		}
	}
	g.SetApprovalsPendingSource(func() (int, error) { return 0, errors.New("store down") })
	if _, ok := find(mustParse(t, expose(r)), "gatehouse_approvals_pending"); ok {
		t.Error("approvals sample present although its source failed")
	}
	g.SetApprovalsPendingSource(nil)
	if _, ok := find(mustParse(t, expose(r)), "gatehouse_approvals_pending"); ok {
		t.Error("approvals sample present with a nil source")
	}
	if !strings.Contains(expose(r), "# TYPE gatehouse_approvals_pending gauge\n") {
		t.Error("approvals family not announced")
	}
}
