package telemetry

import (
	"sync/atomic"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/metrics"
)

// Outcome label values of gatehouse_calls_total. A call the gateway refuses
// is counted under its refusal code from CONTRACTS.md §4, verbatim
// ("rate_limited", "approval_required", "denied", ...), so the outcome set
// stays the closed set of codes defined in code.
const (
	// OutcomeOK: the upstream tool answered without isError.
	OutcomeOK = "ok"
	// OutcomeToolError: the upstream tool answered with isError: true.
	OutcomeToolError = "tool_error"
	// OutcomeUpstreamError: the upstream could not be reached or broke the
	// protocol.
	OutcomeUpstreamError = "upstream_error"
	// OutcomeCanceled: the caller canceled the call before it completed.
	OutcomeCanceled = "canceled"
)

// Kinds of dropped notifications, the kind label values of
// gatehouse_notifications_dropped_total.
const (
	// DroppedProgress: a notifications/progress whose token is not one the
	// gateway sent that server for a call in progress (another server's
	// call's, guessed, or stale).
	DroppedProgress = "progress"
	// DroppedResourceUpdated: a notifications/resources/updated for a URI
	// the sending server does not publish, or that nobody subscribed to on
	// the session it came by.
	DroppedResourceUpdated = "resource_updated"
)

// Caps, the cap label values of gatehouse_upstream_sessions_capped_total.
const (
	// CappedServer: the server's callers held its cap of upstream sessions
	// of their own (sessions.upstreamPerServer).
	CappedServer = "server"
	// CappedSubject: the subject's callers held its cap of upstream
	// sessions of their own to the server (sessions.upstreamPerSubject).
	CappedSubject = "subject"
)

// UnknownTool is the tool label value for calls to a name that is not a
// projected tool (or that the caller may not see). A caller-chosen name
// never becomes a label value.
const UnknownTool = "_unknown"

// Drift kinds, the kind label values of gatehouse_drift_events_total. They
// are the pin.Action values that denote drift.
const (
	// DriftQuarantined: a tool's contract changed and it was quarantined.
	DriftQuarantined = "quarantined"
	// DriftWithheld: a tool appeared after the baseline and is withheld.
	DriftWithheld = "withheld"
	// DriftRemoved: a tool in the baseline disappeared.
	DriftRemoved = "removed"
)

// Metrics are the gateway's metrics. The exported fields are the
// registered families, for callers that want pre-resolved handles; the
// methods cover the common cases. All methods are safe for concurrent use.
type Metrics struct {
	// Calls is gatehouse_calls_total{tool,outcome}: tool calls by projected
	// tool name (or UnknownTool) and outcome.
	Calls *metrics.CounterVec
	// CallDuration is gatehouse_call_duration_seconds{tool}: time from the
	// call's arrival at the gateway to its answer,
	// metrics.DefaultLatencyBuckets.
	CallDuration *metrics.HistogramVec
	// UpstreamUp is gatehouse_upstream_up{server}: 1 when the gateway holds
	// a working session to the upstream server, 0 when not.
	UpstreamUp *metrics.GaugeVec
	// DriftEvents is gatehouse_drift_events_total{server,kind}: drift
	// decisions by server and kind (DriftQuarantined, DriftWithheld,
	// DriftRemoved).
	DriftEvents *metrics.CounterVec
	// Sessions is gatehouse_sessions: caller sessions open now.
	Sessions *metrics.Gauge
	// NotificationsDropped is
	// gatehouse_notifications_dropped_total{server,kind}: upstream
	// notifications dropped because they belong to no call or
	// subscription of the server that sent them, by server and kind
	// (DroppedProgress, DroppedResourceUpdated).
	NotificationsDropped *metrics.CounterVec
	// UpstreamSessionsCapped is
	// gatehouse_upstream_sessions_capped_total{server,cap}: callers that
	// a cap kept from an upstream session of their own to a server (they
	// share its session), once per caller and server, by server and cap
	// (CappedServer, CappedSubject).
	UpstreamSessionsCapped *metrics.CounterVec

	approvals atomic.Pointer[func() (int, error)]
	journal   atomic.Pointer[func() (time.Time, error)]
	now       func() time.Time
}

