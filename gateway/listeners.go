package gateway

import (
	"cmp"

	"github.com/gatehouse-dev/gatehouse/internal/fdbudget"
	"github.com/gatehouse-dev/gatehouse/server"
)

// The connection caps `gatehouse serve` asks for its listeners besides
// listen (which asks for http.maxConnections): an operator or two with a
// browser each, and a few scrapers.
const (
	consoleMaxConns = 64 // console.listen
	metricsMaxConns = 64 // metrics.listen
)

// Listeners are the limits of the listeners `gatehouse serve` opens: the
// MCP endpoint (listen), and the console and the metrics endpoint when
// configured. One policy holds for each (server.NewHTTPServer): the
// config's http.readTimeout, http.writeTimeout and http.connIdleTimeout,
// and a connection cap of its own, so that a listener at its cap leaves
// the others answering. The caps come from one split of the process's
// file-descriptor limit (fdbudget.Split): all of them full at once leave
// the reserve free for the upstreams, the store and outgoing connections.
type Listeners struct {
	// Budget is the split: the limit, the reserve, and each listener
	// by its config key ("listen", "console.listen", "metrics.listen").
	Budget fdbudget.Budget
	// MCP are the limits of listen: MaxConns is http.maxConnections
	// (default server.DefaultMaxConns), or less when the limit is lower.
	MCP server.HTTPLimits
	// Console are console.listen's (zero without a console): MaxConns is
	// 64, or less.
	Console server.HTTPLimits
	// Metrics are metrics.listen's (zero without metrics): MaxConns is
	// 64, or less.
	Metrics server.HTTPLimits
}

// Listeners returns the limits of the listeners of g's config within the
// process's file-descriptor limit (RLIMIT_NOFILE, read each time: the
// same config and limit give the same split). A limit too small for them
// is an error wrapping fdbudget.ErrLimit that says what limit would do.
func (g *Gateway) Listeners() (Listeners, error) {
	limit, err := fdbudget.Limit()
	if err != nil {
		return Listeners{}, err
	}
	return planListeners(g.cfg, limit)
}

// planListeners splits fdLimit among the listeners cfg configures.
func planListeners(cfg *Config, fdLimit int) (Listeners, error) {
	hc := cfg.HTTP
	base := server.HTTPLimits{ReadTimeout: hc.ReadTimeout, WriteTimeout: hc.WriteTimeout, IdleTimeout: hc.ConnIdleTimeout}
	ls := []fdbudget.Listener{{Name: "listen", MaxConns: cmp.Or(hc.MaxConnections, server.DefaultMaxConns)}}
	if cfg.Console != nil {
		ls = append(ls, fdbudget.Listener{Name: "console.listen", MaxConns: consoleMaxConns})
	}
	if cfg.Metrics != nil {
		ls = append(ls, fdbudget.Listener{Name: "metrics.listen", MaxConns: metricsMaxConns})
	}
	b, err := fdbudget.Split(fdLimit, ls...)
	if err != nil {
		return Listeners{}, err
	}
	out := Listeners{Budget: b}
	for _, l := range b.Listeners {
		lim := base
		lim.MaxConns = l.MaxConns
		switch l.Name {
		case "listen":
			out.MCP = lim
		case "console.listen":
			out.Console = lim
		case "metrics.listen":
			out.Metrics = lim
		}
	}
	return out, nil
}

// logListeners logs the split once the MCP listener serves, and warns
// when http.maxConnections, set, was lowered to fit the limit.
func (g *Gateway) logListeners(ls Listeners) {
	args := []any{"fdLimit", ls.Budget.FDLimit, "reserve", ls.Budget.Reserve}
	for _, l := range ls.Budget.Listeners {
		args = append(args, l.Name, l.MaxConns)
	}
	g.log.Info("gateway: connection caps", args...)
	if asked := g.cfg.HTTP.MaxConnections; asked > ls.MCP.MaxConns {
		g.log.Warn("gateway: http.maxConnections lowered to fit the file-descriptor limit (raise it with ulimit -n)",
			"asked", asked, "cap", ls.MCP.MaxConns, "fdLimit", ls.Budget.FDLimit, "reserve", ls.Budget.Reserve)
	}
}
