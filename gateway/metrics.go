package gateway

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/telemetry"
	"github.com/gatehouse-dev/gatehouse/internal/metrics"
	"github.com/gatehouse-dev/gatehouse/store"
)

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

// instruments are the gateway's metrics: the catalogue (package
// gateway/internal/telemetry) in its registry, and the store queries made
// at scrape time.
type instruments struct {
	registry *metrics.Registry // served by MetricsHandler
	metrics  *telemetry.Metrics
	st       store.Store
	life     context.Context
	pending  pendingCache // approvals pending and journal lag, cached for scrapes
	// sessions counts the open caller sessions (at scrape time).
	sessions func() int
}

func newInstruments(st store.Store, life context.Context, sessions func() int) *instruments {
	t := &instruments{registry: metrics.NewRegistry(nil), st: st, life: life, sessions: sessions}
	t.metrics = telemetry.New(t.registry)
	t.metrics.SetApprovalsPendingSource(t.approvalsPending)
	t.metrics.SetJournalSource(t.journalOldestStarted)
	return t
}

// upstreams sets every configured server's health at start: up unless it
// was skipped.
func (t *instruments) upstreams(servers []string, skipped map[string]string) {
	for _, name := range servers {
		_, skip := skipped[name]
		t.metrics.SetUpstreamUp(name, !skip)
	}
}

// approvalsPending counts the store's pending approvals (every replica's),
// at most once per pendingTTL.
func (t *instruments) approvalsPending() (int, error) {
	return t.pending.approvals.get(t.life, func(ctx context.Context) (int, error) {
		list, err := t.st.ListApprovals(ctx, store.ApprovalPending)
		return len(list), err
	})
}

// journalOldestStarted returns when the store's oldest started journal
// record (every replica's) was created, the zero time when there is none,
// at most once per pendingTTL.
func (t *instruments) journalOldestStarted() (time.Time, error) {
	return t.pending.journal.get(t.life, t.st.OldestStarted)
}

// unknownToolLabel is the tool label of calls to a name that is not a
// served tool: a caller-chosen name never becomes a label value.
const unknownToolLabel = telemetry.UnknownTool

// metricOutcome maps a logged outcome to gatehouse_calls_total's outcome:
// ok, tool_error, upstream_error (a JSON-RPC error from the upstream, or a
// failure at the gateway), canceled (the caller went away before the
// answer), unknown_tool, no_answer, or a refusal code.
func metricOutcome(outcome string, cancelled bool) string {
	if cancelled && outcome != telemetry.OutcomeOK {
		return telemetry.OutcomeCanceled
	}
	switch outcome {
	case outcomeRPCError, outcomeError:
		return telemetry.OutcomeUpstreamError
	}
	return outcome
}

// handler returns the handler of the metrics endpoint: Prometheus text at
// /metrics.
func (t *instruments) handler() http.Handler {
	reg := t.registry.Handler()
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Sessions are counted when scraped: the go-sdk has no close hook,
		// and a goroutine per idle session would cost more than a count.
		t.metrics.Sessions.Set(float64(t.sessions()))
		reg.ServeHTTP(w, r)
	}))
	return mux
}

// sessionCount counts the open caller sessions of every go-sdk server.
func (g *Gateway) sessionCount() int {
	n := 0
	for _, s := range g.served.mcpServers() {
		for range s.Sessions() {
			n++
		}
	}
	return n
}

// MetricsHandler returns the handler of the metrics endpoint: Prometheus
// text at /metrics. It has no authentication (see Config.Metrics).
func (g *Gateway) MetricsHandler() http.Handler { return g.tel.handler() }

// ServeMetrics serves MetricsHandler on ln until ctx ends.
func (g *Gateway) ServeMetrics(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{Handler: g.MetricsHandler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	_ = hs.Close()
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
