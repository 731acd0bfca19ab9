package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/diag"
	"github.com/gatehouse-dev/gatehouse/durable"
	"github.com/gatehouse-dev/gatehouse/gateway/forward"
	"github.com/gatehouse-dev/gatehouse/internal/metrics"
	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/server"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/dsn"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// Instructions are the gateway's own MCP instructions. Upstream servers'
// instructions are never forwarded.
const Instructions = "Gatehouse gateway: tools of several MCP servers under one endpoint. " +
	"Send _meta.idempotencyKey with a call to make it a unit of work that runs at most once; " +
	"refusals by the gateway are tool results whose text begins with [code]."

// JournalScope is the journal scope of gateway calls (see `gatehouse runs list`).
const JournalScope = "gateway"

// LocalSubject is the subject of callers without a bearer token: every
// caller of a gateway without auth (loopback only), and the peer of --stdio.
const LocalSubject = "local"

// Options configure New. A nil *Options means defaults.
type Options struct {
	// Logger receives the gateway's logs, one line per call among them. Nil
	// discards them.
	Logger *slog.Logger
	// Store, when set, is used instead of opening StoreDSN; Close leaves it
	// open.
	Store store.Store
	// StoreDSN overrides the config's store DSN. Empty means
	// $GATEHOUSE_STORE, else the config's store.
	StoreDSN string
	// Stderr receives the stderr of stdio upstreams. Nil means os.Stderr.
	Stderr io.Writer
	// Version is reported to callers in the server implementation.
	Version string
	// Clock is the time source of backoffs. Nil means time.Now.
	Clock func() time.Time
}

// Gateway serves the tools of the configured plugins and servers through
// the hardened server. Make one with New; Serve or ServeStdio it; Close it.
type Gateway struct {
	cfg *Config
	log *slog.Logger
	now func() time.Time
	// idle closes a stateful caller session idle this long (the go-sdk's
	// timer, which the raw path keeps fed); tests shorten it.
	idle     time.Duration
	st       store.Store
	ownStore bool
	ts       *toolset.Toolset
	journal  *durable.Journal
	guard    policy.Guard
	srv      *server.Server
	auth     *authenticator

	plugins []PluginStatus
	servers []string // configured server names, in order

	policyAllow, policyBlock, approval, repeatable map[string]bool

	mu    sync.RWMutex
	tools map[string]toolset.ToolInfo // the served tool map
	// served is tools for the call path, read without the lock: Refresh
	// publishes each new map here and never changes a published one.
	served atomic.Pointer[map[string]toolset.ToolInfo]
	mcps   []*mcp.Server      // every go-sdk server the tools are registered on
	fwd    *forward.Forwarder // everything beyond tools (forward_wiring.go)

	health *healthBook

	registry  *metrics.Registry       // served by ServeMetrics
	metrics   *metrics.GatewayMetrics // always recorded, served when configured
	pending   pendingCache            // approvals pending and journal lag, cached for scrapes
	driftMu   sync.Mutex
	driftSeen map[string]struct{} // tool-drift diagnostics already counted
	bg        sync.WaitGroup      // WatchTrust

	calls   inflight        // tool calls being served
	posts   inflight        // HTTP POSTs being answered
	stopCtx context.Context // cancelled when shutdown gives up waiting
	stop    context.CancelFunc
	closed  atomic.Bool

	stopSweep func() // ends the journal sweeper
}

// sweepEvery is how often expired journal records and counters are deleted.
const sweepEvery = 10 * time.Minute

// trustEvery is how often the gateway polls the store for a re-trust made
// by another process (`gatehouse trust`, another replica).
const trustEvery = time.Second

// PluginStatus is what became of one configured plugin directory.
type PluginStatus struct {
	Dir         string            `json:"dir"`
	Name        string            `json:"name,omitempty"`
	Loaded      bool              `json:"loaded"`
	Diagnostics []diag.Diagnostic `json:"diagnostics,omitempty"`
}

