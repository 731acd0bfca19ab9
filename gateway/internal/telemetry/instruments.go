package telemetry

import (
	"context"
	"net/http"
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

// Source is what Instruments read from the store at scrape time;
// store.Store satisfies it.
type Source interface {
	ListApprovals(ctx context.Context, state store.ApprovalState) ([]store.Approval, error)
	OldestStarted(ctx context.Context) (time.Time, error)
}

// Instruments are the gateway's metrics: the catalogue in its registry,
// and the store queries made at scrape time (each answer reused for a
// second, so frequent scrapes, or several scrapers, cost the store at most
// one query of each kind a second).
type Instruments struct {
	// Registry is served by Handler; Metrics are the gateway's families.
	Registry *metrics.Registry
	Metrics  *Metrics
	st       Source
	life     context.Context
	pending  pendingCache // approvals pending and journal lag, cached for scrapes
	// sessions counts the open caller sessions (at scrape time).
	sessions func() int
}

// NewInstruments registers the catalogue in a new registry, with the
// scrape-time sources read from st (bounded by life) and the open
// sessions counted by sessions.
func NewInstruments(st Source, life context.Context, sessions func() int) *Instruments {
	t := &Instruments{Registry: metrics.NewRegistry(nil), st: st, life: life, sessions: sessions}
	t.Metrics = New(t.Registry)
	t.Metrics.SetApprovalsPendingSource(t.approvalsPending)
	t.Metrics.SetJournalSource(t.journalOldestStarted)
	return t
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

// Handler returns the handler of the metrics endpoint: Prometheus text at
// /metrics.
func (t *Instruments) Handler() http.Handler {
	reg := t.Registry.Handler()
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Sessions are counted when scraped: the go-sdk has no close hook,
		// and a goroutine per idle session would cost more than a count.
		t.Metrics.Sessions.Set(float64(t.sessions()))
		reg.ServeHTTP(w, r)
	}))
	return mux
}
