package telemetry

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/otlptranslator"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"

	"github.com/gatehouse-dev/gatehouse/store"
)

// ScopeName is the instrumentation scope of the gateway's meter.
const ScopeName = "github.com/gatehouse-dev/gatehouse/gateway"

// Bounds of the store queries made at scrape time (approvals pending,
// oldest started journal record).
const (
	pendingTTL     = time.Second            // answers are reused this long
	pendingTimeout = 500 * time.Millisecond // a slow store omits the sample
)

// pendingCache caches the answers of the store queries made at scrape
// time, each for pendingTTL, so that frequent scrapes (or several
// scrapers) cost the store at most one query of each kind a second.
type pendingCache struct {
	approvals scrapeCache[int]       // gatehouse_approvals_pending
	journal   scrapeCache[time.Time] // gatehouse_journal_lag_seconds
}

// scrapeCache is one cached store answer, with its error.
type scrapeCache[T any] struct {
	mu  sync.Mutex
	at  time.Time
	v   T
	err error
}

// get returns the cached answer when it is younger than pendingTTL, and
// otherwise asks fetch, bounded by pendingTimeout and by ctx.
func (c *scrapeCache[T]) get(ctx context.Context, fetch func(context.Context) (T, error)) (T, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if !c.at.IsZero() && now.Sub(c.at) < pendingTTL {
		return c.v, c.err
	}
	ctx, cancel := context.WithTimeout(ctx, pendingTimeout)
	defer cancel()
	c.v, c.err = fetch(ctx)
	c.at = now
	return c.v, c.err
}

// Source is what Instruments read from the store at scrape time;
// store.Store satisfies it.
type Source interface {
	ListApprovals(ctx context.Context, state store.ApprovalState) ([]store.Approval, error)
	OldestStarted(ctx context.Context) (time.Time, error)
}

// Instruments are the gateway's metrics: an OpenTelemetry meter provider
// whose reader is the Prometheus exporter, on a Prometheus registry of
// their own; the catalogue's instruments; and the store queries made at
// scrape time (each answer reused for a second, so frequent scrapes, or
// several scrapers, cost the store at most one query of each kind a
// second).
type Instruments struct {
	// Metrics are the gateway's instruments.
	Metrics *Metrics
	// Provider is the meter provider Metrics record through.
	Provider *sdkmetric.MeterProvider

	registry *prometheus.Registry
	gatherer prometheus.Gatherer // registry, in the catalogue's label order
	st       Source
	life     context.Context
	pending  pendingCache // approvals pending and journal lag, cached for scrapes
}

// NewInstruments creates the catalogue's instruments in a new meter
// provider exported in the Prometheus text format, with the scrape-time
// sources read from st (bounded by life; none when st is nil) and the
// open sessions counted by sessions (when not nil). It panics if the exporter cannot register in its own new
// registry, which no input can cause.
func NewInstruments(st Source, life context.Context, sessions func() int, opts ...sdkmetric.Option) *Instruments {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(
		otelprom.WithRegisterer(reg),
		// Today's names exactly: no unit or _total added (the counters'
		// names have theirs), no otel_scope_* labels, no target_info.
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithoutSuffixes),
		otelprom.WithoutScopeInfo(),
		otelprom.WithoutTargetInfo(),
	)
	if err != nil {
		panic(fmt.Sprintf("telemetry: the Prometheus exporter: %v", err))
	}
	mp := sdkmetric.NewMeterProvider(append([]sdkmetric.Option{
		sdkmetric.WithReader(exp),
		sdkmetric.WithCardinalityLimit(maxSeries),
		// Exemplars are not in the text format; recording them would cost
		// every call a reservoir update.
		sdkmetric.WithExemplarFilter(exemplar.AlwaysOffFilter),
	}, opts...)...)
	m, err := New(mp.Meter(ScopeName))
	if err != nil {
		panic(err) // constant names and options
	}
	t := &Instruments{Metrics: m, Provider: mp, registry: reg, st: st, life: life}
	t.gatherer = prometheus.GathererFunc(t.gather)
	if sessions != nil {
		m.SetSessionsSource(sessions)
	}
	if st != nil {
		m.SetApprovalsPendingSource(t.approvalsPending)
		m.SetJournalSource(t.journalOldestStarted)
	}
	return t
}

// Close shuts the meter provider down: a reader that exports (OTLP)
// exports one last time, bounded by ctx, and stops. The /metrics handler
// serves nothing after it.
func (t *Instruments) Close(ctx context.Context) error {
	if err := t.Provider.Shutdown(ctx); err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	return nil
}

