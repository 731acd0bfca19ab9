package telemetry

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Outcome label values of gatehouse_calls_total. A call the gateway refuses
// is counted under its refusal code from docs/reference/refusals.md, verbatim
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

// LatencyBuckets returns the bucket upper bounds of
// gatehouse_call_duration_seconds, in seconds, from 100 µs to 10 s. Each
// call returns a new slice.
func LatencyBuckets() []float64 {
	return []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
}

// family is one metric family of the catalogue: its name, help text and
// label names, in the order the exposition writes them.
type family struct {
	name, help string
	labels     []string
}

// catalogue is every family the gateway exports. It is never modified.
var catalogue = []family{
	{"gatehouse_calls_total", "Tool calls through the gateway, by projected tool name and outcome.", []string{"tool", "outcome"}},
	{"gatehouse_call_duration_seconds", "Time from a tool call's arrival at the gateway to its answer, in seconds.", []string{"tool"}},
	{"gatehouse_upstream_up", "Whether the gateway holds a working session to the upstream server (1) or not (0).", []string{"server"}},
	{"gatehouse_drift_events_total", "Tool drift events by upstream server and kind (quarantined, withheld, removed).", []string{"server", "kind"}},
	{"gatehouse_sessions", "Caller sessions open now.", nil},
	{"gatehouse_notifications_dropped_total", "Upstream notifications dropped because they belong to no call or subscription of the server that sent them, by server and kind (progress, resource_updated).", []string{"server", "kind"}},
	{"gatehouse_upstream_sessions_capped_total", "Callers a cap kept from an upstream session of their own to a server (they share its session), once per caller and server, by server and cap (server, subject).", []string{"server", "cap"}},
	{"gatehouse_approvals_pending", "Tool calls waiting for an operator's approval.", nil},
	{"gatehouse_journal_lag_seconds", "Age in seconds of the oldest journal record still in the started state (0 when there is none).", nil},
}

// Indexes into catalogue.
const (
	famCalls = iota
	famDuration
	famUp
	famDrift
	famSessions
	famDropped
	famCapped
	famApprovals
	famJournal
)

// Metrics are the gateway's metrics, recorded through OpenTelemetry
// instruments of one meter. All methods are safe for concurrent use.
type Metrics struct {
	calls    metric.Int64Counter     // gatehouse_calls_total{tool,outcome}
	duration metric.Float64Histogram // gatehouse_call_duration_seconds{tool}
	drift    metric.Int64Counter     // gatehouse_drift_events_total{server,kind}
	dropped  metric.Int64Counter     // gatehouse_notifications_dropped_total{server,kind}
	capped   metric.Int64Counter     // gatehouse_upstream_sessions_capped_total{server,cap}

	// Each series' attribute set, computed once (see series).
	callSeries  series[[2]string, []metric.AddOption] // tool, outcome
	durSeries   series[string, []metric.RecordOption] // tool
	driftSeries series[[2]string, []metric.AddOption] // server, kind
	dropSeries  series[[2]string, []metric.AddOption] // server, kind
	capSeries   series[[2]string, []metric.AddOption] // server, cap
	up          series[string, *upstreamHealth]       // server; observed at collection

	sessions    atomic.Int64 // SessionOpened minus SessionClosed
	sessionsSrc atomic.Pointer[func() int]
	approvals   atomic.Pointer[func() (int, error)]
	journal     atomic.Pointer[func() (time.Time, error)]
	now         func() time.Time
}

// upstreamHealth is one server's gatehouse_upstream_up series.
type upstreamHealth struct {
	opt metric.ObserveOption
	up  atomic.Bool
}

