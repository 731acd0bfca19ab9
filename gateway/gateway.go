package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/diag"
	"github.com/gatehouse-dev/gatehouse/durable"
	"github.com/gatehouse-dev/gatehouse/gateway/internal/auditlog"
	"github.com/gatehouse-dev/gatehouse/gateway/internal/bearer"
	"github.com/gatehouse-dev/gatehouse/gateway/internal/config"
	"github.com/gatehouse-dev/gatehouse/gateway/internal/health"
	"github.com/gatehouse-dev/gatehouse/gateway/internal/inputstate"
	"github.com/gatehouse-dev/gatehouse/gateway/internal/relay"
	"github.com/gatehouse-dev/gatehouse/gateway/internal/skillserve"
	"github.com/gatehouse-dev/gatehouse/gateway/internal/telemetry"
	"github.com/gatehouse-dev/gatehouse/gateway/internal/tracing"
	"github.com/gatehouse-dev/gatehouse/gateway/internal/upauth"
	"github.com/gatehouse-dev/gatehouse/identity/upstream"
	"github.com/gatehouse-dev/gatehouse/internal/executor"
	"github.com/gatehouse-dev/gatehouse/internal/pin"
	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/server"
	"github.com/gatehouse-dev/gatehouse/skills"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/dsn"
	"github.com/gatehouse-dev/gatehouse/toolset"
	"github.com/gatehouse-dev/gatehouse/trust"
)

// instructions are the gateway's own MCP instructions. Upstream servers'
// instructions are never forwarded.
const instructions = "Gatehouse gateway: tools of several MCP servers under one endpoint. " +
	"Send _meta.idempotencyKey with a call to make it a unit of work that runs at most once; " +
	"refusals by the gateway are tool results whose text begins with [code]."

// journalScope is the journal scope of gateway calls (see `gatehouse runs list`).
const journalScope = "gateway"

// localSubject is the subject of callers without a bearer token: every
// caller of a gateway without auth (loopback only), and the peer of --stdio.
const localSubject = "local"

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
	// Stderr, when set, receives the stderr of stdio upstreams as they
	// write it. Nil (the default) means the Logger: one "upstream stderr"
	// record per line, the line one attribute of it, bounded in length and
	// rate, so that nothing an upstream prints can pass for a record of
	// the gateway's.
	Stderr io.Writer
	// Version is reported to callers in the server implementation.
	Version string
	// Clock is the time source of backoffs, of access-token checks (exp,
	// nbf, the issuer's key refreshes) and of the rate limit's windows.
	// Nil means time.Now.
	Clock func() time.Time
	// Instance names this gateway in the store across its restarts (see
	// the executor in docs/gateway.md): the next start under the same name
	// makes the calls the previous one left running in doubt at once. Two
	// running gateways must never share one. Empty means the config's
	// instance, else derived from the host and the store (a free slot among
	// lock files), or random when Store is given.
	Instance string
	// UpstreamTokens, when set, keeps the token sets of the servers with
	// auth: service or user instead of the vault in the store.
	UpstreamTokens upstream.TokenStore
}

// Gateway serves the tools of the configured plugins and servers through
// the hardened server. Make one with New; Serve or ServeStdio it; Close it.
//
// It is a few parts wired by New: the relay and its toolset (the
// upstreams), the served map (which tools are served, to whom), the call
// pipeline (every tools/call), the trust watcher (drift and re-trusts),
// the instruments (metrics) and the lifecycle (calls in flight, shutdown,
// sweeping).
type Gateway struct {
	cfg *Config
	log *slog.Logger
	now func() time.Time
	// idle closes a stateful caller session idle this long (the go-sdk's
	// timer, which the byte front keeps fed); tests shorten it.
	idle     time.Duration
	st       store.Store
	ownStore bool
	exec     *executor.Executor // this process in the journal

	relay *relay.Relay
	ts    *toolset.Toolset
	// impl is the gateway's Implementation, as callers see it.
	impl   *mcp.Implementation
	srv    *server.Server
	auth   *bearer.Authenticator
	served *servedMap
	pipe   *pipeline
	trust  *trustWatcher
	skills *skillserve.Server // the plugins' skills as resources and prompts
	audit  *auditlog.Recorder // nil: audit.enabled false
	upauth *upauth.Manager    // servers with auth: (nil: none)
	trace  *tracing.Tracer    // nil: OTEL_* asks for no traces (gateway/tracing.go)
	tel    *telemetry.Instruments
	life   lifecycle

	plugins []pluginStatus
	loaded  []*plugin.Plugin // the plugins that loaded
	servers []string         // configured server names, in order

	upMu sync.Mutex
	down map[string]string // skipped at start, not listed since (joined)
}