// New opens the store, loads the plugins, connects every server (a server
// that fails is skipped with a diagnostic), and builds the hardened server.
// It returns a *ConfigError for a configuration mistake (a rejected plugin
// with strictPlugins, a bad inline server), and other errors for runtime
// failures (the store cannot be opened).
func New(ctx context.Context, cfg *Config, opts *Options) (*Gateway, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	g := &Gateway{
		cfg: cfg, log: log, now: o.Clock, idle: server.DefaultIdleTimeout,
		policyAllow: set(cfg.Tools.Allow), policyBlock: set(cfg.Tools.Block),
		approval: set(cfg.Tools.RequireApproval), repeatable: set(cfg.Tools.Repeatable),
		health:   newHealthBook(o.Clock),
		auth:     newAuthenticator(cfg.Auth),
		registry: metrics.NewRegistry(nil),
	}
	g.metrics = metrics.NewGateway(g.registry)
	g.stopCtx, g.stop = context.WithCancel(context.Background())

	// Plugins and inline servers.
	var servers []toolset.Server
	for _, dir := range cfg.PluginDirs() {
		res := plugin.Load(dir)
		ps := PluginStatus{Dir: dir, Loaded: res.OK(), Diagnostics: res.Diagnostics}
		if !res.OK() {
			log.Error("gateway: plugin rejected; it is skipped", "dir", dir, "diagnostics", diagText(res.Diagnostics))
			if cfg.StrictPlugins {
				g.stop()
				return nil, cfg.errf("plugins", "fix the plugin (see `gatehouse plugin check DIR`) or remove it from plugins, or set strictPlugins: false",
					"plugin %s is rejected: %s", dir, diagText(res.Diagnostics))
			}
			g.plugins = append(g.plugins, ps)
			continue
		}
		ps.Name = res.Plugin.Manifest.Name
		for _, d := range res.Diagnostics {
			log.Warn("gateway: plugin diagnostic", "plugin", ps.Name, "rule", string(d.Rule), "origin", d.Origin, "message", d.Message)
		}
		g.plugins = append(g.plugins, ps)
		for _, s := range toolset.PluginServers(res.Plugin) {
			s.AlwaysLoad = slices.Contains(cfg.Disclosure.AlwaysLoad, s.Config.Name) || slices.Contains(cfg.Disclosure.AlwaysLoad, ps.Name)
			servers = append(servers, s)
		}
	}
	for _, in := range cfg.inline {
		for _, d := range in.warn {
			log.Warn("gateway: server diagnostic", "server", in.cfg.Name, "rule", string(d.Rule), "message", d.Message)
		}
	}
	servers = append(servers, cfg.InlineServers()...)
	for _, s := range servers {
		g.servers = append(g.servers, s.Config.Name)
	}

	// The store.
	if o.Store != nil {
		g.st = o.Store
	} else {
		d := o.StoreDSN
		if d == "" {
			d = store.DSNFromEnv(cfg.StoreDSN())
		}
		st, err := openStore(ctx, d)
		if err != nil {
			g.stop()
			return nil, err
		}
		g.st, g.ownStore = st, true
	}
	fail := func(err error) (*Gateway, error) {
		_ = g.Close()
		return nil, err
	}

	// The toolset: every server connects now, in parallel. Its catalogues
	// and trust baselines live in the gateway's store, so replicas share
	// them and `gatehouse trust` (another process) re-trusts through it.
	ts, err := toolset.Open(ctx, servers, &toolset.Options{
		AllowedHosts: cfg.AllowedHosts,
		Budget:       cfg.Disclosure.Budget,
		Logger:       log,
		Stderr:       o.Stderr,
		Store:        g.st,
		OnChange:     g.toolsetChanged,
		// The revision asked of every upstream (config upstreamProtocol).
		ProtocolVersion: cfg.UpstreamProtocolVersion(),
		// Resources, prompts and list changes (forward_wiring.go).
		OnListChanged:     g.forwardListChanged,
		OnResourceUpdated: g.forwardResourceUpdated,
	})
	if err != nil {
		return fail(fmt.Errorf("gateway: %w", err))
	}
	g.ts = ts
	g.fwd = g.newForwarder(ts)
	if err := ts.Connect(ctx); err != nil {
		return fail(fmt.Errorf("gateway: connecting servers: %w", err))
	}
	for _, d := range ts.Diagnostics() {
		log.Warn("gateway: server diagnostic", "server", d.Origin, "rule", string(d.Rule), "message", d.Message)
	}
	if err := g.Refresh(ctx); err != nil {
		return fail(fmt.Errorf("gateway: listing tools: %w", err))
	}
	g.countDrift()
	g.initMetrics()

	// The journal and the guards.
	g.journal, err = durable.NewJournal(g.st, &durable.JournalOptions{
		Scope:      JournalScope,
		Lease:      cfg.Journal.Lease,
		TTL:        cfg.Journal.TTL,
		Repeatable: func(_, tool string) bool { return g.repeatable[tool] },
		Approvals:  g.st,
		Logger:     log,
	})
	if err != nil {
		return fail(fmt.Errorf("gateway: %w", err))
	}
	g.stopSweep = g.startSweeper(g.stopCtx)
	g.guard, err = g.buildGuard()
	if err != nil {
		return fail(fmt.Errorf("gateway: %w", err))
	}

	// The hardened server.
	so := server.Options{
		Implementation: &mcp.Implementation{Name: "gatehouse", Version: versionOr(o.Version)},
		ServerOptions:  g.fwd.ServerOptions(&mcp.ServerOptions{Instructions: Instructions, Logger: log}),
		Setup:          g.setup,
		Identify:       g.identify,
		StdioSubject:   LocalSubject,
		AllowTool:      g.visible,
		// Dedup is the gateway's (journal.Guarded in the tool handler), so
		// that guards and approvals run before the claim.
		WorkKey: func(*mcp.CallToolRequest) string { return "" },
		Name:    "gatehouse",
		Logger:  log,
	}
	if rl := cfg.RateLimit; rl != nil {
		so.RateLimit = &server.RateLimit{MaxCalls: rl.MaxCalls, Window: rl.Window, Counters: g.st}
	}
	g.srv, err = server.New(so)
	if err != nil {
		return fail(fmt.Errorf("gateway: %w", err))
	}
	// Outermost: one log line per call, whoever answered it.
	g.srv.MCPServer().AddReceivingMiddleware(g.logMiddleware)

	// Re-trusts made in the store by other processes take effect here
	// within trustEvery; the watcher ends with the gateway.
	g.bg.Go(func() { _ = ts.WatchTrust(g.stopCtx, trustEvery) })

	log.Info("gateway: ready", "tools", len(g.Tools()), "servers", len(g.servers), "plugins", len(g.plugins))
	return g, nil
}

