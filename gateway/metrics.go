package gateway

import (
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

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

// initMetrics sets what the gateway knows at start: every configured
// server's health, and the scrape-time sources.
func (g *Gateway) initMetrics() {
	skipped := map[string]bool{}
	for _, d := range g.ts.Diagnostics() {
		if slices.Contains(skipRules, d.Rule) {
			skipped[d.Origin] = true
		}
	}
	for _, name := range g.servers {
		g.metrics.SetUpstreamUp(name, !skipped[name])
	}
	g.metrics.SetApprovalsPendingSource(g.approvalsPending)
	g.metrics.SetJournalSource(g.journalOldestStarted)
}

// approvalsPending counts the store's pending approvals (every replica's),
// at most once per pendingTTL.
func (g *Gateway) approvalsPending() (int, error) {
	return g.pending.approvals.get(g.stopCtx, func(ctx context.Context) (int, error) {
		list, err := g.st.ListApprovals(ctx, store.ApprovalPending)
		return len(list), err
	})
}

// journalOldestStarted returns when the store's oldest started journal
// record (every replica's) was created, the zero time when there is none,
// at most once per pendingTTL.
func (g *Gateway) journalOldestStarted() (time.Time, error) {
	return g.pending.journal.get(g.stopCtx, g.st.OldestStarted)
}

// observeUpstream records a server's health after one upstream call.
func (g *Gateway) observeUpstream(server string, err error, cancelled bool) {
	g.health.observe(server, err, cancelled)
	if !cancelled {
		g.metrics.SetUpstreamUp(server, err == nil || !connectionLost(err))
	}
}

// observeCall counts one finished tools/call: tool is the requested name
// (counted under metrics.UnknownTool unless it is a served tool), outcome
// the logged outcome, mapped to the metrics outcomes.
func (g *Gateway) observeCall(tool, outcome string, cancelled bool, d time.Duration) {
	if _, ok := g.tool(tool); !ok {
		tool = metrics.UnknownTool
	}
	g.metrics.ObserveCall(tool, metricOutcome(outcome, cancelled), d)
}

// metricOutcome maps a logged outcome to gatehouse_calls_total's outcome:
// ok, tool_error, upstream_error (a JSON-RPC error from the upstream, or a
// failure at the gateway), canceled (the caller went away before the
// answer), unknown_tool, or a refusal code.
func metricOutcome(outcome string, cancelled bool) string {
	if cancelled && outcome != metrics.OutcomeOK {
		return metrics.OutcomeCanceled
	}
	switch outcome {
	case "rpc_error", "error":
		return metrics.OutcomeUpstreamError
	}
	return outcome
}

// sessionCount counts the open caller sessions of every go-sdk server.
func (g *Gateway) sessionCount() int {
	g.mu.RLock()
	servers := slices.Clone(g.mcps)
	g.mu.RUnlock()
	n := 0
	for _, s := range servers {
		for range s.Sessions() {
			n++
		}
	}
	return n
}

// MetricsHandler returns the handler of the metrics endpoint: Prometheus
// text at /metrics. It has no authentication (see Config.Metrics).
func (g *Gateway) MetricsHandler() http.Handler {
	reg := g.registry.Handler()
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Sessions are counted when scraped: the go-sdk has no close hook,
		// and a goroutine per idle session would cost more than a count.
		g.metrics.Sessions.Set(float64(g.sessionCount()))
		reg.ServeHTTP(w, r)
	}))
	return mux
}

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