// lifecycle is what the gateway's life is made of: the calls and POSTs in
// flight (shutdown waits for them), the context that ends when shutdown
// stops waiting, and the journal's sweeper.
type lifecycle struct {
	calls     health.Inflight // tool calls being served
	drain     health.Drain    // readiness while it stops (serve.go)
	posts     health.Inflight // HTTP POSTs being answered
	ctx       context.Context
	stop      context.CancelFunc
	closed    atomic.Bool
	stopSweep func()
}

// sweepEvery is how often expired journal records and counters are deleted.
const sweepEvery = 10 * time.Minute

// pluginStatus is what became of one configured plugin directory.
type pluginStatus struct {
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
	au, err := bearer.NewAuthenticator(cfg.Auth, log, o.Clock)
	if err != nil {
		return nil, fmt.Errorf("gateway: auth.oauth: %w", err)
	}
	// Each part below is built from the parts it needs, held in locals, so
	// that building one before what it needs does not compile. A part is
	// put into g as soon as it exists, for Close (fail). What g's methods
	// read later, once serving, is bound by name: the relay's Visible and
	// Limit (the served map and the server are built from the relay), the
	// toolset's OnChange (the trust watcher is built from the toolset), and
	// the server's Setup and Identify (the pipeline is built from the
	// server). No request reaches them before New returns.
	g := &Gateway{cfg: cfg, log: log, now: o.Clock, idle: server.DefaultIdleTimeout, auth: au}
	g.life.ctx, g.life.stop = context.WithCancel(context.Background())

	servers, err := g.loadPlugins()
	if err != nil {
		g.life.stop()
		return nil, err
	}

	st, own, storeDSN, err := useStore(ctx, cfg, &o)
	if err != nil {
		g.life.stop()
		return nil, err
	}
	g.st, g.ownStore = st, own
	fail := func(err error) (*Gateway, error) {
		_ = g.Close()
		return nil, err
	}
	trace, err := tracing.New(ctx, &tracing.Options{Version: o.Version})
	if err != nil {
		return fail(fmt.Errorf("gateway: %w", err))
	}
	g.trace = trace

	// This process as the journal's executor; its instance also names
	// the drift this gateway observes (store.Observation.SeenBy).
	exec, err := startExecutor(ctx, st, cfg, cmp.Or(o.Instance, cfg.Instance), storeDSN, log)
	if err != nil {
		return fail(err)
	}
	g.exec = exec

	// The audit trail: this instance's chain (gateway/internal/auditlog).
	var audit *auditlog.Recorder // nil: audit.enabled false, and every method a no-op
	if cfg.Audit.Enabled {
		if audit, err = auditlog.Open(ctx, cfg, st, exec.Instance(), &auditlog.Options{Stop: g.life.ctx, Logger: log, Now: o.Clock}); err != nil {
			return fail(err)
		}
		g.audit = audit
	}

	// Whose token goes to the servers with auth: (upauth.go).
	up, err := upauth.FromConfig(cfg, servers, upauth.Wiring{Tokens: o.UpstreamTokens,
		Store: st, Holder: exec.Instance(), Verify: au.Verify, Judge: sessionJudge{g}, Logger: log, Now: o.Clock,
		Record: func(ev upauth.ConnectEvent) {
			audit.ConnectFlow(ev.Subject, ev.Server, ev.Outcome, ev.Account, ev.Proof)
		}})
	if err != nil {
		return fail(err)
	}
	g.upauth = up

	// The instruments, before anything that counts.
	otlp, err := telemetry.OTLPFromEnv(ctx) // off unless OTEL_* ask for it
	if err != nil {
		return fail(fmt.Errorf("gateway: %w", err))
	}
	tel := telemetry.NewInstruments(st, g.life.ctx, nil, otlp...)
	g.tel = tel
	metrics := tel.Metrics

	// The upstreams: the relay and its toolset. The search's semantic
	// stage (search.model) is read now or not at all.
	searchModel, err := loadSearchModel(cfg)
	if err != nil {
		return fail(err)
	}
	// The requestState of input requests passed to 2026-07-28 callers is
	// sealed (inputs.go).
	inputs, err := inputSealer(cfg, log, o.Clock)
	if err != nil {
		return fail(err)
	}
	rel, err := relay.Open(ctx, servers, toolsetOptions(cfg, &o, log, st, exec.Instance(), searchModel, g.changed),
		g.relayOptions(metrics, up, inputs))
	if err != nil {
		return fail(fmt.Errorf("gateway: %w", err))
	}
	g.relay = rel
	ts := rel.Toolset()
	g.ts = ts
	served := newServedMap(ts, log, cfg, au)
	served.gates = rel // tools a server offers only for sampling, elicitation or roots
	g.served = served
	g.skills = g.newSkills(served)
	metrics.SetSessionsSource(served.sessionCount)
	// The drift watcher, whole: the toolset's changes reach it (OnChange)
	// only once Connect below has listed the servers.
	trustW := &trustWatcher{ts: ts, served: served, metrics: metrics, log: log, life: g.life.ctx, audit: audit}
	g.trust = trustW
	// The skills served are judged against their baselines in the store
	// (through package trust: a drifted one is withheld) now, on every
	// drift.recheck with the catalog built afresh from disk, and when the
	// store's trust state of skills moves (a trust, another replica's
	// drift). Each new drift is counted and audited as a server's is.
	skillTrust := g.newSkillTrust(st, exec.Instance(), metrics, audit)
	_ = skillTrust.Check(ctx, g.Skills(), false) // logged; a plugin it could not judge is withheld
	// Said before: a stdio server run by `go run` or `npx` builds or
	// downloads first, which can take minutes on a first start.
	log.Info("gateway: connecting servers", "servers", len(g.servers))
	if err := ts.Connect(ctx); err != nil {
		return fail(fmt.Errorf("gateway: connecting servers: %w", err))
	}
	for _, d := range ts.Diagnostics() {
		log.Warn("gateway: server diagnostic", "server", d.Origin, "rule", string(d.Rule), "message", d.Message)
	}
	if err := served.refresh(ctx); err != nil {
		return fail(fmt.Errorf("gateway: listing tools: %w", err))
	}
	trustW.countDrift()
	g.upMu.Lock()
	g.down = g.skipped() // a server skipped for connection-failure is retried (joined)
	tel.Upstreams(g.servers, g.down)
	g.upMu.Unlock()

	// The call pipeline: the journal and the guards.
	journal, err := newJournal(cfg, st, exec.ID(), log)
	if err != nil {
		return fail(fmt.Errorf("gateway: %w", err))
	}
	guard, err := buildGuard(cfg, st, served, trustW)
	if err != nil {
		return fail(fmt.Errorf("gateway: %w", err))
	}
	g.life.stopSweep = startSweeper(g.life.ctx, journal, st, g.now, log, func(ctx context.Context) {
		if audit != nil {
			auditlog.Sweep(ctx, st, cfg.Audit.Retain, g.now(), log)
		}
		_, _ = st.SweepConnectFlows(ctx, g.now()) // connect URLs never used (upauth)
	})
	// The hardened server (serverOptions).
	srv, err := server.New(g.serverOptions(&o, rel, served, st))
	if err != nil {
		return fail(fmt.Errorf("gateway: %w", err))
	}
	g.srv = srv
	warnUnprotected(log, cfg)

	g.pipe = &pipeline{
		served: served, relay: rel, ts: ts, journal: journal, guard: guard, st: st,
		health: health.NewBackoff(o.Clock), calls: &g.life.calls, stopCtx: g.life.ctx, tel: tel, log: log,
		runs: cfg.Firewall.MaxCallsPerRun > 0, bytes: cfg.HTTP.BytePath(), audit: audit, upauth: up, trace: trace,
		srv: srv, inputs: inputs,
	}

	// Re-trusts made in the store by other processes, and drift other
	// replicas recorded, take effect here within trustEvery, for the
	// servers and the skills alike (one poll of the trust state); the
	// watcher ends with the gateway.
	trustW.start(trust.NewLedger(st, exec.Instance(), log), skillTrust.ApplyTrust)
	if len(g.loaded) > 0 && cfg.Drift.Recheck > 0 {
		trustW.bg.Go(func() { _ = skillTrust.Run(g.life.ctx) })
	}

	log.Info("gateway: ready", "tools", len(g.Tools()), "servers", len(g.servers), "plugins", len(g.plugins), "skills", g.Skills().Len())
	return g, nil
}

