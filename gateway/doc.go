// Package gateway is `gatehouse serve`: it serves the tools of plugins' and
// configured MCP servers through one hardened MCP endpoint.
//
//	cfg, err := gateway.LoadConfig("gatehouse.yaml") // or ParseConfig(yamlBytes, file, dir)
//	g, err := gateway.New(ctx, cfg, nil)             // a *ConfigError names the field and the fix
//	defer g.Close()
//	ln, err := net.Listen("tcp", cfg.Listen)
//	err = g.Serve(ctx, ln) // until ctx ends, then shuts down gracefully; or g.Handler(), g.ServeStdio(ctx)
//
// New wires a few parts: the relay and its toolset (package gateway/internal/relay:
// the upstream servers, connected in parallel, and everything but
// tools/call forwarded per caller), the served map (which tools are served,
// and to whom: tools.allow/block and the scopes of bearer tokens, static
// ones checked against their SHA-256 in constant time, OAuth access tokens
// by identity/oauth with their own scopes carried per request; see
// package gateway/internal/bearer for the checks and the challenges, and
// oauth.go for the Protected Resource Metadata), the
// call pipeline, tool search (search.go: gatehouse__search_tools, answered
// by the pipeline with the tools the caller may see, and the stable
// tools/list of package gateway/internal/stablelist), the trust watcher,
// the instruments (metrics), the calls' traces (gateway/internal/tracing,
// off unless the OTEL_* environment asks; docs/observability.md) and the
// lifecycle (calls in flight, shutdown, sweeping).
//
// Every tools/call is decided by one function, (*pipeline).call in
// pipeline.go, in one order (docs/ARCHITECTURE.md lists it). Admission
// comes first: the caller's identity, its rate limit (per subject, counted
// in the store), then whether it may see the tool, through server.AdmitCall
// (the hardened server is built with server.Options.DeferCallAdmission: its
// middleware filters tools/list and leaves tools/call to the pipeline).
// Two fronts read calls: the go-sdk's server (a handler per served tool,
// and a middleware for names it has not registered) and the byte front,
// which reads the calls it is sure of from the HTTP request's bytes (on a
// session, front_http.go; at 2026-07-28, without one, front_latest.go). Two
// senders carry them, chosen per call: relay.CallTool through the go-sdk's
// client, and relay.CallBytes on a shared streamable HTTP session. Setting
// http.bytePath to false turns the byte front and sender off; the answers,
// effects and journal rows are the same either way.
//
// A tools/call with _meta.idempotencyKey is a unit of work (subject, tool,
// key) run through durable.Journal.Guarded: the guards (the firewall's
// per-run cap, tools.requireApproval) decide before anything is claimed,
// the journal claims before the upstream call, and the upstream gets a key
// derived from the unit of work, never the caller's. Approvals and records
// are read from the store on every call, so the admin commands act on a
// running gateway, and replicas sharing a PostgreSQL store share them.
//
// Drift: the toolset pins every server's tool contracts, prompts and
// resource templates in the store on first sight; a changed tool is
// quarantined (our description, calls refused `quarantined` before anything
// is journaled), an added one withheld, a removed one dropped, and the
// served map follows (tools/list_changed); a changed prompt or template is
// not listed and refused `quarantined` (plain resources are not pinned).
// The firewall's contract pinning reads the same pins. Every connected
// server is re-listed in the background (Config.Drift.Recheck, default 60s),
// so a silent change is caught while running; what any replica observes is
// recorded in the store and enforced by all. The trust watcher polls the
// store every second, so `gatehouse trust SERVER --listing FP` run by
// another process takes effect on a running gateway.
//
// Skills (skills.go, package gateway/internal/skillserve): the skills of
// the loaded plugins (a *skills.Catalog) are resources, the body at
// skill://PLUGIN/NAME/SKILL.md and each file at skill://PLUGIN/NAME/PATH,
// and prompts (PLUGIN__NAME, answering the body), listed beside the
// upstreams' and answered by the gateway, never forwarded (an upstream's
// skill: URIs and prompts under a skill's name are withheld). A token sees
// the skills its skill:NAME or skill:* scopes allow (absent scopes mean
// all, per kind as for tools; package gateway/internal/scopes); a hidden
// skill answers exactly as an unknown resource or prompt. SetSkills swaps
// the catalog atomically (trust withholds drifted skills through it) and
// announces list_changed.
//
// A server whose connection is lost is restarted on the first call after a
// backoff; meanwhile its tools answer `unavailable` (a unit of work already
// journaled is answered from the journal). Serve shuts down gracefully:
// calls in flight finish (or are cancelled after the config's
// shutdownTimeout and journaled in doubt) before sessions close. Metrics
// (Config.Metrics, ServeMetrics) are Prometheus text on a listener of their
// own. Config files are strict: an unknown field, a wrong type or an unsafe
// value is a *ConfigError naming the file, the field and the fix;
// docs/gateway.md documents every field and the wire behaviour.
package gateway
