package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/gatehouse-dev/gatehouse/diag"
	"github.com/gatehouse-dev/gatehouse/gateway/internal/bearer"
	"github.com/gatehouse-dev/gatehouse/internal/identity/oauth"
	"github.com/gatehouse-dev/gatehouse/server"
)

// Handler returns the gateway's HTTP handler: the MCP endpoint at /mcp
// (behind bearer auth when configured), /healthz and /readyz (its detail,
// the servers and plugins, for a caller with a token; see serveReady).
func (g *Gateway) Handler() (http.Handler, error) {
	ho := &server.HTTPOptions{JSONResponse: g.cfg.HTTP.JSONResponse, Stateless: g.cfg.HTTP.Stateless, IdleTimeout: g.idle}
	if a := g.cfg.Auth; a != nil {
		ho.Verifier = g.auth.Verify
		if a.Resource != "" {
			// A 401 names the Protected Resource Metadata (RFC 9728 §5.1).
			ho.Bearer = &auth.RequireBearerTokenOptions{ResourceMetadataURL: bearer.MetadataURL(a.Resource)}
		}
		if g.auth.OAuth() {
			// Every token must hold these (a static one holds them by
			// construction); exp is checked by identity/oauth with its skew.
			ho.Bearer.Scopes = g.auth.RequiredScopes()
			ho.Bearer.ClockSkew = oauth.DefaultSkew
		}
	}
	if !g.cfg.HTTP.Stateless {
		// Any replica serves any session, and sessions outlive a restart
		// (docs/gateway.md, "Replicas").
		ho.Sessions = g.st
	}
	if g.cfg.HTTP.BytePath() {
		if g.cfg.HTTP.Stateless {
			// A tools/call at 2026-07-28 read and answered as bytes
			// (front_latest.go).
			ho.Inner = newLatestFront(g).handler
		} else {
			// tools/call read and answered as bytes (front_http.go).
			ho.Inner = newByteFront(g, g.idle).handler
		}
	}
	mcpH, err := g.srv.Handler(ho)
	if err != nil {
		return nil, err
	}
	if !g.cfg.HTTP.Stateless && g.cfg.HTTP.BothRevisions() {
		// Both revisions on one endpoint (docs/gateway.md, "Revisions"):
		// a request at 2026-07-28 is served without a session, by a
		// handler of its own with the same checks.
		so := *ho
		so.Stateless, so.Sessions, so.Inner = true, nil, nil
		if g.cfg.HTTP.BytePath() {
			so.Inner = newLatestFront(g).handler
		}
		stateless, err := g.srv.Handler(&so)
		if err != nil {
			return nil, err
		}
		mcpH = byRevision(mcpH, stateless)
	}
	if g.auth.OAuth() {
		mcpH = bearer.Challenges(mcpH, g.auth.Insufficient())
	}
	mux := http.NewServeMux()
	g.serveResourceMetadata(mux)
	// POSTs are counted until their response is written, so that shutdown
	// closes no session with an answer still on its way.
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			g.life.posts.Add()
			defer g.life.posts.Leave()
		}
		mcpH.ServeHTTP(w, r)
	}))
	if g.upauth != nil {
		// The connect flow of auth: user servers (gateway/internal/upauth).
		mux.Handle("/connect/", g.upauth)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}` + "\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		g.serveReady(w, r, ho.Verifier == nil || verified(r, ho.Verifier, ho.Bearer))
	})
	return mux, nil
}

// byRevision serves a request that names 2026-07-28 or later in its
// MCP-Protocol-Version header with stateless (that revision has no
// sessions) and any other with stateful (an initialize opens a session).
// A 2026-07-28 request carries the header (the go-sdk refuses one without
// it), so the header alone decides, before the body is read.
func byRevision(stateful, stateless http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Protocol-Version") >= "2026-07-28" {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
}

// serveReady answers /readyz: 200 or 503 with {"ready": bool}, and the
// whole Readiness (servers, plugins) when detail is true: for a caller
// with a valid token, on the metrics listener, or without auth. Someone
// asking is what makes Serve wait the config's shutdownDrain when it stops.
func (g *Gateway) serveReady(w http.ResponseWriter, r *http.Request, detail bool) {
	g.life.drain.Probed()
	rep := g.Ready(r.Context())
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if !rep.Ready {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	if !detail {
		_ = json.NewEncoder(w).Encode(struct {
			Ready bool `json:"ready"`
		}{rep.Ready})
		return
	}
	_ = json.NewEncoder(w).Encode(rep)
}

// verified reports whether r carries a bearer token v accepts, holding
// the scopes bo requires.
func verified(r *http.Request, v auth.TokenVerifier, bo *auth.RequireBearerTokenOptions) bool {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return false
	}
	ti, err := v(r.Context(), tok, r)
	if err != nil || ti == nil {
		return false
	}
	if bo != nil {
		for _, s := range bo.Scopes {
			if !slices.Contains(ti.Scopes, s) {
				return false
			}
		}
	}
	return true
}

// Readiness is the body of /readyz for a caller with a token (without
// one, when auth is configured, the body is {"ready": bool} alone).
type Readiness struct {
	// Ready is true when the store answers, the gateway is not shutting
	// down, and every configured server is connected or reported.
	Ready bool `json:"ready"`
	// Store is "ok" or "unreachable".
	Store string `json:"store"`
	// Servers are the configured servers and their state: "connected",
	// "skipped" (a diagnostic says why; see the logs; one skipped with
	// rule connection-failure is retried in the background and turns
	// "connected" once listed), or "unavailable" (lost, waiting for its
	// restart backoff).
	Servers []ServerState `json:"servers"`
	// Plugins are the configured plugins; a rejected one has loaded false.
	Plugins []PluginState `json:"plugins"`
	// Tools is the number of tools served.
	Tools int `json:"tools"`
	// Draining is true while the gateway shuts down: from the start of its
	// drain (shutdownDrain), during which it still serves, to its end.
	Draining bool `json:"draining,omitempty"`
}

// ServerState is one server in Readiness.
type ServerState struct {
	Name  string `json:"name"`
	State string `json:"state"`
	Rule  string `json:"rule,omitempty"`
}

// PluginState is one plugin in Readiness (diagnostic texts stay in the
// logs: the detail of /readyz needs no more than any token).
type PluginState struct {
	Dir    string `json:"dir"`
	Name   string `json:"name,omitempty"`
	Loaded bool   `json:"loaded"`
}

// skipRules are the diagnostics that mean a server is not served.
var skipRules = []diag.Rule{diag.ConnectionFailure, diag.HostNotAllowed, diag.UnsupportedTransport,
	diag.PathEscapesPluginRoot, diag.InvalidServerEntry, diag.ReservedEnvName, diag.UnsafeAddress}

// skipped returns the configured servers that are not served, with the
// rule of the diagnostic that says why.
func (g *Gateway) skipped() map[string]string {
	skipped := map[string]string{}
	for _, d := range g.ts.Diagnostics() {
		if slices.Contains(skipRules, d.Rule) {
			skipped[d.Origin] = string(d.Rule)
		}
	}
	return skipped
}

// changed is the toolset's OnChange: the served map follows (callers get
// notifications/tools/list_changed), then joined. The toolset is built
// (relay.Open) before the trust watcher that needs it, so this is bound by
// name; the toolset calls it only once Connect lists the servers, which New
// does after the watcher is built.
func (g *Gateway) changed() {
	g.trust.changed()
	g.joined()
}

// joined marks up (gatehouse_upstream_up) each server skipped at start
// that the toolset's retry has listed since; /readyz reads the toolset's
// diagnostics, so it shows it connected already.
func (g *Gateway) joined() {
	skipped := g.skipped()
	g.upMu.Lock()
	defer g.upMu.Unlock()
	for name := range g.down {
		if _, still := skipped[name]; !still {
			delete(g.down, name)
			g.tel.Metrics.SetUpstreamUp(name, true)
			g.log.Info("gateway: server skipped at start is connected", "server", name)
		}
	}
}

// Ready reports the gateway's readiness.
func (g *Gateway) Ready(ctx context.Context) Readiness {
	rep := Readiness{Store: "ok", Tools: len(g.Tools())}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := g.st.GetCounter(ctx, "gatehouse/readyz", time.Now()); err != nil {
		rep.Store = "unreachable"
	}
	skipped := g.skipped()
	down := g.pipe.health.Snapshot()
	for _, name := range g.servers {
		s := ServerState{Name: name, State: "connected"}
		if r, ok := skipped[name]; ok {
			s.State, s.Rule = "skipped", r
		} else if _, ok := down[name]; ok {
			s.State = "unavailable"
		}
		rep.Servers = append(rep.Servers, s)
	}
	for _, p := range g.plugins {
		rep.Plugins = append(rep.Plugins, PluginState{Dir: p.Dir, Name: p.Name, Loaded: p.Loaded})
	}
	rep.Draining = g.life.drain.Draining() || g.life.calls.IsClosed()
	rep.Ready = rep.Store == "ok" && !rep.Draining
	return rep
}

// Serve serves HTTP on ln until ctx ends, with the limits of
// Listeners().MCP (the config's http: timeouts, http.maxConnections
// within the process's file-descriptor limit), then shuts down gracefully.
// First it drains: /readyz answers 503 while everything else is served as
// before for the config's shutdownDrain (when /readyz was asked since the
// start; see Config.ShutdownDrain), so that a load balancer watching it
// stops sending new work here. Then it
// stops accepting connections and new calls (they get `unavailable`),
// waits up to the config's shutdownTimeout for calls in flight (their
// outcomes are journaled as usual), cancels the ones still running (a
// keyed call is then journaled in doubt), and closes every session. It
// returns nil after a shutdown caused by ctx.
func (g *Gateway) Serve(ctx context.Context, ln net.Listener) error {
	h, err := g.Handler()
	if err != nil {
		return err
	}
	ls, err := g.Listeners()
	if err != nil {
		return err
	}
	hs, err := server.NewHTTPServer(h, &ls.MCP)
	if err != nil {
		return err
	}
	g.logListeners(ls)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	if err := g.drain(errc); err != nil {
		return err
	}
	g.log.Info("gateway: shutting down", "inflight", g.life.calls.Count(), "timeout", g.cfg.ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), g.cfg.ShutdownTimeout)
	defer cancel()
	shut := make(chan struct{})
	go func() {
		defer close(shut)
		_ = hs.Shutdown(sctx) // stop accepting; idle connections close
	}()
	if !g.life.calls.Drain(sctx) {
		g.log.Warn("gateway: shutdown timeout: cancelling calls still running", "inflight", g.life.calls.Count())
		g.life.stop()
		wctx, wcancel := context.WithTimeout(context.Background(), 15*time.Second)
		g.life.calls.Drain(wctx) // the journal records their outcomes
		wcancel()
	}
	// Answers on their way out are written before sessions close.
	wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
	g.life.posts.Drain(wctx)
	wcancel()
	// Calls are done: close the sessions (ending streams held open by
	// clients) and the listener's remaining connections.
	_ = g.srv.Close()
	cancel()
	<-shut
	_ = hs.Close()
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	g.log.Info("gateway: stopped")
	return nil
}

// drain fails readiness and keeps serving for the config's shutdownDrain
// when anyone asked /readyz. It returns the listener's error if serving
// fails meanwhile (errc then holds nothing more).
func (g *Gateway) drain(errc chan error) error {
	wait := g.life.drain.Begin(g.cfg.ShutdownDrain)
	if wait <= 0 {
		if g.cfg.ShutdownDrain > 0 {
			g.log.Info("gateway: no drain: /readyz was never asked, so no load balancer is watching it")
		}
		return nil
	}
	g.log.Info("gateway: draining: /readyz answers 503, calls are still served", "drain", wait.String(), "inflight", g.life.calls.Count())
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case err := <-errc:
		return err
	}
}

// ServeStdio serves one MCP session over stdin/stdout until the peer
// closes it or ctx ends. The peer is trusted as a whole (subject "local").
func (g *Gateway) ServeStdio(ctx context.Context) error {
	err := g.srv.ServeStdio(ctx)
	wctx, cancel := context.WithTimeout(context.Background(), g.cfg.ShutdownTimeout)
	defer cancel()
	if !g.life.calls.Drain(wctx) {
		g.life.stop()
	}
	if ctx.Err() != nil {
		return nil
	}
	return err
}