// toolsetOptions are the options of the relay's toolset: every server
// connects at New, in parallel; catalogues and trust baselines live in
// the gateway's store, so replicas share them and `gatehouse trust`
// (another process) re-trusts through it.
func toolsetOptions(cfg *Config, o *Options, log *slog.Logger, st store.Store, instance string, searchModel *toolset.SearchModel, onChange func()) *toolset.Options {
	return &toolset.Options{
		SearchModel:  searchModel,
		AllowedHosts: cfg.AllowedHosts,
		Budget:       cfg.Disclosure.Budget,
		Logger:       log,
		Stderr:       o.Stderr,
		StderrLog:    log,
		// Stdio upstreams get what they need, not the gateway's
		// environment (GATEHOUSE_STORE may hold a password).
		Env:      toolset.MinimalEnv(os.Environ(), cfg.InheritEnv),
		Store:    st,
		OnChange: onChange,
		// Every connected server re-listed in the background and judged
		// (drift.recheck; 0 turns it off).
		Recheck:  cfg.Drift.Recheck,
		Instance: instance,
		// The revision asked of every upstream (config upstreamProtocol).
		ProtocolVersion: cfg.UpstreamProtocolVersion(),
	}
}

// relayOptions are the relay's: who a caller is, what it may see, the
// caps of upstream sessions of callers' own, and the metrics of what it
// drops or refuses.
func (g *Gateway) relayOptions(metrics *telemetry.Metrics, up *upauth.Manager, inputs *inputstate.Sealer) *relay.Options {
	cfg, log := g.cfg, g.log
	// Without auth every loopback caller is the one subject "local": no
	// per-subject cap of upstream sessions unless set.
	perSubject := cfg.Sessions.UpstreamPerSubject
	if perSubject == 0 && cfg.Auth == nil {
		perSubject = -1
	}
	return &relay.Options{
		Subject: g.relaySubject,
		Visible: func(srv, subject string, req mcp.Request, local bool) bool {
			return g.served.serverVisible(srv, subject, server.InfoOf(req, local))
		},
		Logger: log,
		// Stateless HTTP sessions last one request: no upstream session
		// of their own.
		Stateless: cfg.HTTP.Stateless,
		Limit:     g.relayLimit,
		// Notifications an upstream sent for another server's call or
		// resource: dropped, and counted here.
		Dropped: func(server string, what relay.Dropped) { metrics.NotificationDropped(server, string(what)) },
		// The content of servers with auth: user or exchange is each
		// subject's own (upauth.go).
		Subjects: subjectContent{m: up, log: log},
		// Upstream sessions of callers' own (a process each for stdio).
		UpstreamPerServer:  cfg.Sessions.UpstreamPerServer,
		UpstreamPerSubject: perSubject,
		Capped:             func(server string, why relay.Capped) { metrics.UpstreamSessionCapped(server, string(why)) },
		// An upstream's input requests reach 2026-07-28 callers with its
		// requestState sealed (inputs.go).
		Inputs: inputs,
	}
}