// Upstreams sets every configured server's health at start: up unless it
// was skipped.
func (t *Instruments) Upstreams(servers []string, skipped map[string]string) {
	for _, name := range servers {
		_, skip := skipped[name]
		t.Metrics.SetUpstreamUp(name, !skip)
	}
}

// approvalsPending counts the store's pending approvals (every replica's),
// at most once per pendingTTL.
func (t *Instruments) approvalsPending() (int, error) {
	return t.pending.approvals.get(t.life, func(ctx context.Context) (int, error) {
		list, err := t.st.ListApprovals(ctx, store.ApprovalPending)
		return len(list), err
	})
}

// journalOldestStarted returns when the store's oldest started journal
// record (every replica's) was created, the zero time when there is none,
// at most once per pendingTTL.
func (t *Instruments) journalOldestStarted() (time.Time, error) {
	return t.pending.journal.get(t.life, t.st.OldestStarted)
}

// Handler returns the handler of the metrics endpoint: Prometheus text
// (format 0.0.4) at /metrics.
func (t *Instruments) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(t.gatherer, promhttp.HandlerOpts{
		// A family that fails is left out; the others are still served.
		ErrorHandling: promhttp.ContinueOnError,
	}))
	return mux
}

// Gather collects every family, as a scrape of Handler does.
func (t *Instruments) Gather() ([]*dto.MetricFamily, error) { return t.gatherer.Gather() }

// gather gathers the registry and puts each of the catalogue's families'
// labels in the catalogue's order (tool before outcome, server before kind
// or cap), and its series in the order of their label values, as the
// exposition this package replaced wrote them: the Prometheus client sorts
// label names alphabetically, and scripts that match a series' text would
// otherwise stop matching. Prometheus itself reads labels in any order.
func (t *Instruments) gather() ([]*dto.MetricFamily, error) {
	mfs, err := t.registry.Gather()
	for _, mf := range mfs {
		i := slices.IndexFunc(catalogue, func(f family) bool { return f.name == mf.GetName() })
		if i < 0 || len(catalogue[i].labels) < 2 {
			continue
		}
		order := catalogue[i].labels
		rank := func(name string) int {
			if r := slices.Index(order, name); r >= 0 {
				return r
			}
			return len(order) // "le" and anything else, last
		}
		for _, s := range mf.Metric {
			slices.SortStableFunc(s.Label, func(a, b *dto.LabelPair) int { return cmp.Compare(rank(a.GetName()), rank(b.GetName())) })
		}
		slices.SortStableFunc(mf.Metric, func(a, b *dto.Metric) int {
			for k := range min(len(a.Label), len(b.Label)) {
				if c := cmp.Compare(a.Label[k].GetValue(), b.Label[k].GetValue()); c != 0 {
					return c
				}
			}
			return cmp.Compare(len(a.Label), len(b.Label))
		})
	}
	return mfs, err
}

// Value returns the value of one counter or gauge series, or the _sum or
// _count of a histogram's, as a scrape would read it: name is the series'
// name and kv its labels as name, value pairs (all of them, in any order).
// It returns 0 when there is no such series, as for a counter never
// incremented. It gathers every family: it is for tests and diagnostics,
// not for a hot path.
func (t *Instruments) Value(name string, kv ...string) float64 {
	mfs, _ := t.Gather()
	for _, mf := range mfs {
		fam, suffix := mf.GetName(), ""
		switch {
		case fam == name:
		case mf.GetType() == dto.MetricType_HISTOGRAM && (name == fam+"_sum" || name == fam+"_count"):
			suffix = name[len(fam):]
		default:
			continue
		}
		for _, s := range mf.Metric {
			if !sameLabels(s.Label, kv) {
				continue
			}
			switch {
			case s.Counter != nil:
				return s.Counter.GetValue()
			case s.Gauge != nil:
				return s.Gauge.GetValue()
			case s.Histogram != nil && suffix == "_sum":
				return s.Histogram.GetSampleSum()
			case s.Histogram != nil && suffix == "_count":
				return float64(s.Histogram.GetSampleCount())
			}
		}
	}
	return 0
}

// sameLabels reports whether ls are exactly the name, value pairs kv.
func sameLabels(ls []*dto.LabelPair, kv []string) bool {
	if len(kv) != 2*len(ls) {
		return false
	}
	for _, l := range ls {
		found := false
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == l.GetName() && kv[i+1] == l.GetValue() {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