// New creates the gateway's instruments in meter and returns them.
//
// gatehouse_upstream_up, gatehouse_sessions, gatehouse_approvals_pending
// and gatehouse_journal_lag_seconds are observed when the meter's readers
// collect (a scrape of /metrics, an OTLP export): the last two from the
// sources given to SetApprovalsPendingSource and SetJournalSource, and
// without a data point until a source is set (or while it fails).
func New(meter metric.Meter) (*Metrics, error) {
	m := &Metrics{now: time.Now}
	m.callSeries.init(func(k [2]string) []metric.AddOption {
		return addOpts(label("tool", k[0]), label("outcome", k[1]))
	})
	m.durSeries.init(func(tool string) []metric.RecordOption {
		return []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(label("tool", tool)))}
	})
	pair := func(second string) func([2]string) []metric.AddOption {
		return func(k [2]string) []metric.AddOption {
			return addOpts(label("server", k[0]), label(second, k[1]))
		}
	}
	m.driftSeries.init(pair("kind"))
	m.dropSeries.init(pair("kind"))
	m.capSeries.init(pair("cap"))
	m.up.init(func(server string) *upstreamHealth {
		return &upstreamHealth{opt: metric.WithAttributeSet(attribute.NewSet(label("server", server)))}
	})

	var err error
	c := catalogue
	if m.calls, err = meter.Int64Counter(c[famCalls].name, metric.WithDescription(c[famCalls].help)); err != nil {
		return nil, fmt.Errorf("telemetry: %s: %w", c[famCalls].name, err)
	}
	if m.duration, err = meter.Float64Histogram(c[famDuration].name, metric.WithDescription(c[famDuration].help),
		metric.WithExplicitBucketBoundaries(LatencyBuckets()...)); err != nil {
		return nil, fmt.Errorf("telemetry: %s: %w", c[famDuration].name, err)
	}
	for _, x := range []struct {
		inst *metric.Int64Counter
		fam  int
	}{{&m.drift, famDrift}, {&m.dropped, famDropped}, {&m.capped, famCapped}} {
		if *x.inst, err = meter.Int64Counter(c[x.fam].name, metric.WithDescription(c[x.fam].help)); err != nil {
			return nil, fmt.Errorf("telemetry: %s: %w", c[x.fam].name, err)
		}
	}
	gauges := []struct {
		fam int
		f   metric.Float64Callback
	}{
		{famUp, m.observeUpstreams},
		{famSessions, m.observeSessions},
		{famApprovals, m.observeApprovals},
		{famJournal, m.observeJournal},
	}
	for _, x := range gauges {
		if _, err = meter.Float64ObservableGauge(c[x.fam].name, metric.WithDescription(c[x.fam].help),
			metric.WithFloat64Callback(x.f)); err != nil {
			return nil, fmt.Errorf("telemetry: %s: %w", c[x.fam].name, err)
		}
	}
	return m, nil
}

// label returns the attribute of a label value. Invalid UTF-8 bytes become
// U+FFFD, one for one: the Prometheus client refuses a series whose label
// value is not UTF-8, and would leave it out of every scrape.
func label(name, value string) attribute.KeyValue {
	if !utf8.ValidString(value) {
		b := make([]byte, 0, len(value)+8)
		for i := 0; i < len(value); {
			r, n := utf8.DecodeRuneInString(value[i:])
			b = utf8.AppendRune(b, r) // RuneError for an invalid byte
			i += n
		}
		value = string(b)
	}
	return attribute.String(name, value)
}

// addOpts returns the options of an Add to the series of kvs.
func addOpts(kvs ...attribute.KeyValue) []metric.AddOption {
	return []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(kvs...))}
}

// ObserveCall records one tool call: its projected tool name (UnknownTool
// for a name that is not one), its outcome (an Outcome constant or a
// refusal code) and its duration. It allocates nothing once the tool and
// outcome have been seen.
func (m *Metrics) ObserveCall(tool, outcome string, d time.Duration) {
	ctx := context.Background()
	m.calls.Add(ctx, 1, m.callSeries.get([2]string{tool, outcome})...)
	m.duration.Record(ctx, d.Seconds(), m.durSeries.get(tool)...)
}

// Tool returns a handle for one projected tool, with the attribute sets of
// its duration and its OutcomeOK count computed once. Keep it next to the
// tool's route.
func (m *Metrics) Tool(tool string) *ToolMetrics {
	return &ToolMetrics{m: m, tool: tool, ok: m.callSeries.get([2]string{tool, OutcomeOK}), dur: m.durSeries.get(tool)}
}