// newSkillTrust is the watcher of the skills' trust: each new drift is
// counted and audited as a server's is.
func (g *Gateway) newSkillTrust(st store.Store, instance string, metrics *telemetry.Metrics, audit *auditlog.Recorder) *skills.Watcher {
	cfg, log, loaded := g.cfg, g.log, g.loaded
	return skills.NewWatcher(st, skills.WatchOptions{Instance: instance, Serve: g.SetSkills,
		Build:   func() *skills.Catalog { cat, _ := skills.New(loaded, nil); return cat },
		Recheck: cfg.Drift.Recheck, Poll: -1, Logger: log, // polled by g.trust's one watch
		OnEvent: func(ev skills.DriftEvent) {
			kind, action := telemetry.DriftRemoved, pin.Removed
			if ev.Withheld {
				kind, action = telemetry.DriftWithheld, pin.Withheld
			}
			owner := skills.Owner(ev.Plugin)
			metrics.DriftEvent(owner, kind)
			audit.Drift(toolset.DriftEvent{Server: owner, ServerID: owner, Kind: toolset.DriftKind(pin.ChangeSkill),
				Decision: pin.Decision{Tool: ev.Skill, Action: action}})
		}})
}

// newJournal is the journal of the gateway's calls, over the store.
func newJournal(cfg *Config, st store.Store, executorID string, log *slog.Logger) (*durable.Journal, error) {
	return durable.NewJournal(st, &durable.JournalOptions{
		Scope:      journalScope,
		Executor:   executorID,
		Executors:  st,
		Lease:      cfg.Journal.Lease,
		TTL:        cfg.Journal.TTL,
		Repeatable: func(_, tool string) bool { return slices.Contains(cfg.Tools.Repeatable, tool) },
		Approvals:  st,
		Logger:     log,

		// An approval is spent by the call it allowed and expires; a
		// subject has at most durable.DefaultMaxPendingApprovals pending.
		ApprovalTTL: cfg.Approvals.TTL,
	})
}