func versionOr(v string) string {
	if v == "" {
		return "dev"
	}
	return v
}

func set(names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

func diagText(ds []diag.Diagnostic) string {
	parts := make([]string, 0, len(ds))
	for _, d := range ds {
		parts = append(parts, fmt.Sprintf("%s: %s (%s)", d.Origin, d.Message, d.Rule))
	}
	return strings.Join(parts, "; ")
}

// openStore opens a DSN, creating the directory of a SQLite file.
func openStore(ctx context.Context, d string) (store.Store, error) {
	parsed, err := store.ParseDSN(d)
	if err != nil {
		return nil, &ConfigError{File: "(store)", Field: "store", Msg: err.Error(),
			Fix: "use sqlite:PATH or postgres://... in store: or $GATEHOUSE_STORE"}
	}
	if parsed.Kind == store.KindSQLite {
		if err := os.MkdirAll(filepath.Dir(parsed.Path), 0o700); err != nil {
			return nil, fmt.Errorf("gateway: creating the store directory: %w", err)
		}
	}
	st, err := dsn.Open(ctx, d, nil)
	if err != nil {
		return nil, fmt.Errorf("gateway: opening store %s: %w", parsed, err)
	}
	return st, nil
}

// setup registers the served tools on one go-sdk server (the HTTP one at
// New, the stdio one when ServeStdio starts).
func (g *Gateway) setup(s *mcp.Server) {
	g.fwd.Setup(s, g.srv != nil) // the stdio server is built after g.srv
	g.mu.Lock()
	defer g.mu.Unlock()
	g.mcps = append(g.mcps, s)
	for _, name := range slices.Sorted(maps.Keys(g.tools)) {
		g.register(s, g.tools[name])
	}
}

// register adds one tool to s; a tool the go-sdk refuses is logged and
// left out.
func (g *Gateway) register(s *mcp.Server, t toolset.ToolInfo) {
	schema := map[string]any{"type": "object"}
	if t.InputSchema != nil && t.InputSchema["type"] == "object" {
		schema = t.InputSchema
	}
	def := &mcp.Tool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: schema, Annotations: t.Annotations}
	name := t.Name
	func() {
		defer func() {
			if r := recover(); r != nil {
				g.log.Error("gateway: tool not served", "tool", name, "reason", fmt.Sprint(r))
			}
		}()
		s.AddTool(def, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return g.call(ctx, name, req)
		})
	}()
}