// New registers the gateway's metrics in reg and returns them. It panics
// if any of the names is already registered in reg.
//
// gatehouse_approvals_pending and gatehouse_journal_lag_seconds are
// computed at scrape time from the sources given to
// SetApprovalsPendingSource and SetJournalSource; until a source is set (or
// while it fails) the family is exported without a sample.
func New(reg *metrics.Registry) *Metrics {
	m := &Metrics{now: time.Now}
	m.Calls = reg.NewCounterVec("gatehouse_calls_total",
		"Tool calls through the gateway, by projected tool name and outcome.", "tool", "outcome")
	m.CallDuration = reg.NewHistogramVec("gatehouse_call_duration_seconds",
		"Time from a tool call's arrival at the gateway to its answer, in seconds.", nil, "tool")
	m.UpstreamUp = reg.NewGaugeVec("gatehouse_upstream_up",
		"Whether the gateway holds a working session to the upstream server (1) or not (0).", "server")
	m.DriftEvents = reg.NewCounterVec("gatehouse_drift_events_total",
		"Tool drift events by upstream server and kind (quarantined, withheld, removed).", "server", "kind")
	m.Sessions = reg.NewGauge("gatehouse_sessions", "Caller sessions open now.")
	m.NotificationsDropped = reg.NewCounterVec("gatehouse_notifications_dropped_total",
		"Upstream notifications dropped because they belong to no call or subscription of the server that sent them, by server and kind (progress, resource_updated).",
		"server", "kind")
	m.UpstreamSessionsCapped = reg.NewCounterVec("gatehouse_upstream_sessions_capped_total",
		"Callers a cap kept from an upstream session of their own to a server (they share its session), once per caller and server, by server and cap (server, subject).",
		"server", "cap")
	reg.NewGaugeFuncOptional("gatehouse_approvals_pending", "Tool calls waiting for an operator's approval.", m.approvalsPending)
	reg.NewGaugeFuncOptional("gatehouse_journal_lag_seconds",
		"Age in seconds of the oldest journal record still in the started state (0 when there is none).", m.journalLag)
	return m
}

// ObserveCall records one tool call: its projected tool name (UnknownTool
// for a name that is not one), its outcome (an Outcome constant or a
// refusal code) and its duration. It allocates nothing once the tool and
// outcome have been seen.
func (m *Metrics) ObserveCall(tool, outcome string, d time.Duration) {
	m.Calls.With(tool, outcome).Inc()
	m.CallDuration.With(tool).ObserveDuration(d)
}

// Tool returns a handle for one projected tool, with the lookups for its
// duration and its OutcomeOK count done once. Keep it next to the tool's
// route.
func (m *Metrics) Tool(tool string) *ToolMetrics {
	return &ToolMetrics{m: m, tool: tool, ok: m.Calls.With(tool, OutcomeOK), dur: m.CallDuration.With(tool)}
}

// ToolMetrics is a pre-resolved handle from Metrics.Tool.
type ToolMetrics struct {
	m    *Metrics
	tool string
	ok   *metrics.Counter
	dur  *metrics.Histogram
}

// ObserveCall records one call of the tool, as Metrics.ObserveCall. For
// OutcomeOK it does no lookup at all.
func (t *ToolMetrics) ObserveCall(outcome string, d time.Duration) {
	if outcome == OutcomeOK {
		t.ok.Inc()
	} else {
		t.m.Calls.With(t.tool, outcome).Inc()
	}
	t.dur.ObserveDuration(d)
}

// SetUpstreamUp records whether the gateway holds a working session to the
// named upstream server.
func (m *Metrics) SetUpstreamUp(server string, up bool) {
	v := 0.0
	if up {
		v = 1
	}
	m.UpstreamUp.With(server).Set(v)
}

// RemoveUpstream stops exporting the named server's health, for a server
// that left the configuration.
func (m *Metrics) RemoveUpstream(server string) { m.UpstreamUp.Delete(server) }

// DriftEvent counts one drift event of the given kind (a Drift constant) on
// the named server.
func (m *Metrics) DriftEvent(server, kind string) { m.DriftEvents.With(server, kind).Inc() }

// NotificationDropped counts one upstream notification of the given kind
// (a Dropped constant) that the named server sent for nothing of its own.
func (m *Metrics) NotificationDropped(server, kind string) {
	m.NotificationsDropped.With(server, kind).Inc()
}

// UpstreamSessionCapped counts one caller that a cap (a Capped constant)
// kept from an upstream session of its own to the named server.
func (m *Metrics) UpstreamSessionCapped(server, cap string) {
	m.UpstreamSessionsCapped.With(server, cap).Inc()
}

// SessionOpened counts a caller session as open.
func (m *Metrics) SessionOpened() { m.Sessions.Inc() }

// SessionClosed counts a caller session as closed.
func (m *Metrics) SessionClosed() { m.Sessions.Dec() }

// SetApprovalsPendingSource sets the function that counts pending
// approvals, called on every scrape (it must be quick and safe for
// concurrent use). When it returns an error the scrape omits the sample.
func (m *Metrics) SetApprovalsPendingSource(f func() (int, error)) { m.approvals.Store(&f) }

// SetJournalSource sets the function that returns the start time of the
// oldest journal record still in the started state (the zero time when
// there is none), called on every scrape (it must be quick and safe for
// concurrent use). When it returns an error the scrape omits the sample.
func (m *Metrics) SetJournalSource(f func() (oldestStarted time.Time, err error)) {
	m.journal.Store(&f)
}

func (m *Metrics) approvalsPending() (float64, bool) {
	f := m.approvals.Load()
	if f == nil || *f == nil {
		return 0, false
	}
	n, err := (*f)()
	if err != nil {
		return 0, false
	}
	return float64(n), true
}

func (m *Metrics) journalLag() (float64, bool) {
	f := m.journal.Load()
	if f == nil || *f == nil {
		return 0, false
	}
	t, err := (*f)()
	if err != nil {
		return 0, false
	}
	if t.IsZero() {
		return 0, true
	}
	lag := m.now().Sub(t).Seconds()
	if lag < 0 { // another replica's clock is ahead of ours
		lag = 0
	}
	return lag, true
}