// serverOptions are the hardened server's. Dedup is the pipeline's (the
// journal, after the guards and approvals), and so is admission: every
// tools/call, from the go-sdk's front or the byte front, is admitted by
// the pipeline in one order.
func (g *Gateway) serverOptions(o *Options, rel *relay.Relay, served *servedMap, st store.Store) server.Options {
	cfg, log := g.cfg, g.log
	g.impl = &mcp.Implementation{Name: "gatehouse", Version: versionOr(o.Version)}
	so := server.Options{
		Implementation:     g.impl,
		ServerOptions:      rel.ServerOptions(&mcp.ServerOptions{Instructions: instructions, Logger: log}),
		Setup:              g.setup,
		Identify:           g.identify,
		StdioSubject:       localSubject,
		AllowToolFor:       served.visible,
		DeferCallAdmission: true,
		Name:               "gatehouse",
		Logger:             log,
		Clock:              o.Clock,
		OwnWarnings:        true, // warnUnprotected names the config's fields
	}
	// Sessions per subject (each initialize also spends the rate limit).
	so.MaxSessionsPerSubject = cfg.Sessions.MaxPerSubject
	if rl := cfg.RateLimit; rl != nil {
		so.RateLimit = &server.RateLimit{MaxCalls: rl.MaxCalls, Window: rl.Window, Counters: st}
	}
	return so
}

// useStore takes the store of o, or opens the one the config (or
// $GATEHOUSE_STORE, or o.StoreDSN) names; it returns the store, whether
// it opened it (Close closes it then), and the DSN it opened ("" for
// o.Store).
func useStore(ctx context.Context, cfg *Config, o *Options) (st store.Store, own bool, dsn string, err error) {
	if o.Store != nil {
		return o.Store, false, "", nil
	}
	// Where the DSN came from, for a mistake in it.
	d, from := o.StoreDSN, "the --store flag"
	if d == "" {
		d = store.DSNFromEnv(cfg.StoreDSN())
		from = cmp.Or(cfg.File, "(default config)")
		if d != cfg.StoreDSN() {
			from = "$GATEHOUSE_STORE"
		}
	}
	if st, err = openStore(ctx, d, from); err != nil {
		return nil, false, "", err
	}
	return st, true, d, nil
}

