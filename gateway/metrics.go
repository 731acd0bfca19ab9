package gateway

import (
	"context"
	"errors"
	"net"
	"net/http"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/telemetry"
	"github.com/gatehouse-dev/gatehouse/server"
)

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

// sessionCount counts the open caller sessions of every go-sdk server the
// map serves.
func (m *servedMap) sessionCount() int {
	n := 0
	for _, s := range m.mcpServers() {
		for range s.Sessions() {
			n++
		}
	}
	return n
}

// MetricsHandler returns the handler of the metrics endpoint: Prometheus
// text at /metrics, and /readyz with its detail. It has no authentication
// (see Config.Metrics).
func (g *Gateway) MetricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", g.tel.Handler())
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) { g.serveReady(w, r, true) })
	return mux
}

// ServeMetrics serves MetricsHandler on ln until ctx ends, with the
// limits of Listeners().Metrics (the config's http: timeouts, and few
// connections: scrapers).
func (g *Gateway) ServeMetrics(ctx context.Context, ln net.Listener) error {
	ls, err := g.Listeners()
	if err != nil {
		return err
	}
	if g.cfg.Metrics == nil {
		// Served without metrics.listen configured: the split has no
		// share for it; it gets the cap it would have had.
		ls.Metrics = ls.MCP
		ls.Metrics.MaxConns = min(metricsMaxConns, ls.MCP.MaxConns)
	}
	hs, err := server.NewHTTPServer(g.MetricsHandler(), &ls.Metrics)
	if err != nil {
		return err
	}
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