// ToolMetrics is a pre-resolved handle from Metrics.Tool.
type ToolMetrics struct {
	m    *Metrics
	tool string
	ok   []metric.AddOption
	dur  []metric.RecordOption
}

// ObserveCall records one call of the tool, as Metrics.ObserveCall. For
// OutcomeOK it does no lookup at all.
func (t *ToolMetrics) ObserveCall(outcome string, d time.Duration) {
	ctx := context.Background()
	ok := t.ok
	if outcome != OutcomeOK {
		ok = t.m.callSeries.get([2]string{t.tool, outcome})
	}
	t.m.calls.Add(ctx, 1, ok...)
	t.m.duration.Record(ctx, d.Seconds(), t.dur...)
}

// SetUpstreamUp records whether the gateway holds a working session to the
// named upstream server.
func (m *Metrics) SetUpstreamUp(server string, up bool) { m.up.get(server).up.Store(up) }

// RemoveUpstream stops exporting the named server's health, for a server
// that left the configuration.
func (m *Metrics) RemoveUpstream(server string) { m.up.remove(server) }

// DriftEvent counts one drift event of the given kind (a Drift constant) on
// the named server.
func (m *Metrics) DriftEvent(server, kind string) {
	m.drift.Add(context.Background(), 1, m.driftSeries.get([2]string{server, kind})...)
}

// NotificationDropped counts one upstream notification of the given kind
// (a Dropped constant) that the named server sent for nothing of its own.
func (m *Metrics) NotificationDropped(server, kind string) {
	m.dropped.Add(context.Background(), 1, m.dropSeries.get([2]string{server, kind})...)
}

// UpstreamSessionCapped counts one caller that a cap (a Capped constant)
// kept from an upstream session of its own to the named server.
func (m *Metrics) UpstreamSessionCapped(server, cap string) {
	m.capped.Add(context.Background(), 1, m.capSeries.get([2]string{server, cap})...)
}

// SessionOpened counts a caller session as open. A source set with
// SetSessionsSource takes precedence over this count.
func (m *Metrics) SessionOpened() { m.sessions.Add(1) }

// SessionClosed counts a caller session as closed.
func (m *Metrics) SessionClosed() { m.sessions.Add(-1) }

// SetSessionsSource sets the function that counts the open caller
// sessions, called at every collection instead of the count kept by
// SessionOpened and SessionClosed (it must be quick and safe for
// concurrent use). A nil f goes back to that count.
func (m *Metrics) SetSessionsSource(f func() int) { m.sessionsSrc.Store(&f) }

// SetApprovalsPendingSource sets the function that counts pending
// approvals, called at every collection (it must be quick and safe for
// concurrent use). When it returns an error the collection omits the
// data point.
func (m *Metrics) SetApprovalsPendingSource(f func() (int, error)) { m.approvals.Store(&f) }

// SetJournalSource sets the function that returns the start time of the
// oldest journal record still in the started state (the zero time when
// there is none), called at every collection (it must be quick and safe
// for concurrent use). When it returns an error the collection omits the
// data point.
func (m *Metrics) SetJournalSource(f func() (oldestStarted time.Time, err error)) {
	m.journal.Store(&f)
}

func (m *Metrics) observeUpstreams(_ context.Context, o metric.Float64Observer) error {
	for _, h := range m.up.all() {
		v := 0.0
		if h.up.Load() {
			v = 1
		}
		o.Observe(v, h.opt)
	}
	return nil
}

func (m *Metrics) observeSessions(_ context.Context, o metric.Float64Observer) error {
	n := m.sessions.Load()
	if f := m.sessionsSrc.Load(); f != nil && *f != nil {
		n = int64((*f)())
	}
	o.Observe(float64(n))
	return nil
}

func (m *Metrics) observeApprovals(_ context.Context, o metric.Float64Observer) error {
	if v, ok := m.approvalsPending(); ok {
		o.Observe(v)
	}
	return nil
}

func (m *Metrics) observeJournal(_ context.Context, o metric.Float64Observer) error {
	if v, ok := m.journalLag(); ok {
		o.Observe(v)
	}
	return nil
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