// startExecutor registers this process as the journal's executor, with
// the config's lease and TTL (the TTL never shorter than the lease).
func startExecutor(ctx context.Context, st store.Store, cfg *Config, instance, storeDSN string, log *slog.Logger) (*executor.Executor, error) {
	lease := cfg.Journal.Lease
	if lease <= 0 {
		lease = durable.DefaultLease
	}
	ttl := cfg.Journal.TTL
	if ttl <= 0 {
		ttl = durable.DefaultTTL
	}
	ttl = max(ttl, lease)
	return executor.Start(ctx, st, &executor.Options{Instance: instance, StoreDSN: storeDSN,
		Lease: lease, TTL: ttl, SweepEvery: sweepEvery, Logger: log})
}

// loadPlugins loads the configured plugins and returns the servers to
// connect: the plugins' and the config's inline ones.
func (g *Gateway) loadPlugins() ([]toolset.Server, error) {
	cfg, log := g.cfg, g.log
	var servers []toolset.Server
	for _, dir := range cfg.PluginDirs() {
		res := plugin.Load(dir)
		ps := pluginStatus{Dir: dir, Loaded: res.OK(), Diagnostics: res.Diagnostics}
		if !res.OK() {
			log.Error("gateway: plugin rejected; it is skipped", "dir", dir, "diagnostics", diagText(res.Diagnostics))
			if cfg.StrictPlugins {
				return nil, config.Errorf(cfg, "plugins", "fix the plugin (see `gatehouse plugin check DIR`) or remove it from plugins, or set strictPlugins: false",
					"plugin %s is rejected: %s", dir, diagText(res.Diagnostics))
			}
			g.plugins = append(g.plugins, ps)
			continue
		}
		ps.Name = res.Plugin.Manifest.Name
		g.loaded = append(g.loaded, res.Plugin)
		for _, d := range res.Diagnostics {
			log.Warn("gateway: plugin diagnostic", "plugin", ps.Name, "rule", string(d.Rule), "origin", d.Origin, "message", d.Message)
		}
		g.plugins = append(g.plugins, ps)
		for _, s := range toolset.PluginServers(res.Plugin) {
			s.AlwaysLoad = slices.Contains(cfg.Disclosure.AlwaysLoad, s.Config.Name) || slices.Contains(cfg.Disclosure.AlwaysLoad, ps.Name)
			servers = append(servers, s)
		}
	}
	for _, d := range cfg.InlineDiagnostics() { // each one's origin is its server's name
		log.Warn("gateway: server diagnostic", "server", d.Origin, "rule", string(d.Rule), "message", d.Message)
	}
	servers = append(servers, cfg.InlineServers()...)
	for _, s := range servers {
		g.servers = append(g.servers, s.Config.Name)
	}
	return servers, nil
}

func versionOr(v string) string {
	if v == "" {
		return "dev"
	}
	return v
}

func diagText(ds []diag.Diagnostic) string {
	parts := make([]string, 0, len(ds))
	for _, d := range ds {
		parts = append(parts, fmt.Sprintf("%s: %s (%s)", d.Origin, d.Message, d.Rule))
	}
	return strings.Join(parts, "; ")
}

// openStore opens a DSN, creating the store when there is none: the
// gateway is one of the few that create a store (with `gatehouse store
// init` and `gatehouse tools`); the operator's commands open only one that
// exists (store.Options.MustExist).
//
// from says where d came from (the config file, $GATEHOUSE_STORE, the
// --store flag): a DSN that does not parse is a ConfigError naming it.
func openStore(ctx context.Context, d, from string) (store.Store, error) {
	parsed, err := store.ParseDSN(d)
	if err != nil {
		e := &ConfigError{File: from, Msg: strings.TrimPrefix(err.Error(), "store: "),
			Fix: "write sqlite:PATH, postgres://USER@HOST/DB or memory: (docs/store.md)"}
		if from != "$GATEHOUSE_STORE" && from != "the --store flag" {
			e.Field = "store" // the config's store: field
		}
		return nil, e
	}
	// sqlite.Open makes a missing file (0600) and its folder (0700,
	// whatever the umask) when the folder's parent exists; a deeper
	// missing path is an error naming its first missing folder.
	st, err := dsn.Open(ctx, d, nil)
	if err != nil {
		return nil, fmt.Errorf("gateway: opening store %s: %w", parsed, err)
	}
	return st, nil
}