// Refresh re-reads the toolset's tool map and updates what every session
// sees: new tools are added, changed ones replaced (a quarantined tool
// shows the toolset's text), withdrawn ones removed. The go-sdk tells
// clients with notifications/tools/list_changed. The drift work calls it
// when the toolset's states change (a quarantine, a re-trust noticed in
// the store).
//
// The snapshot is taken under the gateway's lock, so concurrent refreshes
// apply in order and the last one leaves the newest map.
func (g *Gateway) Refresh(ctx context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	list, err := g.ts.Tools(ctx)
	if err != nil {
		return err
	}
	next := make(map[string]toolset.ToolInfo, len(list))
	for _, t := range list {
		next[t.Name] = t
	}
	var gone []string
	for name := range g.tools {
		if _, ok := next[name]; !ok {
			gone = append(gone, name)
		}
	}
	for _, s := range g.mcps {
		if len(gone) > 0 {
			s.RemoveTools(gone...)
		}
		for _, t := range list {
			if old, ok := g.tools[t.Name]; !ok || old.ContractHash != t.ContractHash || old.State != t.State || old.Description != t.Description {
				g.register(s, t)
			}
		}
	}
	g.tools = next
	g.served.Store(&next)
	return nil
}

// tool returns the served tool called name. It takes no lock (it runs
// several times on every call; the RWMutex cost 1% of the gateway's CPU
// at 8 sessions).
func (g *Gateway) tool(name string) (toolset.ToolInfo, bool) {
	m := g.served.Load()
	if m == nil {
		return toolset.ToolInfo{}, false
	}
	t, ok := (*m)[name]
	return t, ok
}

// Tools returns the names of the served tools, sorted.
func (g *Gateway) Tools() []string {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return slices.Sorted(maps.Keys(g.tools))
}

// Store returns the gateway's store.
func (g *Gateway) Store() store.Store { return g.st }

// Toolset returns the gateway's toolset (the drift work hooks in here).
func (g *Gateway) Toolset() *toolset.Toolset { return g.ts }

// Close cancels calls still running, closes every session, the upstream
// servers (reaping stdio children) and the store the gateway opened. Call
// it after Serve or ServeStdio returned.
func (g *Gateway) Close() error {
	if g.closed.Swap(true) {
		return nil
	}
	g.calls.close()
	g.stop()
	g.bg.Wait()
	if g.stopSweep != nil {
		g.stopSweep()
	}
	var errs []error
	if g.srv != nil {
		errs = append(errs, g.srv.Close())
	}
	if g.ts != nil {
		errs = append(errs, g.ts.Close())
	}
	if g.ownStore && g.st != nil {
		errs = append(errs, g.st.Close())
	}
	return errors.Join(errs...)
}

// startSweeper deletes expired journal records and expired counters (rate
// limit windows, call caps) every sweepEvery, until ctx ends; stop waits
// for it.
func (g *Gateway) startSweeper(ctx context.Context) (stop func()) {
	stopJournal := g.journal.StartSweeper(ctx, sweepEvery)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(sweepEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if n, err := g.st.SweepCounters(ctx, g.now()); err != nil {
				if ctx.Err() == nil {
					g.log.Error("gateway: sweeping counters failed", "err", err)
				}
			} else if n > 0 {
				g.log.Debug("gateway: swept expired counters", "count", n)
			}
		}
	}()
	return func() { cancel(); <-done; stopJournal() }
}