// setup readies one go-sdk server (the HTTP one at New, the local one,
// stdio's, when ServeStdio starts): the relay's middleware, the go-sdk
// front, the stable tools/list (search), and every served tool.
func (g *Gateway) setup(s *mcp.Server, local bool) {
	if g.served.search.On {
		// Inside the relay's middleware, which sees every request of a
		// session (the byte front relies on it).
		s.AddReceivingMiddleware(g.stableLists(local))
	}
	g.relay.Setup(s, local)
	// Outside the relay's middleware: skill: URIs and skills' prompts are
	// answered before any upstream could be asked.
	s.AddReceivingMiddleware(g.skills.Middleware(local))
	s.AddReceivingMiddleware(g.sdkFront(local))
	g.served.add(s, g.sdkHandler(local))
}

// Refresh re-reads the toolset's tool map and updates what every session
// sees (see the served map). The trust watcher calls it when the
// toolset's states change (a quarantine, a re-trust noticed in the store).
func (g *Gateway) Refresh(ctx context.Context) error { return g.served.refresh(ctx) }

// Tools returns the names of the served tools, sorted.
func (g *Gateway) Tools() []string { return g.served.names() }

// Store returns the gateway's store.
func (g *Gateway) Store() store.Store { return g.st }

// Toolset returns the gateway's toolset (the drift work hooks in here).
func (g *Gateway) Toolset() *toolset.Toolset { return g.ts }

// Close cancels calls still running, closes every session, the upstream
// servers (reaping stdio children) and the store the gateway opened. Call
// it after Serve or ServeStdio returned.
func (g *Gateway) Close() error {
	if g.life.closed.Swap(true) {
		return nil
	}
	g.life.calls.Close()
	g.life.stop()
	if g.trust != nil {
		g.trust.wait()
	}
	if g.life.stopSweep != nil {
		g.life.stopSweep()
	}
	var errs []error
	if g.srv != nil {
		errs = append(errs, g.srv.Close())
	}
	if g.relay != nil {
		errs = append(errs, g.relay.Close())
	}
	errs = append(errs, g.upauth.Close())
	errs = append(errs, g.audit.Close())                        // after the calls: their entries are queued
	errs = append(errs, g.trace.Shutdown(context.Background())) // their spans too, within tracing.ShutdownWait
	// After the calls: an OTLP reader exports them one last time.
	if g.tel != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = g.tel.Close(ctx) // a collector that is down loses the last interval, and fails no Close
		cancel()
	}
	if g.exec != nil {
		g.exec.Stop() // after the calls: the store says this incarnation is gone
	}
	if g.ownStore && g.st != nil {
		errs = append(errs, g.st.Close())
	}
	return errors.Join(errs...)
}

// startSweeper deletes expired journal records and expired counters (rate
// limit windows, call caps) every sweepEvery, and runs extra (the audit
// trail's retention), until ctx ends; stop waits for it.
func startSweeper(ctx context.Context, journal *durable.Journal, st store.CounterStore, now func() time.Time, log *slog.Logger, extra func(context.Context)) (stop func()) {
	stopJournal := journal.StartSweeper(ctx, sweepEvery)
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
			if n, err := st.SweepCounters(ctx, now()); err != nil {
				if ctx.Err() == nil {
					log.Error("gateway: sweeping counters failed", "err", err)
				}
			} else if n > 0 {
				log.Debug("gateway: swept expired counters", "count", n)
			}
			extra(ctx)
		}
	}()
	return func() { cancel(); <-done; stopJournal() }
}
